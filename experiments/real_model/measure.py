"""The steps of the real-model study, each resumable, each writing its record when it finishes.

  sinks       ``bornbiased sinks MODEL`` (its defaults: Sec. 6.2.1's eps 0.25, T = 32..512,
              100 windows per length of the Python standard library's sources, the file's own
              tokenizer, no BOS: SmolLM2 adds none);
  sweep       ``bornbiased sweep --model MODEL --num-seqs 2000 --seq-len T`` for T = 64 and
              256 (Table 1's protocol: uniform random token ids, the argmax at the last
              position), one command per length, sharing one resumable state folder;
  suspects    the descendants made here from the GGUF (:data:`DESCENDANTS`: fine-tunes,
              quantized, pruned, renamed and rotated copies, and copies whose MLP width, depth
              or vocabulary changed) and a same-shape model trained from scratch on the
              fine-tunes' text (:data:`SCRATCH`), each saved as an HF folder with the file's
              tokenizer (remapped where the vocabulary was edited) under
              ``runs/smollm2/suspects/`` (``save_hf``, atomic), so a stopped step rebuilds only
              what is missing;
  cousins     4-layer cousins of the base trained from scratch on the fine-tunes' text
              (:mod:`experiments.real_model.cousins`): the trained negatives;
  lineage     ``bornbiased fingerprint MODEL runs/smollm2/suspects preset:smollm2-135m@1
              preset:smollm2-135m@2 runs/smollm2/cousins#0 ... --test T`` for T in
              :data:`TESTS`, at the command's defaults.

Every command runs as a subprocess of this interpreter's ``bornbiased_jax.cli``, exactly as a
user types it; its output folder under ``results/experiments/real_model/`` is kept, and a step
whose output already exists is not run again (delete the folder to re-measure). Records name
the model by its file name and sha256, and suspects by their name, never by a path.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bornbiased_jax.fingerprint.edits.derivatives import DERIVATIVES
# sha256: also the command line's (__main__)
from experiments.common.pretrained import (inputs_read, run_cli, scrubbed, sha256,  # noqa: F401
                                           shown)
from experiments.real_model import cousins

OUT = Path("results/experiments/real_model")
SUSPECTS = Path("runs/smollm2/suspects")
SWEEP_N, SWEEP_LENGTHS = 2000, (64, 256)
FINGERPRINT: dict = {}  # the command's defaults (n by the models' cost, T = 64)
TESTS = ("auto", "paper", "official")
UNRELATED_PRESETS = ("preset:smollm2-135m@1", "preset:smollm2-135m@2")
# The fine-tunes' text: Vim's help files (technical prose outside SmolLM2's usual web/code/math
# mixture), read with the model's own tokenizer into blocks of T + 1 tokens.
# Short runs: a training step of the 135M model takes several seconds on a 2-core CPU, so each
# tune is 30 AdamW steps of 8 x 64 tokens (~15k tokens) -- enough to move every weight, far
# less than a released fine-tune; --scale paper on a GPU is where longer ones belong.
TUNE = dict(steps=30, batch=8, seq_len=64, corpus_mb=2.0, data_seed=0)
FULL_STEPS = TUNE["steps"]
FULL_LR, LORA_LR, LORA_RANK, SCRATCH_LR, SCRATCH_SEED = 5e-5, 1e-3, 8, 1e-3, 3
# name -> what it is (the weight-derived descendants of the base): two trained here, the rest
# one-model derivatives registered in ``fingerprint.edits.derivatives``.
TRAINED = {
    "lora": f"rank-{LORA_RANK} LoRA on every projection, {TUNE['steps']} steps on Vim's help "
            f"(lr {LORA_LR}), merged",
    "full-ft": f"full fine-tune, {FULL_STEPS} steps on Vim's help (lr {FULL_LR})",
}
DERIVED = ("int8", "int4-g32", "prune-50", "renamed", "signs-units", "rotated", "quarot-int4",
           # shape-changing (fingerprint.edits.derivatives.SHAPES): widths, depths, vocabularies
           "prune-width-25", "pad-rotated", "layer-shift-rotated", "depth-upscale",
           "drop-layer", "insert-identity", "vocab-extend", "vocab-permute")
DESCENDANTS = {**TRAINED, **{name: DERIVATIVES[name].what for name in DERIVED}}
SCRATCH = {"scratch": f"a fresh init of the base's shape (HF's default init, seed "
                      f"{SCRATCH_SEED}: smollm2-135m@{SCRATCH_SEED}) trained {FULL_STEPS} steps "
                      f"on the same text (lr {SCRATCH_LR}): same shape and data, no weight "
                      f"lineage"}


def negatives(unrelated: tuple[str, ...] = UNRELATED_PRESETS,
              with_cousins: bool | None = None) -> list[dict]:
    """The lineage step's unrelated models as the record keeps them (``claims.negatives``
    reads them): each {"name", "kind", "trained_steps", "same_data", "what"}, and "tokens"
    (the tokens it was trained on) for a trained one; ``unrelated``
    presets are untrained initialisations, :data:`SCRATCH` is trained from a fresh init on the
    fine-tunes' text, and the cousins (:mod:`.cousins`; by default those that are
    trained; ``with_cousins`` False: none) are trained from scratch on it too. A negative added here (and to the fingerprint
    command's suspects) is weighed by the verdict rule from this list."""
    out = [{"name": spec, "kind": "init", "trained_steps": 0, "same_data": False,
            "what": "a fresh initialisation of the base's shape (HF's default init)"}
           for spec in unrelated]
    out += [{"name": name, "kind": "trained", "trained_steps": FULL_STEPS, "same_data": True,
             "tokens": FULL_STEPS * TUNE["batch"] * TUNE["seq_len"], "what": what}
            for name, what in SCRATCH.items()]
    if with_cousins is not False:
        out += cousins.negatives()
    return out



def sinks(model: Path, out: Path = OUT) -> dict:
    folder = out / "sinks"
    args = ["sinks", str(model), "--out", str(folder)]
    if not (folder / "sinks.json").is_file():
        run_cli(args, out / "sinks.log")
    res = scrubbed(json.loads((folder / "sinks.json").read_text()), model)
    return {"command": shown(args, model), "wall_seconds": res["run"].get("wall_seconds"),
            "settings": {k: res["run"].get(k) for k in ("setting", "corpus", "tokenizer",
                                                        "bos_prepended", "data_seed")},
            "results": res["results"]}


def sweep(model: Path, out: Path = OUT, lengths=SWEEP_LENGTHS) -> dict:
    """Table 1's protocol on the model, one command per length T (all sharing one resumable
    state folder); the record holds every length asked for."""
    from bornbiased_jax.hf.gguf import load_gguf_tokenizer

    records, commands, wall = [], [], 0.0
    for T in lengths:
        folder = out / f"sweep-T{T}"
        args = ["sweep", "--model", str(model), "--num-seqs", str(SWEEP_N), "--seq-len", str(T),
                "--state", str(out / "sweep-state"), "--out", str(folder)]
        if not (folder / "token_preference.json").is_file():
            run_cli(args, out / f"sweep-T{T}.log")
        res = scrubbed(json.loads((folder / "token_preference.json").read_text()), model)
        records += res["records"]
        commands.append(shown(args, model))
        wall += res["run"].get("wall_seconds") or 0.0
    tok = load_gguf_tokenizer(model)
    text = {str(r["top1_id"]): tok.decode([r["top1_id"]]) for r in records}
    return {"command": "; ".join(commands), "wall_seconds": wall, "records": records,
            "token_text": text}


def _tune_blocks(tok) -> np.ndarray:
    from bornbiased_jax import data
    from bornbiased_jax.defaults import VIM_DOCS

    docs = data.load_nonempty_corpus(sorted(glob.glob(VIM_DOCS)) or [VIM_DOCS],
                                     max_bytes=int(TUNE["corpus_mb"] * 2**20))
    ids = np.concatenate([np.asarray(tok.encode(d).ids, np.int32) for d in docs])
    T1 = TUNE["seq_len"] + 1
    return ids[: len(ids) // T1 * T1].reshape(-1, T1)


def build_suspects(model: Path, folder: Path = SUSPECTS, log=print) -> dict:
    """Every suspect of :data:`DESCENDANTS` and :data:`SCRATCH` as an HF folder in ``folder``
    (those present are kept); {name: {"what", "build_seconds"}} from ``folder``/suspects.json."""
    import jax

    from bornbiased_jax import files
    from bornbiased_jax.fingerprint.edits.derivatives import derive
    from bornbiased_jax.hf import save_hf
    from bornbiased_jax.hf.gguf import load_gguf, load_gguf_tokenizer
    from bornbiased_jax import model as decoder
    from bornbiased_jax.keys import seed_key
    from experiments.common.tune import tune

    manifest_path = folder / "suspects.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    cfg, base = load_gguf(model)
    blocks = None
    key = jax.random.key(0)
    for name, what in {**DESCENDANTS, **SCRATCH}.items():
        if (folder / name / "config.json").is_file() and name in manifest:
            if "what" in manifest[name]:  # the same edit, described as the code now does
                manifest[name] = {**manifest[name], "what": what}
            continue
        log(f"building suspect {name}: {what}")
        t0 = time.time()
        c, k = cfg, jax.random.fold_in(key, len(name) * 1000 + sum(map(ord, name)))
        if name in ("lora", "full-ft", "scratch") and blocks is None:
            blocks = _tune_blocks(load_gguf_tokenizer(model))
        tune_kw = dict(steps=TUNE["steps"], batch=TUNE["batch"], data_seed=TUNE["data_seed"])
        if name == "lora":
            p = tune(base, cfg, blocks, mode="lora", lr=LORA_LR, rank=LORA_RANK, **tune_kw)
        elif name == "full-ft":
            p = tune(base, cfg, blocks, mode="full", lr=FULL_LR,
                     **{**tune_kw, "steps": FULL_STEPS})
        elif name == "scratch":  # the base's shape, HF's default init (the preset's)
            init = decoder.init(dataclasses.replace(cfg, scale_residual_init=False),
                              seed_key(SCRATCH_SEED))
            p = tune(init, cfg, blocks, mode="full", lr=SCRATCH_LR,
                     **{**tune_kw, "steps": FULL_STEPS})
        else:
            c, p = derive(name, base, cfg, k)
        save_hf(c, jax.tree.map(lambda a: np.asarray(a, np.float32), p), folder / name,
                overwrite=True)
        _write_tokenizer(model, folder / name, DERIVATIVES.get(name), k)
        manifest[name] = {"what": what, "build_seconds": round(time.time() - t0, 1)}
        files.write_text(manifest_path, json.dumps(manifest, indent=1))
    return manifest


def _write_tokenizer(model: Path, folder: Path, derivative, key) -> None:
    """The GGUF file's tokenizer beside a suspect, as an HF folder ships it (remapped with the
    ids where the suspect's vocabulary was edited), so the lineage tests align the two
    vocabularies by token string."""
    from bornbiased_jax import files
    from bornbiased_jax.fingerprint.edits import vocab_edits
    from bornbiased_jax.hf.gguf import load_gguf_tokenizer, check_gguf

    tok = load_gguf_tokenizer(model)
    if tok is None:  # a file without a tokenizer: ids are then assumed to mean the same
        return
    data = json.loads(tok.to_str())
    if derivative is not None and derivative.vocab is not None:
        data = vocab_edits.remap_tokenizer_json(
            data, derivative.vocab_origin(check_gguf(model), key))
    files.write_text(folder / "tokenizer.json", json.dumps(data))


def lineage(model: Path, out: Path = OUT, suspects: Path = SUSPECTS,
            unrelated: tuple[str, ...] = UNRELATED_PRESETS) -> dict:
    """``bornbiased fingerprint`` per test of :data:`TESTS` on every suspect (the commands run
    side by side: each is mostly one core's work); {test: the command, its wall seconds and
    every pair's p-values and verdicts}."""
    commands = {}
    for test in TESTS:
        folder = out / f"fingerprint-{test}"
        commands[test] = (folder, [
            "fingerprint", str(model), str(suspects), *unrelated,
            *cousins.sources(), "--test", test,
            *[a for k, v in FINGERPRINT.items() for a in (f"--{k.replace('_', '-')}", str(v))],
            "--no-progress", "--out", str(folder)])
    # every command runs: each resumes the pairs its folder already holds under the same
    # BASE, settings and statistic and computes the rest (a suspect or negative added since,
    # e.g. a cousin trained later, is measured; a finished summary is never taken as it is)
    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        for f in [pool.submit(run_cli, args, out / f"fingerprint-{t}.log")
                  for t, (_, args) in commands.items()]:
            f.result()
    by_test = {}
    for test, (folder, args) in commands.items():
        s = json.loads((folder / "summary.json").read_text())
        by_test[test] = {
            "command": shown(args, model), "wall_seconds": s["wall_seconds"],
            "settings": s["settings"],
            "pairs": [{"suspect": Path(r["spec"]).name if not r["spec"].startswith("preset:")
                       else r["spec"], "p": r["p"], "related": r["related"],
                       "verdict_test": r["verdict_test"], "n": inputs_read(folder, r),
                       **localised(model, folder / r["folder"], Path(r["spec"]).name)}
                      for r in s["suspects"]]}
    return by_test


def localised(model: Path, pair_folder: Path, name: str) -> dict:
    """Where the matched test says a suspect descends from (its pair's fingerprint.json):
    the SUSPECT layers attributed to a BASE layer and, for a shape-changed derivative whose
    layers' origins are known (``derivatives.SHAPES``), the share of its copied layers
    attributed to their origin; {} where the matched test did not run."""
    from bornbiased_jax.fingerprint.edits.derivatives import SHAPES
    from bornbiased_jax.hf.gguf import check_gguf

    f = pair_folder / "fingerprint.json"
    if not f.is_file():
        return {}
    res = json.loads(f.read_text())["results"]
    m = res.get("matched") or res.get("matched_init")
    if m is None:
        return {}
    d = m["details"]
    out = {"attributed_layers": d["attributed_layers"], "layers": len(d["K_per_layer"]),
           "attributed_units": d["attributed_units"]}
    if name in SHAPES:
        origin = SHAPES[name].layer_origin(check_gguf(model))
        copied = [(l, o) for l, o in enumerate(origin) if o is not None]
        out["localised"] = sum(d["base_layer_of"][l] == o for l, o in copied) / len(copied)
    return out
