"""The steps of the Gemma 3 study, each resumable, each writing its record when it finishes.

  sinks       ``bornbiased sinks MODEL`` (its defaults: Sec. 6.2.1's eps 0.25, T = 32..512, 100
              windows per length of the Python standard library's sources, the file's own
              tokenizer) with ``<bos>`` (the file says ``add_bos_token``, so the command's
              default) and with ``--no-bos``;
  sweep       ``bornbiased sweep --model MODEL --num-seqs 1000 --seq-len 64``: Table 1's
              protocol on the trained model (uniform random token ids, the argmax at the last
              position);
  init        Table 1's statistic and Figure 2's contraction of fresh ``gemma3-270m``
              initialisations (:data:`SEEDS`, the shared embedding of App. B.2) and of the same
              preset with QK-norm off and with the post-norms off (:data:`ARMS`): one
              resumable blockwise sweep of the last-token probe per arm
              (``bornbiased_jax.blockwise``), keeping the arg-max tokens and the sums of unit
              last-token states per block of sequences;
  suspects    the descendants of the GGUF made here (:data:`DESCENDANTS`: a LoRA tune and the
              one-model edits), saved as HF folders under ``runs/gemma3/suspects/``; the
              rotations (:data:`REFUSED`) are asked for and their refusals recorded;
  lineage     ``bornbiased fingerprint MODEL runs/gemma3/suspects preset:gemma3-270m@1
              preset:gemma3-270m@2 --test auto``.

Sizes are the CPU's (a 64-token forward of the 270M model takes about a second here while the
machine is shared); every command's record keeps its settings. Commands run as subprocesses of
this interpreter's CLI, exactly as a user types them, outputs kept under
``results/experiments/gemma3/`` (a step whose output exists is not run again).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from experiments.common.pretrained import (inputs_read, run_cli, scrubbed, sha256,  # noqa: F401
                                           shown)

OUT = Path("results/experiments/gemma3")
SUSPECTS = Path("runs/gemma3/suspects")
SWEEP_N, SWEEP_T = 1000, 64
ARMS = {"gemma3-270m": {}, "no-qk-norm": {"qk_norm": False},
        "no-post-norms": {"post_norms": False}}
SEEDS = (0, 1, 2)
INIT_N, INIT_T, INIT_BLOCK = 250, 64, 50
FINGERPRINT = dict(n=100, seq_len=32)
UNRELATED = ("preset:gemma3-270m@1", "preset:gemma3-270m@2")
TUNE = dict(steps=10, batch=4, seq_len=64, corpus_mb=1.0, data_seed=0)
LORA_LR, LORA_RANK = 1e-3, 8
DERIVED = ("int8", "int4-g32", "prune-50", "renamed", "signs-units")
REFUSED = ("rotated", "quarot-int4")


def _descendants() -> dict:
    from bornbiased_jax.fingerprint.edits.derivatives import DERIVATIVES

    return {"lora": f"rank-{LORA_RANK} LoRA on every projection, {TUNE['steps']} steps of "
                    f"{TUNE['batch']} x {TUNE['seq_len']} tokens of Vim's help (lr {LORA_LR}), "
                    f"merged",
            **{name: DERIVATIVES[name].what for name in DERIVED}}


def sinks(model: Path, out: Path = OUT) -> dict:
    """Both runs: {"bos": ..., "no_bos": ...}, each the command, its wall time, settings and
    per-length results (alpha^1 per layer and head)."""
    runs = {}
    for key, flags in (("bos", []), ("no_bos", ["--no-bos"])):
        folder = out / f"sinks-{key}"
        args = ["sinks", str(model), *flags, "--out", str(folder)]
        if not (folder / "sinks.json").is_file():
            run_cli(args, out / f"sinks-{key}.log")
        res = scrubbed(json.loads((folder / "sinks.json").read_text()), model)
        runs[key] = {"command": shown(args, model), "wall_seconds": res["run"]["wall_seconds"],
                     "settings": {k: res["run"].get(k) for k in (
                         "setting", "corpus", "tokenizer", "bos_prepended", "bos_id",
                         "data_seed")},
                     "results": res["results"]}
    return runs


def sweep(model: Path, out: Path = OUT) -> dict:
    from bornbiased_jax.hf.gguf import load_gguf_tokenizer

    folder = out / f"sweep-T{SWEEP_T}"
    args = ["sweep", "--model", str(model), "--num-seqs", str(SWEEP_N), "--seq-len",
            str(SWEEP_T), "--state", str(out / "sweep-state"), "--out", str(folder)]
    if not (folder / "token_preference.json").is_file():
        run_cli(args, out / "sweep.log")
    res = scrubbed(json.loads((folder / "token_preference.json").read_text()), model)
    tok = load_gguf_tokenizer(model)
    return {"command": shown(args, model), "wall_seconds": res["run"].get("wall_seconds"),
            "records": res["records"],
            "token_text": {str(r["top1_id"]): tok.decode([r["top1_id"]])
                           for r in res["records"]}}


def init(out: Path = OUT, log=print) -> dict:
    """Per arm: the config's changes, and per seed Table 1's statistic of the N arg-max tokens
    and Figure 2's mean pairwise cosine of the last-token states per block (0 = embeddings),
    with its leave-one-block-out values (the jackknife of the initialisation study)."""
    from bornbiased_jax.blockwise import blockwise_state, blockwise_sweep
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.contraction import (last_token_probe, last_token_sums,
                                                   mean_similarity_from_sums,
                                                   mean_similarity_leave_one_out)
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import summarize

    base = get_preset("gemma3-270m")
    tokens = np.asarray(probe_inputs("tokens", base, INIT_N, INIT_T, 0))
    arms = {}
    for arm, changes in ARMS.items():
        cfg = base.ablate(**changes) if changes else base
        t0 = time.time()
        log(f"init arm {arm}: {len(SEEDS)} seeds x {INIT_N} sequences of {INIT_T} tokens")
        blocks = blockwise_sweep(last_token_probe(cfg), cfg, list(SEEDS), tokens,
                                 summarise=last_token_sums, block=INIT_BLOCK,
                                 state=out / "init-state" / arm,
                                 state_identity={"probe": "last_token_sums"})
        top = np.concatenate([b["top"] for b in blocks], axis=1)  # (S, N)
        unit = np.stack([b["unit_blocks"] for b in blocks])  # (B, S, L+1, d)
        ns = np.array([int(b["n"]) for b in blocks])
        cos = mean_similarity_from_sums(unit.sum(0), int(ns.sum()))  # (S, L+1)
        loo = mean_similarity_leave_one_out(unit, ns)  # (B, S, L+1)
        per_seed = []
        for i, seed in enumerate(SEEDS):
            pref = summarize(top[i], cfg.vocab_size, preset=cfg.name, seed=seed,
                             seq_len=INIT_T, input="tokens")
            per_seed.append({"seed": seed, "top1_id": pref.top1_id,
                             "top1_count": pref.top1_count, "top1_freq": pref.top1_freq,
                             "log10_p": pref.log10_p, "distinct_tokens": pref.distinct_tokens,
                             "block_mean_cos": cos[i].tolist(),
                             "block_mean_cos_loo": loo[:, i].tolist()})
        # the blocks' compute seconds as their state saved them (a resumed arm read some back)
        saved = blockwise_state(out / "init-state" / arm)
        arms[arm] = {"changes": changes, "per_seed": per_seed,
                     "seconds": round(sum(saved.get("seconds", {}).values()), 1),
                     "this_call_seconds": round(time.time() - t0, 1)}
    return {"settings": {"preset": "gemma3-270m", "seeds": list(SEEDS), "num_seqs": INIT_N,
                         "seq_len": INIT_T, "input": "tokens", "probe_seed": 0,
                         "shared_embedding": True, "block": INIT_BLOCK}, "arms": arms}


def _tune_blocks(tok) -> np.ndarray:
    import glob

    from bornbiased_jax import data
    from bornbiased_jax.defaults import VIM_DOCS

    docs = data.load_nonempty_corpus(sorted(glob.glob(VIM_DOCS)) or [VIM_DOCS],
                                     max_bytes=int(TUNE["corpus_mb"] * 2**20))
    ids = np.concatenate([[2] + tok.encode(d).ids for d in docs]).astype(np.int32)
    T1 = TUNE["seq_len"] + 1
    return ids[: len(ids) // T1 * T1].reshape(-1, T1)


def build_suspects(model: Path, folder: Path = SUSPECTS, log=print) -> dict:
    """Every suspect as an HF folder in ``folder`` (those present are kept), and the rotations'
    refusals: {name: {"what", "build_seconds"} or {"refused": reason}}."""
    import jax

    from bornbiased_jax import files
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.fingerprint.edits.derivatives import DERIVATIVES, derive
    from bornbiased_jax.hf import save_hf
    from bornbiased_jax.hf.gguf import load_gguf, load_gguf_tokenizer
    from experiments.common.tune import tune

    manifest_path = folder / "suspects.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    cfg, base = load_gguf(model)
    key = jax.random.key(0)
    for name, what in _descendants().items():
        if (folder / name / "config.json").is_file() and name in manifest:
            if "what" in manifest[name]:  # the same edit, described as the code now does
                manifest[name] = {**manifest[name], "what": what}
            continue
        log(f"building suspect {name}: {what}")
        t0 = time.time()
        k = jax.random.fold_in(key, len(name) * 1000 + sum(map(ord, name)))
        if name == "lora":
            blocks = _tune_blocks(load_gguf_tokenizer(model))
            c, p = cfg, tune(base, cfg, blocks, mode="lora", lr=LORA_LR, rank=LORA_RANK,
                             steps=TUNE["steps"], batch=TUNE["batch"],
                             data_seed=TUNE["data_seed"])
        else:
            c, p = derive(name, base, cfg, k)
        save_hf(c, jax.tree.map(lambda a: np.asarray(a, np.float32), p), folder / name,
                overwrite=True)
        manifest[name] = {"what": what, "build_seconds": round(time.time() - t0, 1)}
        files.write_text(manifest_path, json.dumps(manifest, indent=1))
    for name in REFUSED:
        try:
            derive(name, base, cfg, key)
            raise AssertionError(f"{name} of a post-norm model was not refused")
        except UserError as e:
            manifest[name] = {"what": DERIVATIVES[name].what, "refused": str(e)}
    return manifest


def lineage(model: Path, out: Path = OUT, suspects: Path = SUSPECTS) -> dict:
    folder = out / "fingerprint-auto"
    args = ["fingerprint", str(model), str(suspects), *UNRELATED, "--test", "auto",
            "--num-seqs", str(FINGERPRINT["n"]), "--seq-len", str(FINGERPRINT["seq_len"]),
            "--no-progress", "--out", str(folder)]
    run_cli(args, out / "fingerprint-auto.log")  # resumes the pairs its folder holds
    s = json.loads((folder / "summary.json").read_text())
    return {"auto": {
        "command": shown(args, model), "wall_seconds": s["wall_seconds"],
        "settings": s["settings"],
        "pairs": [{"suspect": Path(r["spec"]).name if not r["spec"].startswith("preset:")
                   else r["spec"], "p": r["p"], "related": r["related"],
                   "verdict_test": r["verdict_test"], "n": inputs_read(folder, r)}
                  for r in s["suspects"]]}}
