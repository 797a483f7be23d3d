"""The steps of the real-model study for one model record (:mod:`experiments.real_model.record`),
each resumable, each record written when its step finishes (by the command line,
:mod:`experiments.real_model.command`):

  sinks       ``bornbiased sinks MODEL`` at its defaults (Sec. 6.2.1's eps 0.25, T = 32..512,
              100 windows per length of the Python standard library's sources, the file's own
              tokenizer), once per run of the record's ``sinks`` (e.g. with ``<bos>`` and with
              ``--no-bos``);
  sweep       ``bornbiased sweep --model MODEL --num-seqs N --seq-len T`` per length of the
              record's ``sweep`` (Table 1's protocol: uniform random token ids, the argmax at the
              last position), one resumable state folder for all;
  init        Table 1's statistic and Figure 2's contraction of fresh initialisations of the
              record's ``init`` preset and of each ablation arm (the shared embedding of App.
              B.2): one resumable blockwise sweep of the last-token probe per arm
              (``bornbiased_jax.blockwise``), keeping the arg-max tokens and the sums of unit
              last-token states per block of sequences;
  suspects    the record's ``descendants`` (fine-tunes, quantized, pruned, renamed, rotated and
              shape-changed copies) and ``trained_negatives`` (same-shape models trained from
              scratch on the fine-tunes' text), each an HF folder under the record's
              ``suspects`` folder (``save_hf``, atomic; with the file's tokenizer, remapped where
              the vocabulary was edited, where the record says so), so a stopped step rebuilds
              only what is missing; the ``refused`` edits are asked for and their refusals
              recorded;
  cousins     shallower cousins trained from scratch (:mod:`experiments.real_model.cousins`);
  lineage     ``bornbiased fingerprint MODEL SUSPECTS UNRELATED... COUSINS... --test T`` per test
              of the record's ``fingerprint``.

A suspect's random key is ``keys.fold_in_name(key(0), name)`` and its manifest entry says so
(``key_rule``); entries without one were made by the earlier name hash (``record.key_rules``).
Every command runs as a subprocess of this interpreter's ``bornbiased_jax.cli``, exactly as a
user types it; its output folder under the record's ``out`` is kept, and a step whose output
already exists is not run again (delete the folder to re-measure). Records name the model by
its file name and sha256, and suspects by their name, never by a path.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

# sha256: also the command line's
from experiments.common.pretrained import (config, inputs_read, load, run_cli,  # noqa: F401
                                           scrubbed, sha256, shown, tokenizer)
from experiments.real_model import cousins
from experiments.real_model.record import KEY_RULE, ModelRecord

SINK_SETTINGS = ("setting", "corpus", "tokenizer", "bos_prepended", "bos_id", "data_seed")


def model_info(model: Path) -> dict:
    return {"file": model.name, "sha256": sha256(model), "size_bytes": model.stat().st_size}


def describe(rec: ModelRecord, name: str, spec: dict) -> str:
    """What a built suspect is, from its spec in the record."""
    from bornbiased_jax.fingerprint.edits.derivatives import DERIVATIVES

    t = rec.tune
    steps = spec.get("steps", t["steps"])
    tokens = f"{steps} steps of {t['batch']} x {t['seq_len']} tokens"
    if spec.get("tune") == "lora":
        return (f"rank-{spec['rank']} LoRA on every projection, {tokens} of Vim's help "
                f"(lr {spec['lr']}), merged")
    if spec.get("tune") == "full":
        return f"full fine-tune, {tokens} of Vim's help (lr {spec['lr']})"
    if spec.get("tune") == "scratch":
        return (f"a fresh init of the base's shape (HF's default init, seed {spec['seed']}"
                + (f": {rec.preset}@{spec['seed']}" if rec.preset else "")
                + f") trained {tokens} on the same text (lr {spec['lr']}): same shape and "
                "data, no weight lineage")
    return DERIVATIVES[name].what


def negatives(rec: ModelRecord, with_cousins: bool | None = None) -> list[dict]:
    """The lineage step's unrelated models as the record keeps them (``claims.negatives``
    reads them): each {"name", "kind", "trained_steps", "same_data", "what"}, and "tokens"
    (the tokens it was trained on) for a trained one: the ``unrelated`` sources (untrained
    initialisations), the ``trained_negatives`` (trained from a fresh init on the fine-tunes'
    text), and the cousins (by default those that are trained; ``with_cousins`` False: none),
    trained from scratch on it too. A negative added to the record is weighed by the verdict
    rule from this list."""
    out = [{"name": suspect_name(spec), "kind": "init", "trained_steps": 0, "same_data": False,
            "what": "a fresh initialisation of the base's shape (HF's default init)"}
           for spec in rec.unrelated]
    for name, spec in rec.trained_negatives.items():
        steps = spec.get("steps", rec.tune["steps"])
        out.append({"name": name, "kind": "trained", "trained_steps": steps, "same_data": True,
                    "tokens": steps * rec.tune["batch"] * rec.tune["seq_len"],
                    "what": describe(rec, name, spec)})
    if with_cousins is not False and rec.cousins:
        out += cousins.negatives(rec.cousins)
    return out


def suspect_name(spec: str) -> str:
    """How the lineage record names a model source: a preset by its spec, any other by its
    file or folder name (never a path)."""
    return spec if spec.startswith("preset:") else Path(spec).name


def sinks(rec: ModelRecord, model: Path, out: Path) -> dict:
    """One ``bornbiased sinks`` run per entry of the record's ``sinks``: the command, its wall
    time, settings and per-length results (alpha^1 per layer and head); a single run keyed ""
    is the record itself, else {key: run}."""
    runs = {}
    for key, flags in rec.sinks.items():
        stem = "sinks" if key == "" else f"sinks-{key.replace('_', '-')}"
        folder = out / stem
        args = ["sinks", str(model), *flags, "--out", str(folder)]
        if not (folder / "sinks.json").is_file():
            run_cli(args, out / f"{stem}.log")
        res = scrubbed(json.loads((folder / "sinks.json").read_text()), model)
        runs[key] = {"command": shown(args, model), "wall_seconds": res["run"].get("wall_seconds"),
                     "settings": {k: res["run"].get(k) for k in SINK_SETTINGS},
                     "results": res["results"]}
    return runs[""] if list(runs) == [""] else runs


def sweep(rec: ModelRecord, model: Path, out: Path, lengths=None) -> dict:
    """Table 1's protocol on the model, one command per length T (all sharing one resumable
    state folder); the record holds every length asked for."""
    records, commands, wall = [], [], 0.0
    for T in lengths or rec.sweep["seq_lens"]:
        folder = out / f"sweep-T{T}"
        args = ["sweep", "--model", str(model), "--num-seqs", str(rec.sweep["num_seqs"]),
                "--seq-len", str(T), "--state", str(out / "sweep-state"), "--out", str(folder)]
        if not (folder / "token_preference.json").is_file():
            run_cli(args, out / f"sweep-T{T}.log")
        res = scrubbed(json.loads((folder / "token_preference.json").read_text()), model)
        records += res["records"]
        commands.append(shown(args, model))
        wall += res["run"].get("wall_seconds") or 0.0
    tok = tokenizer(model)
    text = {} if tok is None else {str(r["top1_id"]): tok.decode([r["top1_id"]])
                                   for r in records}
    return {"command": "; ".join(commands), "wall_seconds": wall, "records": records,
            "token_text": text}


def init(rec: ModelRecord, out: Path, log=print) -> dict:
    """Per arm of the record's ``init``: the config's changes, and per seed Table 1's
    statistic of the N arg-max tokens and Figure 2's mean pairwise cosine of the last-token
    states per block (0 = embeddings), with its leave-one-block-out values (the jackknife of
    the initialisation study)."""
    from bornbiased_jax.blockwise import blockwise_state, blockwise_sweep
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.contraction import (last_token_probe, last_token_sums,
                                                   mean_similarity_from_sums,
                                                   mean_similarity_leave_one_out)
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import summarize

    s = rec.init
    base = get_preset(s["preset"])
    tokens = np.asarray(probe_inputs("tokens", base, s["num_seqs"], s["seq_len"], 0))
    arms = {}
    for arm, changes in s["arms"].items():
        cfg = base.ablate(**changes) if changes else base
        t0 = time.time()
        log(f"init arm {arm}: {len(s['seeds'])} seeds x {s['num_seqs']} sequences of "
            f"{s['seq_len']} tokens")
        blocks = blockwise_sweep(last_token_probe(cfg), cfg, list(s["seeds"]), tokens,
                                 summarise=last_token_sums, block=s["block"],
                                 state=out / "init-state" / arm,
                                 state_identity={"probe": "last_token_sums"})
        top = np.concatenate([b["top"] for b in blocks], axis=1)  # (S, N)
        unit = np.stack([b["unit_blocks"] for b in blocks])  # (B, S, L+1, d)
        ns = np.array([int(b["n"]) for b in blocks])
        cos = mean_similarity_from_sums(unit.sum(0), int(ns.sum()))  # (S, L+1)
        loo = mean_similarity_leave_one_out(unit, ns)  # (B, S, L+1)
        per_seed = []
        for i, seed in enumerate(s["seeds"]):
            pref = summarize(top[i], cfg.vocab_size, preset=cfg.name, seed=seed,
                             seq_len=s["seq_len"], input="tokens")
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
    return {"settings": {"preset": s["preset"], "seeds": list(s["seeds"]),
                         "num_seqs": s["num_seqs"], "seq_len": s["seq_len"], "input": "tokens",
                         "probe_seed": 0, "shared_embedding": True, "block": s["block"]},
            "arms": arms}


def tune_blocks(rec: ModelRecord, tok) -> np.ndarray:
    """The fine-tunes' text: Vim's help files (technical prose outside the usual pretraining
    mixtures), read with the model's own tokenizer (``bos_id`` first in each document where
    the record gives one) into blocks of T + 1 tokens."""
    from bornbiased_jax import data
    from bornbiased_jax.defaults import VIM_DOCS

    t = rec.tune
    docs = data.load_nonempty_corpus(sorted(glob.glob(VIM_DOCS)) or [VIM_DOCS],
                                     max_bytes=int(t["corpus_mb"] * 2**20))
    bos = [] if t.get("bos_id") is None else [t["bos_id"]]
    ids = np.concatenate([np.asarray(bos + tok.encode(d).ids, np.int32) for d in docs])
    T1 = t["seq_len"] + 1
    return ids[: len(ids) // T1 * T1].reshape(-1, T1)


def build_suspects(rec: ModelRecord, model: Path, folder: Path, log=print) -> dict:
    """Every suspect of the record's ``descendants`` and ``trained_negatives`` as an HF folder
    in ``folder`` (those present are kept), and its ``refused`` edits' refusals:
    {name: {"what", "build_seconds", "key_rule"} or {"what", "refused"}}, kept in
    ``folder``/suspects.json."""
    import jax

    from bornbiased_jax import files
    from bornbiased_jax import model as decoder
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.fingerprint.edits.derivatives import DERIVATIVES, derive
    from bornbiased_jax.hf import save_hf
    from bornbiased_jax.keys import fold_in_name, seed_key
    from experiments.common.tune import tune

    manifest_path = folder / "suspects.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    cfg, base = load(model)
    blocks = None
    key = jax.random.key(0)
    t = rec.tune
    for name, spec in {**rec.descendants, **rec.trained_negatives}.items():
        what = describe(rec, name, spec)
        if (folder / name / "config.json").is_file() and name in manifest:
            if "what" in manifest[name]:  # the same edit, described as the code now does
                manifest[name] = {**manifest[name], "what": what}
            continue
        log(f"building suspect {name}: {what}")
        t0 = time.time()
        c, k = cfg, fold_in_name(key, name)
        kind = spec.get("tune")
        if kind is not None and blocks is None:
            blocks = tune_blocks(rec, tokenizer(model))
        tune_kw = dict(steps=spec.get("steps", t["steps"]), batch=t["batch"],
                       data_seed=t["data_seed"])
        if kind == "lora":
            p = tune(base, cfg, blocks, mode="lora", lr=spec["lr"], rank=spec["rank"], **tune_kw)
        elif kind == "full":
            p = tune(base, cfg, blocks, mode="full", lr=spec["lr"], **tune_kw)
        elif kind == "scratch":  # the base's shape, HF's default init (the preset's)
            fresh = decoder.init(dataclasses.replace(cfg, scale_residual_init=False),
                                 seed_key(spec["seed"]))
            p = tune(fresh, cfg, blocks, mode="full", lr=spec["lr"], **tune_kw)
        else:
            c, p = derive(name, base, cfg, k)
        save_hf(c, jax.tree.map(lambda a: np.asarray(a, np.float32), p), folder / name,
                overwrite=True)
        if rec.suspect_tokenizer:
            write_tokenizer(model, folder / name, DERIVATIVES.get(name), k)
        manifest[name] = {"what": what, "build_seconds": round(time.time() - t0, 1),
                          "key_rule": KEY_RULE}
        files.write_text(manifest_path, json.dumps(manifest, indent=1))
    for name in rec.refused:
        try:
            derive(name, base, cfg, fold_in_name(key, name))
        except UserError as e:
            manifest[name] = {"what": DERIVATIVES[name].what, "refused": str(e)}
        else:
            raise UserError(f"model record {rec.name}: {name} is listed as refused for this "
                            f"model, but the toolkit made it; take it out of 'refused'")
    return manifest


def write_tokenizer(model: Path, folder: Path, derivative, key) -> None:
    """The model's tokenizer beside a suspect, as an HF folder ships it (remapped with the
    ids where the suspect's vocabulary was edited), so the lineage tests align the two
    vocabularies by token string."""
    from bornbiased_jax import files
    from bornbiased_jax.fingerprint.edits import vocab_edits

    tok = tokenizer(model)
    if tok is None:  # a file without a tokenizer: ids are then assumed to mean the same
        return
    data = json.loads(tok.to_str())
    if derivative is not None and derivative.vocab is not None:
        data = vocab_edits.remap_tokenizer_json(data, derivative.vocab_origin(config(model), key))
    files.write_text(folder / "tokenizer.json", json.dumps(data))


def lineage(rec: ModelRecord, model: Path, out: Path, suspects: Path) -> dict:
    """``bornbiased fingerprint`` per test of the record's ``fingerprint`` on every suspect and
    negative (the commands run side by side: each is mostly one core's work); {test: the
    command, its wall seconds and every pair's p-values and verdicts}."""
    extra = cousins.sources(rec.cousins) if rec.cousins else []
    flags = [a for k, v in rec.fingerprint.get("flags", {}).items()
             for a in (f"--{k.replace('_', '-')}", str(v))]
    commands = {}
    for test in rec.fingerprint["tests"]:
        folder = out / f"fingerprint-{test}"
        commands[test] = (folder, ["fingerprint", str(model), str(suspects), *rec.unrelated,
                                   *extra, "--test", test, *flags, "--no-progress", "--out",
                                   str(folder)])
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
            "pairs": [{"suspect": suspect_name(r["spec"]), "p": r["p"], "related": r["related"],
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

    f = pair_folder / "fingerprint.json"
    if not f.is_file():
        return {}
    res = json.loads(f.read_text())["results"]
    m = res.get("matched") or res.get("matched_init")
    if m is None:
        return {}
    d = m["details"]
    out = {"attributed_layers": d["attributed_layers"], "layers": len(d["K_per_layer"]),
           "attributed_units": d["attributed_units"], "slack": d["slack"],
           **({"slack_rule": d["slack_rule"]} if "slack_rule" in d else {})}
    if name in SHAPES:
        origin = SHAPES[name].layer_origin(config(model))
        copied = [(l, o) for l, o in enumerate(origin) if o is not None]
        out["localised"] = sum(d["base_layer_of"][l] == o for l, o in copied) / len(copied)
    return out
