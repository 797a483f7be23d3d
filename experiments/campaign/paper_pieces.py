"""The paper-scale pieces of Sec. 3-4 (``python -m experiments.paper_scale``'s work): each
piece's forward passes, resumable from a state folder, with what survives a new machine kept in
a committed summaries folder (per-block sums for Table 1's passes, ``bornbiased_jax.blockwise``;
finished parts' results for table2 and table4a, :func:`_kept`), and the records they write.
``experiments/paper_scale.py`` documents the pieces and is their command line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bornbiased_jax.config_io import config_record
from experiments.campaign import plan as campaign
from experiments.common.paper_records import save, shape  # noqa: F401  (paper_scale.py saves)

STATE = campaign.ROOT / campaign.STATE
SUMMARIES = campaign.ROOT / campaign.SUMMARIES
RECORDS = campaign.RECORDS
PAIRS_4A = [(42, 2000), (123, 42), (1000, 123), (2000, 1000)]
SEEDS_4A = [42, 123, 1000, 2000]


SPECS = campaign.PAPER_SCALE
N_SEQS = campaign.PAPER_N


def probe_identity(probe: str) -> dict:
    """What fixes a pass's numbers besides its model and inputs: the probe, its seed and, where
    matrix products are not full float32 (TF32 or a multi-pass dot algorithm on a GPU), the
    precision (``resume.precision_identity``, which the engines also add), so that chunks
    computed at one precision are never resumed at another. Full float32 (every setting on a
    CPU, "highest" anywhere) adds nothing, so states written on a CPU and resumed on a GPU in
    full float32 keep their identity."""
    from bornbiased_jax import resume

    return {"probe": probe, "probe_seed": 0, **resume.precision_identity()}


# ------------------------------------------------------------------------------- the pieces
def _profile(cfg, seeds, kind: str, T: int, state: Path, budget_gb: float | None = None):
    """The last-token probe (per-block states, final normed state, arg-max token) of ``seeds``
    on the N = 2,000 probe set of ``kind`` at length T, resumable in ``state``."""
    from bornbiased_jax.probes.contraction import inter_sequence_profile
    from bornbiased_jax.probes.inputs import probe_inputs

    xs = probe_inputs(kind, cfg, N_SEQS, T)
    budget = int(budget_gb * 2**30) if budget_gb else None
    return inter_sequence_profile(cfg, seeds, xs, progress=True, memory_budget=budget,
                                  desc=f"{cfg.name} {kind} T={T}", state=state,
                                  state_identity=probe_identity("last_token"),
                                  allow_version_change=ALLOW_VERSIONS)


BLOCK = 250  # sequences per saved block of a summarised pass (8 blocks of N = 2,000)


def _summarised_parts(cfg, seeds, kind: str, T: int, state: Path,
                      budget_gb: float | None = None, n: int = N_SEQS) -> list:
    """The last-token probe of ``seeds`` on the first ``n`` (N = 2,000 unless given) sequences
    of the probe set of ``kind`` at length T (in 8 blocks, or blocks of ``BLOCK`` if more;
    N must split into equal ones, as the jackknife of ``block_mean_loo`` assumes), kept as
    per-block sums (``probes.contraction.last_token_sums``: the arg-max tokens and the
    sums of unit last-token states, a few hundred kB a block) in ``state``, a folder that is
    committed as it grows, so the pass resumes on any machine from its last block (on another
    platform than the one it began on with --resume-across-versions, which the campaign
    passes: ``blockwise_sweep``). Returns the blocks' summaries, in order."""
    from bornbiased_jax.blockwise import blockwise_sweep
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.probes.contraction import last_token_probe, last_token_sums
    from bornbiased_jax.probes.inputs import probe_inputs

    block = max(BLOCK, n // 8)
    if n % block or n // block < 2:  # the delete-one-block jackknife needs >= 2 equal blocks
        raise UserError(f"{n:,} sequences do not split into two or more equal blocks of "
                        f"{block:,} (max({BLOCK}, N // 8)), as the leave-one-block-out standard "
                        f"errors need: use N a multiple of {BLOCK} from {2 * BLOCK} to "
                        f"{8 * BLOCK:,}, or a multiple of 8 above")
    xs = probe_inputs(kind, cfg, n, T)
    budget = int(budget_gb * 2**30) if budget_gb else None
    return blockwise_sweep(last_token_probe(cfg), cfg, seeds, xs, summarise=last_token_sums,
                           block=block, state=state, progress=True, memory_budget=budget,
                           desc=f"{cfg.name} {kind} T={T}",
                           state_identity=probe_identity("last_token_sums"),
                           allow_version_change=ALLOW_VERSIONS)


def _summarised(cfg, seeds, kind: str, T: int, state: Path, budget_gb: float | None = None,
                n: int = N_SEQS):
    """:func:`_summarised_parts`, aggregated: ``top`` (S, N), ``block_mean`` (S, L+1) mean
    pairwise cosines per block, ``block_mean_loo`` (B, S, L+1) the same leaving out each saved
    block of sequences in turn (a jackknife's inputs) and ``direction`` (S, d), Finding 2.2's
    mean unit final state."""
    import numpy as np

    from bornbiased_jax.probes.contraction import (mean_similarity_from_sums,
                                                   mean_similarity_leave_one_out)

    parts = _summarised_parts(cfg, seeds, kind, T, state, budget_gb, n)
    n = sum(int(p["n"]) for p in parts)
    blocks = sum(p["unit_blocks"] for p in parts)
    normed = sum(p["unit_normed"] for p in parts)
    return {"top": np.concatenate([p["top"] for p in parts], axis=1),
            "block_mean": mean_similarity_from_sums(blocks, n),
            "block_mean_loo": mean_similarity_leave_one_out([p["unit_blocks"] for p in parts],
                                                            [p["n"] for p in parts]),
            "direction": normed / n}


def _kept(folder: Path, part: str, identity: dict, compute):
    """``compute()``'s result for one finished part of a piece, kept in ``folder/part.json``
    (committed, like the per-block sums) with ``identity`` (what fixes its inputs and model),
    the library versions and its compute seconds (``compute`` returns (result, seconds)).
    A part already kept is read instead of computed; one kept for another identity, or under
    other versions without --resume-across-versions, is refused naming the difference. Returns
    (result, seconds) as read back from the file, the same for a resumed and a fresh run."""
    import json

    from bornbiased_jax import files
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.resume import versions
    from experiments.artifacts import plain

    f = Path(folder) / f"{part}.json"
    identity = plain(identity)
    if not f.exists():
        result, seconds = compute()
        files.write_json(f, {"identity": identity, "versions": versions(),
                             "seconds": seconds, "result": plain(result)})
    saved = json.loads(f.read_text())
    diff = sorted(k for k in set(identity) | set(saved["identity"])
                  if identity.get(k) != saved["identity"].get(k))
    if diff:
        raise UserError(f"{f} was kept for another setting (differs in {diff}); move it away "
                        f"to compute this part again")
    if saved["versions"] != versions() and not ALLOW_VERSIONS:
        raise UserError(f"{f} was kept under other versions ({saved['versions']} vs "
                        f"{versions()}); pass --resume-across-versions to use it")
    return saved["result"], saved["seconds"]


def _seconds(*folders: Path) -> float:
    """Compute seconds saved in the state folders (every attempt's chunks): a sweep keeps its
    state.json in the folder itself, the SeedPrint feature pass one per seed group in
    ``group-*/``."""
    import json

    total = 0.0
    for f in folders:
        for st in [Path(f) / "state.json", *sorted(Path(f).glob("group-*/state.json"))]:
            if st.exists():
                total += sum(json.loads(st.read_text()).get("seconds", {}).values())
    return round(total, 1)


def _platforms(folders) -> dict:
    """``{"blocks_platforms": [...]}``: the platforms that added blocks to the blockwise states
    in ``folders`` (a pass may begin on a CPU and end on a GPU), or {} when none is one."""
    from bornbiased_jax.blockwise import blockwise_state

    seen = []
    for f in folders:
        saved = blockwise_state(f)
        if saved is not None:
            for d in saved.get("devices_used") or [saved["identity"]["devices"]]:
                seen.append(d["platform"])
    return {"blocks_platforms": list(dict.fromkeys(seen))} if seen else {}


def run_table1(name: str, preset: str, seq_lens, state: Path, summaries: Path,
               budget_gb=None, num_seqs: int = N_SEQS) -> dict:
    """Table 1 rows of ``preset`` (seeds 42, 43) on ``num_seqs`` sequences; for table1a also
    Figure 1a and Figure 2.

    Every pass is kept as committed per-block sums in ``summaries`` except table1a's T = 64
    one, whose seed-42 last-block states Figure 1a's similarity (its sd and z) needs whole; it
    is a few minutes' work, resumable from ``state`` while that folder lasts."""
    import numpy as np

    from bornbiased_jax import model
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.contraction import direction_top_token
    from bornbiased_jax.probes.token_preference import summarize
    from experiments.initialisation.claims import favourite_stats, match_summary

    cfg, seeds = get_preset(preset), [42, 43]
    recs, out, profiles = [], {}, {}
    whole = {min(seq_lens)} if name == "table1a" else set()
    folders = [(state if T in whole else summaries) / f"T{T}" for T in seq_lens]
    for T, folder in zip(seq_lens, folders):
        prof = profiles[T] = (_profile(cfg, seeds, "tokens", T, folder, budget_gb)
                              if T in whole else
                              _summarised(cfg, seeds, "tokens", T, folder, budget_gb,
                                          n=num_seqs))
        for i, s in enumerate(seeds):
            recs.append(summarize(prof["top"][i], cfg.vocab_size, preset=cfg.name, seed=s,
                                  seq_len=T, input="tokens"))
    settings = {**shape(cfg), "seeds": seeds, "seq_lens": list(seq_lens),
                "num_seqs": num_seqs, "input": "tokens", "probe_seed": 0}
    settings.update(_platforms(folders))
    out[name] = (settings, recs, _seconds(*folders))
    if name == "table1a":
        t1, t2 = min(seq_lens), max(seq_lens)  # Figure 1a: T = 64; Figure 2: T = 1,024
        rec = next(r for r in recs if r.seed == 42 and r.seq_len == t1)
        sim = profiles[t1]["blocks"][0][-1]  # the last block's last-token states, seed 42
        out["figure1"] = ({**shape(cfg), "seed": 42, "seq_len": t1, "num_seqs": N_SEQS},
                          {"token_preference": rec, "similarity": sim._asdict()},
                          _seconds(folders[0]))
        prof = profiles[t2]
        emb = model.init_embeddings(cfg, model.embed_key(cfg, None))
        W_U = np.asarray(model.unembedding(emb, cfg))
        rows = []
        for i, s in enumerate(seeds):
            d_top = direction_top_token(prof["direction"][i], W_U)
            rows.append({"seed": s, **favourite_stats(prof["top"][i], cfg.vocab_size, d_top),
                         "block_mean_cos": [float(m) for m in prof["block_mean"][i]],
                         "block_mean_cos_loo": prof["block_mean_loo"][:, i].tolist()})
        out["figure2_finding22"] = (
            {**shape(cfg), "seeds": seeds, "seq_len": t2, "num_seqs": N_SEQS},
            {"per_seed": rows, "summary": match_summary(rows)}, _seconds(folders[-1]))
    return out


def run_table2(state: Path, summaries: Path) -> dict:
    """Table 2, Figure 3 and Figure 7 from one pass per block type, each kept in
    ``summaries`` as soon as it is finished."""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.token_preference import summarize

    base = get_preset("gpt2-rope-nano")
    modes = {"full model": "attn_mlp", "self-attention-only": "attn_only",
             "MLP-only": "mlp_only"}
    labels7 = {"full model": "full", "self-attention-only": "attention-only",
               "MLP-only": "MLP-only"}
    rows, rows7, secs = [], {}, 0.0
    for label, block in modes.items():
        cfg = base.ablate(block=block)

        def compute(cfg=cfg, folder=state / block, label=label):
            prof = _profile(cfg, [42], "gaussian", 1024, folder)
            sim = prof["final"][0]
            pref = summarize(prof["top"][0], cfg.vocab_size, preset=cfg.name, seed=42,
                             seq_len=1024, input="gaussian")
            row = {"mode": label, "avg_sim": sim.mean, "log10_p": sim.log10_p, "z": sim.z,
                   "top1_freq": pref.top1_freq, "top1_log10_p": pref.log10_p,
                   "top_counts": pref.top_counts}
            blocks = [{"block": i, "mean": b.mean, "sd": b.sd, "log10_p": b.log10_p}
                      for i, b in enumerate(prof["blocks"][0])]
            return {"row": row, "figure7": blocks}, _seconds(folder)

        identity = {"model": config_record(cfg), "seeds": [42], "input": "gaussian",
                    "seq_len": 1024, "num_seqs": N_SEQS, **probe_identity("last_token")}
        part, seconds = _kept(summaries, block, identity, compute)
        rows.append(part["row"])
        rows7[labels7[label]] = part["figure7"]
        secs += seconds
    settings = {**shape(base), "seed": 42, "seq_len": 1024, "num_seqs": N_SEQS,
                "input": "gaussian"}
    secs = round(secs, 1)
    return {"table2_figure3": (settings, rows, secs), "figure7": (settings, rows7, secs)}


def run_table4a(state: Path, summaries: Path) -> dict:
    """Table 4a at the nano shape: the paper's, the released code's and the permutation test
    on the four unrelated pairs, for each init and input kind (each kept in ``summaries`` as
    soon as its four models' features are done)."""
    from experiments.seedprint.pools import nano_model

    records, secs = [], 0.0
    for scaled in (True, False):
        cfg = nano_model(scaled)
        for kind in ("tokens", "gaussian"):
            name = f"{cfg.name}-{kind}"
            identity = {"model": config_record(cfg), "seeds": SEEDS_4A,
                        "pairs": [list(p) for p in PAIRS_4A], "input": kind, "seq_len": 256,
                        "n": N_SEQS, **probe_identity("features/normed")}
            part, seconds = _kept(summaries, name, identity,
                                  lambda cfg=cfg, kind=kind, folder=state / name:
                                  _table4a_part(cfg, kind, folder))
            records += part
            secs += seconds
    cfg = nano_model(True)
    settings = {**shape(cfg), "seeds": SEEDS_4A, "pairs": [list(p) for p in PAIRS_4A],
                "n": N_SEQS, "seq_len": 256, "inputs": ["tokens", "gaussian"],
                "inits": ["gpt2init (App. B.1)", "hfinit (released code)"],
                "shared_embedding": cfg.shared_embedding}
    return {"table4a": (settings, records, round(secs, 1))}


def run_table4a_n10k(state: Path, summaries: Path) -> dict:
    """Table 4a's HF-init, Gaussian-input rows again at n = 10,000 inputs (T = 256, the same
    four unrelated pairs): the paper's test rejects more unrelated pairs as n grows if its
    Gaussian-input null is miscalibrated for these models, and this row measures whether it
    does. Kept in ``summaries`` once the four models' features are done."""
    from experiments.seedprint.pools import nano_model

    cfg, kind, n = nano_model(False), "gaussian", campaign.PAPER_N_LLAMA
    name = f"{cfg.name}-{kind}-n{n}"
    identity = {"model": config_record(cfg), "seeds": SEEDS_4A,
                "pairs": [list(p) for p in PAIRS_4A], "input": kind, "seq_len": 256,
                "n": n, **probe_identity("features/normed")}
    records, secs = _kept(summaries, name, identity,
                          lambda: _table4a_part(cfg, kind, state / name, n))
    settings = {**shape(cfg), "seeds": SEEDS_4A, "pairs": [list(p) for p in PAIRS_4A],
                "n": n, "seq_len": 256, "inputs": [kind], "inits": ["hfinit (released code)"],
                "shared_embedding": cfg.shared_embedding}
    return {"table4a_n10k": (settings, records, round(secs, 1))}


def _table4a_part(cfg, kind: str, folder: Path, n: int = N_SEQS):
    """Table 4a's rows of one init and input kind on ``n`` inputs, and the compute seconds of
    its features."""
    import numpy as np

    from bornbiased_jax.fingerprint.methods.algorithm1 import paper_test
    from bornbiased_jax.fingerprint.runner.features import init_features
    from bornbiased_jax.fingerprint.methods.official import official_test
    from bornbiased_jax.fingerprint.methods.permutation import permutation_test
    from bornbiased_jax.probes.inputs import probe_inputs

    records = []
    xs = probe_inputs(kind, cfg, n, 256)
    F = dict(init_features(cfg, SEEDS_4A, xs, group=len(SEEDS_4A), progress=True,
                           state=folder,
                           state_identity=probe_identity("features/normed"),
                           allow_version_change=ALLOW_VERSIONS))
    for a, b in PAIRS_4A:
        p = paper_test(F[a], F[b], rng=np.random.default_rng(0))
        o = official_test(F[a], F[b])
        r = {"model": cfg.name, "input": kind, "pair": f"s{a} vs s{b}",
             **{f"paper/{k}": v for k, v in p.p_values.items()},
             "paper/S": p.n_dims, "paper/mean_tau": p.statistic,
             "official/two_phi_bar": o.p, "official/S": o.n_dims,
             "official/mean_tau": o.statistic}
        if kind == "tokens":  # the permutation test refuses Gaussian inputs
            pt = permutation_test(F[a], F[b])
            r["permutation/exact"] = pt.p
            r["permutation/z"] = pt.details["z"]
        records.append(r)
    return records, _seconds(folder)


def run_table1a_seeds(state: Path, summaries: Path) -> dict:
    """Table 1(a)'s top-1 frequency over 20 more nano seeds at T = 64 (N = 2,000, the same
    probe sequences), kept as per-block sums: the spread between networks that two seeds per
    model cannot show, against which the paper's and our seeds 42 and 43 are compared. Each
    seed draws its own embedding and LM head (``shared_embedding`` off): the paper's networks
    and ours differ in that draw too, so the spread must include it."""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.token_preference import summarize

    cfg = dataclasses.replace(get_preset("gpt2-rope-nano"), shared_embedding=False)
    seeds, T = list(campaign.SPREAD_SEEDS), 64
    folder = summaries / f"T{T}"
    prof = _summarised(cfg, seeds, "tokens", T, folder)
    recs = [summarize(prof["top"][i], cfg.vocab_size, preset=cfg.name, seed=s, seq_len=T,
                      input="tokens") for i, s in enumerate(seeds)]
    settings = {**shape(cfg), "seeds": seeds, "seq_len": T, "num_seqs": N_SEQS,
                "input": "tokens", "probe_seed": 0, "shared_embedding": False}
    return {"table1a_seeds": (settings, recs, _seconds(folder))}


FIGURE10_N, FIGURE10_BLOCK = campaign.PAPER_N_LLAMA, 1250  # 8 blocks


def figure10_sums(out: dict) -> dict:
    """A block's last-token probe outputs as what Figure 10 needs of them: each sequence's
    predicted token ``top`` (S, n) and the hidden dimension holding the maximum of its
    final-layer last-token state ``maxdim`` (S, n)."""
    import numpy as np

    return {"top": np.asarray(out["top"]),
            "maxdim": np.argmax(np.asarray(out["hidden"])[:, :, -1], axis=-1)}


def _figure10_pass():
    """(cfg, T, inputs, state identity) of Figure 10's paper-shape pass."""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.inputs import probe_inputs

    cfg, T = get_preset("gpt2-rope-nano"), 1024
    return cfg, T, probe_inputs("tokens", cfg, FIGURE10_N, T), probe_identity("figure10_counts")


def _figure10_record(cfg, T: int, parts: list, n: int, saved: dict | None) -> tuple[dict, dict]:
    """(settings, rows) of Figure 10's record from the blocks ``parts`` (the first ``n``
    sequences) of the saved state ``saved`` (where they were computed: ``block_provenance``);
    settings name the pass's full N as ``target_num_seqs`` when ``n`` is less."""
    import numpy as np

    from bornbiased_jax.blockwise import block_provenance
    from experiments.initialisation.figure10 import figure10_rows

    top = np.concatenate([p["top"] for p in parts], axis=1)[0]
    maxdim = np.concatenate([p["maxdim"] for p in parts], axis=1)[0]
    rows = figure10_rows(top, maxdim, cfg.vocab_size, cfg.d_model)
    settings = {**shape(cfg), "seed": 42, "seq_len": T, "num_seqs": n, "input": "tokens",
                "probe_seed": 0}
    if n < FIGURE10_N:
        settings.update(target_num_seqs=FIGURE10_N, blocks_finished=len(parts))
    if saved is not None:
        settings.update(block_provenance(saved, len(parts)))
    return settings, rows


def run_figure10(state: Path, summaries: Path) -> dict:
    """Figure 10 at the paper's shape (GPT-2+RoPE nano, seed 42, T = 1,024, N = 10,000), kept
    as per-block predicted tokens and max dimensions in ``summaries`` (a few kB a block of
    1,250 sequences), so the pass resumes from its last committed block (on other devices
    with --resume-across-versions: ``blockwise_sweep``)."""
    from bornbiased_jax.blockwise import blockwise_state, blockwise_sweep
    from bornbiased_jax.probes.contraction import last_token_probe

    cfg, T, xs, identity = _figure10_pass()
    folder = summaries / f"T{T}"
    parts = blockwise_sweep(last_token_probe(cfg), cfg, [42], xs, summarise=figure10_sums,
                            block=FIGURE10_BLOCK, state=folder, progress=True,
                            desc=f"{cfg.name} tokens T={T}", state_identity=identity,
                            allow_version_change=ALLOW_VERSIONS)
    settings, rows = _figure10_record(cfg, T, parts, FIGURE10_N, blockwise_state(folder))
    return {"figure10": (settings, rows, _seconds(folder))}


def figure10_so_far(state: Path, summaries: Path) -> dict:
    """Figure 10's record from the blocks finished so far, computing nothing (a running pass
    may go on adding blocks): the same rows at the N finished, with the pass's full N beside
    it, and the compute seconds of those blocks. A UserError before the first block."""
    from bornbiased_jax.blockwise import blockwise_finished
    from bornbiased_jax.errors import UserError

    cfg, T, xs, identity = _figure10_pass()
    folder = summaries / f"T{T}"
    parts, n, saved = blockwise_finished(cfg, [42], xs, block=FIGURE10_BLOCK, state=folder,
                                         state_identity=identity)
    if not parts:
        raise UserError(f"no block of Figure 10's pass is finished in {folder} yet")
    settings, rows = _figure10_record(cfg, T, parts, n, saved)
    return {"figure10": (settings, rows, settings["blocks_seconds"])}


# Gemma 3's birth bias at the LLaMA-2 protocol of Table 1(b) (N = 10,000, T = 64): a fresh
# gemma3-270m and three ablations of it, each with seeds 0, 1, 2 and the shared embedding.
GEMMA3_ARMS = {"gemma3-270m": {}, "no-qk-norm": {"qk_norm": False},
               "no-post-norms": {"post_norms": False}, "no-embed-scale": {"embed_scale": False}}
GEMMA3_SEEDS, GEMMA3_T = [0, 1, 2], 64


def _gemma3_arm(arm: str):
    from bornbiased_jax.presets import get_preset

    changes = GEMMA3_ARMS[arm]
    base = get_preset("gemma3-270m")
    return base.ablate(**changes) if changes else base


def _gemma3_rows(cfg, parts: list) -> list[dict]:
    """Per seed: Table 1's statistic of the arg-max tokens of the blocks ``parts`` and Figure 2's
    mean pairwise cosine of the last-token states per block (0 = embeddings), with its
    leave-one-block-out values."""
    import numpy as np

    from bornbiased_jax.probes.contraction import (mean_similarity_from_sums,
                                                   mean_similarity_leave_one_out)
    from bornbiased_jax.probes.token_preference import summarize

    top = np.concatenate([p["top"] for p in parts], axis=1)
    n = sum(int(p["n"]) for p in parts)
    cos = mean_similarity_from_sums(sum(p["unit_blocks"] for p in parts), n)
    loo = (mean_similarity_leave_one_out([p["unit_blocks"] for p in parts],
                                         [p["n"] for p in parts]) if len(parts) > 1 else None)
    rows = []
    for i, seed in enumerate(GEMMA3_SEEDS):
        pref = summarize(top[i], cfg.vocab_size, preset=cfg.name, seed=seed, seq_len=GEMMA3_T,
                         input="tokens")
        rows.append({"seed": seed, "top1_id": pref.top1_id, "top1_count": pref.top1_count,
                     "top1_freq": pref.top1_freq, "log10_p": pref.log10_p,
                     "distinct_tokens": pref.distinct_tokens,
                     "block_mean_cos": [float(c) for c in cos[i]],
                     "block_mean_cos_loo": None if loo is None else loo[:, i].tolist()})
    return rows


def _gemma3_record(arms: dict, n_target: int) -> dict:
    """The record of ``arms`` ({arm: (cfg, parts, n, saved state)}): settings name N per arm
    and, where an arm is unfinished, the pass's full N."""
    from bornbiased_jax.blockwise import block_provenance

    body, secs = {}, 0.0
    for arm, (cfg, parts, n, saved) in arms.items():
        prov = block_provenance(saved, len(parts)) if saved is not None else {}
        secs += prov.get("blocks_seconds", 0.0)
        body[arm] = {"changes": GEMMA3_ARMS[arm], "num_seqs": n, "blocks": len(parts),
                     "per_seed": _gemma3_rows(cfg, parts) if parts else [], **prov}
    first = next(iter(arms.values()))[0]
    settings = {**shape(first), "preset": "gemma3-270m", "seeds": GEMMA3_SEEDS,
                "seq_len": GEMMA3_T, "num_seqs": min(a[2] for a in arms.values()),
                "input": "tokens", "probe_seed": 0, "shared_embedding": True,
                "block": GEMMA3_N // 8, "arms": list(GEMMA3_ARMS)}
    if settings["num_seqs"] < n_target:
        settings["target_num_seqs"] = n_target
    return {"gemma3_init_n10k": (settings, body, round(secs, 1))}


GEMMA3_N = campaign.PAPER_N_LLAMA


def run_gemma3_init(state: Path, summaries: Path) -> dict:
    """Table 1(b)'s protocol on fresh gemma3-270m networks: each arm of :data:`GEMMA3_ARMS`,
    seeds 0-2, N = 10,000 random token sequences of T = 64, kept as per-block sums in
    ``summaries/<arm>/`` (8 blocks of 1,250 sequences, committed as they come), one arm after
    the other."""
    from bornbiased_jax.blockwise import blockwise_state

    arms = {}
    for arm in GEMMA3_ARMS:
        cfg = _gemma3_arm(arm)
        folder = summaries / arm
        parts = _summarised_parts(cfg, GEMMA3_SEEDS, "tokens", GEMMA3_T, folder, n=GEMMA3_N)
        arms[arm] = (cfg, parts, GEMMA3_N, blockwise_state(folder))
    return _gemma3_record(arms, GEMMA3_N)


def gemma3_init_so_far(state: Path, summaries: Path) -> dict:
    """The Gemma 3 record from the blocks finished so far in every arm, computing nothing."""
    from bornbiased_jax.blockwise import blockwise_finished
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.probes.inputs import probe_inputs

    arms = {}
    for arm in GEMMA3_ARMS:
        cfg = _gemma3_arm(arm)
        xs = probe_inputs("tokens", cfg, GEMMA3_N, GEMMA3_T)
        try:
            parts, n, saved = blockwise_finished(
                cfg, GEMMA3_SEEDS, xs, block=GEMMA3_N // 8, state=summaries / arm,
                state_identity=probe_identity("last_token_sums"))
        except UserError:
            parts, n, saved = [], 0, None
        arms[arm] = (cfg, parts, n, saved)
    if not any(a[1] for a in arms.values()):
        raise UserError(f"no block of the Gemma 3 passes is finished in {summaries} yet")
    return _gemma3_record(arms, GEMMA3_N)


# Pieces whose record can be written from the blocks finished so far (``--so-far``): one
# model, one length, a rule judged at whatever N is there.
SO_FAR = {"figure10": figure10_so_far, "gemma3-init-n10k": gemma3_init_so_far}


RUNNERS = {
    "table1a": lambda st, su: run_table1("table1a", "gpt2-rope-nano", (64, 256, 1024), st, su),
    "table1b": lambda st, su: run_table1("table1b", "llama2-nano", (64, 256, 1024), st, su),
    "table1b-n10k": lambda st, su: run_table1("table1b_n10k", "llama2-nano", (64, 256), st, su,
                                              num_seqs=campaign.PAPER_N_LLAMA),
    "table2": run_table2,
    "table4a": run_table4a,
    "table1c": lambda st, su: run_table1("table1c", "gpt2-rope-1.2b", (64,), st, su,
                                         SPECS["table1c"].memory_budget_gb),
    "table1a-seeds": run_table1a_seeds,
    "table1c-t256": lambda st, su: run_table1("table1c_t256", "gpt2-rope-1.2b", (256,), st, su,
                                              SPECS["table1c-t256"].memory_budget_gb),
    "table1c-t1024": lambda st, su: run_table1("table1c_t1024", "gpt2-rope-1.2b", (1024,), st,
                                               su, SPECS["table1c-t1024"].memory_budget_gb),
    "table1b-n10k-t1024": lambda st, su: run_table1("table1b_n10k_t1024", "llama2-nano",
                                                    (1024,), st, su,
                                                    num_seqs=campaign.PAPER_N_LLAMA),
    "table4a-n10k": run_table4a_n10k,
    "figure10": run_figure10,
    "gemma3-init-n10k": run_gemma3_init,
}
STUDY = campaign.PAPER_RECORDS
ALLOW_VERSIONS = False


