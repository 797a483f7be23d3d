"""How far the campaign's pieces got and how fast they go: the resumable pieces' saved chunks and
kept parts, the measured rates per architecture and length, and the time estimates they give
the plan's paper-scale pieces."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

# the paper-scale records' folder and each one's study (RESULTS.md's renderer reads them too)
from experiments.campaign.plan import PaperScale, ROOT, STATE, SUMMARIES, pass_config, pass_flops


def _model_config(model: dict):
    from bornbiased_jax.config_io import from_record

    return from_record(model)


def state_chunks(state_file: Path) -> list[tuple[int, float]]:
    """(model FLOPs, compute seconds) of each finished chunk of the resumable state saved in
    ``state_file`` (a ``state.json``): the chunk's seeds x sequences x
    ``flops.forward_flops`` of its model at its length, the LM head at the last position.
    Empty for a state that has no chunk plan yet; seconds are 0 for a chunk saved without."""
    from bornbiased_jax.flops import forward_flops

    st = json.loads(Path(state_file).read_text())
    ident, plan = st["identity"], st.get("plan")
    if plan is None:
        return []
    cfg = _model_config(ident["model"])
    N, T = ident["inputs"]["shape"][:2]
    S = len(ident.get("seeds", [0]))
    per_seq = forward_flops(cfg, T, last_only=True)
    out = []
    for name in st["done"]:
        s0, n0 = (int(x[1:]) for x in name[len("chunk-"):-len(".npz")].split("-"))
        out.append((min(plan["seed_chunk"], S - s0) * min(plan["seq_chunk"], N - n0) * per_seq,
                    st.get("seconds", {}).get(name, 0.0)))
    return out


def state_progress(folder: Path, *, skip=lambda d: False) -> dict:
    """What the resumable states under ``folder`` hold: model FLOPs and compute seconds of
    their finished chunks (:func:`state_chunks`). A state whose folder ``skip`` names is
    left out."""
    chunks = [c for f in sorted(Path(folder).glob("**/state.json")) if not skip(f.parent)
              for c in state_chunks(f)]
    return {"flops": sum(fl for fl, _ in chunks), "seconds": sum(s for _, s in chunks)}


def kept_parts(folder: Path) -> list[tuple]:
    """(model config, sequence length, library version, model FLOPs, compute seconds) of each
    finished part kept under ``folder`` (the ``<part>.json`` files of ``paper_pieces._kept``:
    the part's seeds x sequences x ``flops.forward_flops`` of its model at its length, the
    version it was computed under and its saved seconds)."""
    from bornbiased_jax.flops import forward_flops

    out = []
    for f in sorted(Path(folder).glob("**/*.json")):
        saved = json.loads(f.read_text())
        ident = saved.get("identity") if isinstance(saved, dict) else None
        if not isinstance(ident, dict) or "result" not in saved or "model" not in ident:
            continue
        N = ident.get("num_seqs", ident.get("n"))
        cfg = _model_config(ident["model"])
        out.append((cfg, ident["seq_len"], _code_version(saved.get("versions")),
                    len(ident["seeds"]) * N
                    * forward_flops(cfg, ident["seq_len"], last_only=True), saved["seconds"]))
    return out


def kept_progress(folder: Path) -> dict:
    """Model FLOPs and compute seconds of the finished parts kept under ``folder``
    (:func:`kept_parts`)."""
    parts = kept_parts(folder)
    return {"flops": sum(p[3] for p in parts), "seconds": sum(p[4] for p in parts)}


def _code_version(versions) -> str | None:
    """The bornbiased_jax version a saved state or kept part was computed under (a state keeps
    the list of every attempt's versions, a kept part one dict); None when a state was resumed
    across versions (its chunks do not say which version computed each) or says nothing."""
    if isinstance(versions, dict):
        versions = [versions]
    found = {v.get("bornbiased_jax") for v in versions or []}
    return found.pop() if len(found) == 1 else None


def architecture(cfg):
    """``cfg`` less what only sets the initial values (name, init scales, embedding sharing):
    what a forward pass computes, and so its speed. Table 4a's ``llama2-nano-gpt2init`` and
    ``llama2-nano-hfinit`` share the ``llama2-nano`` preset's architecture."""
    return dataclasses.replace(cfg, name="", init_std=0.02, scale_residual_init=False,
                               shared_embedding=False, embed_seed=0)


def rates_by_length(root: Path = ROOT) -> dict:
    """FLOP/s achieved by every saved chunk and kept part under ``root``'s state and summaries
    folders, keyed (model architecture (:func:`architecture`), sequence length) and sequence
    length alone (every model at that length pooled), and both again with the library
    version that computed them ((architecture, T, version) and (None, T, version)): a code
    change (blockwise attention at T > 64 in 0.2.0) changes the speed. A block's seconds are
    wall time: a busy machine lowers the rate."""
    acc: dict = {}

    def add(cfg, T: int, version, fl: int, sec: float) -> None:
        if sec > 0:
            arch = architecture(cfg)
            for key in ((arch, T), T, (arch, T, version), (None, T, version)):
                a = acc.setdefault(key, [0, 0.0])
                a[0] += fl
                a[1] += sec

    for folder in (Path(root) / STATE, Path(root) / SUMMARIES):
        for f in sorted(folder.glob("**/state.json")):
            st = json.loads(f.read_text())
            ident, version = st["identity"], _code_version(st.get("versions"))
            for fl, sec in state_chunks(f):
                add(_model_config(ident["model"]), ident["inputs"]["shape"][1], version, fl,
                    sec)
        for cfg, T, version, fl, sec in kept_parts(folder):
            add(cfg, T, version, fl, sec)
    return {k: fl / sec for k, (fl, sec) in acc.items()}


def _rate_key(one_pass: tuple, rates: dict):
    """The key of ``rates`` a pass is estimated at: its model at its length under this
    library version, else under any version, else any model at its length under this
    version, else under any; None (the overall rate) when its length has no chunk at all."""
    from bornbiased_jax import __version__

    arch, T = architecture(pass_config(one_pass)), one_pass[2]
    return next((k for k in ((arch, T, __version__), (arch, T), (None, T, __version__), T)
                 if k in rates), None)


def _pass_rate(one_pass: tuple, rates: dict, overall: float) -> float:
    """The rate measured for this pass (:func:`_rate_key`), else ``overall``."""
    key = _rate_key(one_pass, rates)
    return overall if key is None else rates[key]


def paper_scale_seconds(spec: "PaperScale", rates: dict, overall: float) -> float:
    """A piece's estimated compute seconds: each pass's FLOPs at the rate measured for its
    model at its length under this library version (:func:`rates_by_length`), else at its
    length under this version, else the same under any version, else ``overall``."""
    return sum(pass_flops(p) / _pass_rate(p, rates, overall) for p in spec.passes)


def piece_progress(root: Path, piece: str = "") -> dict:
    """A piece's (or every piece's) progress: its scratch states' chunks (less those of parts
    already kept), its committed per-block sums and its kept parts, together."""
    state, kept = Path(root) / STATE / piece, Path(root) / SUMMARIES / piece

    def is_kept(d: Path) -> bool:  # a part's state may sit below its folder (group-0/)
        rel = d.relative_to(state)
        return any(Path(f"{kept / a}.json").exists() for a in (rel, *rel.parents)
                   if a != Path("."))

    parts = (state_progress(state, skip=is_kept), state_progress(kept), kept_progress(kept))
    return {k: sum(p[k] for p in parts) for k in parts[0]}


def measured_rate(root: Path = ROOT) -> float | None:
    """FLOP/s the resumable pieces have achieved so far on this campaign's machine(s), from
    their saved chunks; None before any chunk."""
    prog = piece_progress(Path(root))
    return prog["flops"] / prog["seconds"] if prog["seconds"] > 0 else None


def rates_text(spec: PaperScale, rates: dict, overall: float) -> str:
    """'220 GFLOP/s (llama2-nano, T = 64), ...': the rate each pass's estimate uses and what
    it was measured on."""
    out = []
    for p in dict.fromkeys((p[0], p[1], p[2], 0) for p in spec.passes):
        name, T = pass_config(p).name, p[2]
        key = _rate_key(p, rates)
        if key is None:
            what = f"{name}, T = {T:,}: no chunk yet, the overall rate"
        elif key == T:
            what = f"T = {T:,}, other models, other versions"
        else:
            what = (f"{name}, T = {T:,}" if key[0] is not None else f"T = {T:,}, other models") + (
                "" if len(key) == 3 else ", other versions")
        out.append(f"{_pass_rate(p, rates, overall) / 1e9:.0f} GFLOP/s ({what})")
    return ", ".join(dict.fromkeys(out))


def hours_text(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"
