"""The attention-sink study after training (paper Sec. 6.2, Figure 12, Table 7): train or resume
the arms of a family (:mod:`experiments.common.family`) and measure every finished arm: the
sink rate per length, its emergence over the checkpoints and perplexities on held-out and
shifted text. experiments/figure12_table7.py is its command line; the claims and the RESULTS.md
section made of its records are in :mod:`experiments.sinks.claims`."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np

from bornbiased_jax import bigram_backcopy, data, files
from bornbiased_jax.errors import UserError
from bornbiased_jax.files import progress
from bornbiased_jax.probes.perplexity import perplexity
from bornbiased_jax.probes.sinks import metric
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from bornbiased_jax.training.config import settings_differences
from experiments.common import family
from experiments.sinks.claims import convergence, is_control, sink_text_name

CPU = dict(runs_dir="runs/sinks", lengths=[32, 64, 128, 256], num_seqs=100, eps=[0.25, 0.3],
           emergence_T=256, ppl_windows=64, ppl_T=256, shift_mb=2.0, sink_text="held_out")
# The paper's evaluation (Sec. 6.2: 100 sequences of WikiText-2's test set per length from 32
# to 512; Table 7: 256 sequences of 2048 tokens) of the arms trained at the paper's scale
# (family.SINKS_PAPER: Tables 13 and 14, for GPUs). ``sink_text`` names the text the sink rates
# are measured on: the held-out training text, or one of the family's shifted corpora.
PAPER = dict(runs_dir="runs/sinks-paper", lengths=[32, 64, 128, 256, 512], num_seqs=100,
             eps=[0.25, 0.3], emergence_T=512, ppl_windows=256, ppl_T=2048, shift_mb=64.0,
             sink_text="wikitext2")
ARMS = list(family.SINK_ARMS)
PAPER_ARMS = ["baseline", "amplification", "attenuation"]  # --scale paper's default: Table 7


def held_out_docs(tc, fam) -> list[str]:
    """The validation documents of a family run (its last ``val_fraction`` of documents)."""
    return run_folder.validation_split(family.corpus("base", fam), tc)[1]


def windows_of(s: dict, tc, base_corpus, tokenizer: Path, fam) -> dict:
    """The study's evaluation text and windows: held-out and shifted token ids (text corpora),
    read with ``tokenizer`` (a tokenizer.json), whether windows carry a BOS token
    (``s["bos"]`` if set, else the baseline run's ``bos``) and its id, ``make`` (T -> windows;
    None for text), ``ppl`` ((ids, seed) -> perplexity's keyword arguments), a note and
    ``sha256``, a digest of every token the study evaluates on (records measured with another
    digest were read from other text or with another vocabulary). A Bigram-Backcopy family (base corpus ``bbm:``) is evaluated
    on generated sequences (``bigram_backcopy.eval_windows``, seed ``tc.data_seed``: never training draws),
    each beginning with ``<s>``; it has no shifted text."""
    n, T = s["ppl_windows"], s["ppl_T"]
    if bigram_backcopy.is_spec(base_corpus):
        task = bigram_backcopy.load(bigram_backcopy.check_single(base_corpus))
        if s.get("bos") is False:
            raise UserError("Bigram-Backcopy windows always begin with <s>; drop bos=False")
        make = lambda T_: bigram_backcopy.eval_windows(task, T_, s["num_seqs"], tc.data_seed)  # noqa: E731
        win = bigram_backcopy.eval_windows(task, T + 1, n, tc.data_seed)
        return {"held": np.zeros(0, np.int32), "shifted": {}, "bos": True,
                "bos_id": task.bos_id, "make": make, "sha256": _digest(
                    [win] + [make(T_) for T_ in sorted({*s["lengths"], s.get("emergence_T", T)})]),
                "ppl": lambda ids, seed: dict(ids=None, n=n, T=T, seed=seed, windows=win),
                "note": f"Bigram-Backcopy sequences of {base_corpus[0]}, <s> first"}
    tok = data.load_tokenizer(tokenizer)
    bos = bool(tc.bos) if s.get("bos") is None else bool(s["bos"])
    bos_id = data.bos_id(tok, tc.bos_token) if bos else None
    held = data.token_ids(held_out_docs(tc, fam), tok, plain_specials=bos)
    shifted = {k: data.token_ids(data.load_corpus(family.corpus(k, fam),
                                                max_bytes=int(s["shift_mb"] * 2**20)), tok,
                                 plain_specials=bos)
               for k in fam.corpora if k != "base"}
    return {"held": held, "shifted": shifted, "bos": bos, "bos_id": bos_id, "make": None,
            "ppl": lambda ids, seed: dict(ids=ids, n=n, T=T, seed=seed, bos=bos_id),
            "sha256": _digest([np.asarray(bos_id or -1), held,
                               *(shifted[k] for k in sorted(shifted))]),
            "note": "text windows " + (f"with the BOS token (id {bos_id}) at position 0"
                                       if bos else "without a BOS token")}


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, np.int64))
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def scale_family(scale: str, family_name: str, corpus_flags) -> family.Family:
    """The family a run of the study measures: ``family.SINKS_PAPER`` at paper scale, else
    ``family.SINKS`` (``family_name`` "sinks") or the lineage family (``family.DEFAULT``), with
    the corpora named by ``--corpus NAME=PATH`` flags replaced."""
    if scale == "paper":
        if family_name != "sinks":
            raise UserError("--scale paper trains the sink family of Tables 13 and 14; "
                            "--family lineage is a CPU-scale option")
        fam = family.SINKS_PAPER
    else:
        fam = family.SINKS if family_name == "sinks" else family.DEFAULT
    return family.with_corpora(fam, family.parse_corpus_flags(corpus_flags))


def study(s: dict, runs: Path, fam, arms, train: bool = True, controls=(),
          saved: dict | None = None, on_arm=None, log=progress) -> dict:
    """Train (or resume) ``arms`` of family ``fam`` in ``runs`` one at a time, the baseline
    first, and measure each as it finishes: Figure 12's sink rates, the emergence over
    checkpoints and Table 7's perplexities. ``controls``: initialisation seeds of extra baseline
    runs (records ``control-sN``), measured the same way, whose differences from the seed-42
    baseline are seed-to-seed variation.

    ``saved``: the records of an earlier run of the study (its committed JSON). An arm whose
    run is not finished in ``runs`` but whose saved record was measured with these settings,
    this arm's training config and the same evaluation tokens (:func:`reusable`) is kept as
    saved, not trained again, so that the study advances across machines whose run folders
    are not kept; a finished run is always measured afresh. ``on_arm(records)`` is called
    after each arm, with the records so far (``missing_arms`` listing the rest), so that each
    arm's measurement is saved as soon as it exists. ``log`` gets a line per step taken."""
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise UserError(f"unknown arm(s) {unknown}; choose from {ARMS}")
    controls = list(controls or ())
    if any(c < 0 or c == 42 for c in controls) or len(set(controls)) < len(controls):
        raise UserError(f"control seeds {controls}: need distinct non-negative seeds other "
                        "than 42 (the arms' seed)")
    to_train = set(arms) | {f"control-s{c}" for c in controls} if train else set()
    controls += sorted(int(k[len("control-s"):]) for k in (saved or {}).get("arms", {})
                       if is_control(k) and int(k[len("control-s"):]) not in controls)
    names = {arm: family.run_name("sink", arm=arm) for arm in ARMS}
    names.update({f"control-s{c}": family.run_name("base", seed=c) for c in controls})
    wanted = list(names)  # the baseline first: its tokenizer serves every run
    specs = {key: family.spec(name, runs, fam)[0] for key, name in names.items()}
    tc = specs["baseline"]
    base_corpus = family.corpus("base", fam)
    records = {"settings": s, "runs_dir": str(runs), "arms": {}, "missing_arms": [],
               "missing_controls": []}
    text, reuse = None, {}

    def read_text():
        nonlocal text, reuse
        text = windows_of(s, tc, base_corpus, family.tokenizer_path(runs), fam)
        reuse = reusable(saved, s, text["sha256"], specs)
        records.update({"windows": {k: text[k] for k in ("bos", "bos_id", "note")},
                        "text_sha256": text["sha256"],
                        "held_out_tokens": int(len(text["held"])),
                        "shifted_tokens": {k: int(len(v)) for k, v in text["shifted"].items()}})
        log(f"{text['note']}; held-out: {len(text['held']):,} tokens; shifted: "
            + ", ".join(f"{k} {len(v):,}" for k, v in text["shifted"].items())
            + (f"; saved measurements reused for {sorted(reuse)}" if reuse else ""))

    if bigram_backcopy.is_spec(base_corpus) or family.tokenizer_path(runs).is_file():
        read_text()
    # every run folder is checked first: one made with other settings stops the study
    done = {key: family.finished(name, runs, fam) for key, name in names.items()}
    if not (done["baseline"] or "baseline" in reuse or "baseline" in to_train):
        raise UserError(f"the baseline run {runs / names['baseline']} is not finished and no "
                        "saved measurement of it matches; run without --no-train (and with "
                        "the baseline among --arms) to train it")
    def keep_saved(keys) -> None:
        for key in keys:
            records["arms"][key] = reuse[key]
            log(f"{key}: saved measurement of {reuse[key]['measured']}")
        if keys:
            _report(records, s, on_arm, wanted)

    # Every saved measurement joins the records before the first save, so that no save (one
    # follows each arm) holds fewer arms than the record it replaces, even if the run stops.
    keep_saved([key for key in wanted if not done[key] and key in reuse])
    for key in wanted:
        name = names[key]
        if key in records["arms"]:
            continue
        if not done[key]:
            if key in reuse:  # found once the text was read (after the baseline trained)
                keep_saved([key])
                continue
            if key not in to_train:
                continue
            log(f"training/resuming {name} ...")
            family.ensure(name, runs, fam=fam)
        if text is None:
            read_text()
        records["arms"][key] = measure_arm(s, runs / name, text, specs[key], log)
        _report(records, s, on_arm, wanted)
    _report(records, s, None, wanted)
    return records


def reusable(saved: dict | None, s: dict, sha256: str, specs: dict) -> dict:
    """The arms of ``saved`` records measured with settings ``s``, on the evaluation tokens
    of digest ``sha256`` and with the training config ``specs[arm]`` their runs have now."""
    if not saved or saved.get("settings") != s or saved.get("text_sha256") != sha256:
        return {}
    return {arm: rec for arm, rec in saved.get("arms", {}).items()
            if arm in specs and "train_config" in rec
            and not settings_differences(rec["train_config"], specs[arm])}


def _report(records: dict, s: dict, on_arm, wanted: list[str]) -> None:
    """Order the arms as ``wanted`` (the baseline first), list the missing ones and hand the
    records to ``on_arm`` once they hold the baseline."""
    records["arms"] = arms = {k: records["arms"][k] for k in wanted if k in records["arms"]}
    records["missing_arms"] = [a for a in ARMS if a not in arms]
    records["missing_controls"] = [k for k in wanted if is_control(k) and k not in arms]
    if on_arm is not None and "baseline" in arms:
        on_arm(records)


def measure_arm(s: dict, folder: Path, text: dict, tc, log=progress) -> dict:
    """One finished run's record: Figure 12's sink rates of its last checkpoint, the
    emergence (sink rate and held-out perplexity) at every saved checkpoint and Table 7's
    perplexities, with the run's summary and training config (``log``: a line of results)."""
    held, shifted, bos, make, ppl = (text["held"], text["shifted"], text["bos_id"],
                                     text["make"], text["ppl"])
    sink_text = s.get("sink_text", "held_out")
    if sink_text != "held_out" and sink_text not in shifted:
        raise UserError(f"sink_text {sink_text!r} is not one of this family's texts: "
                        f"{['held_out', *shifted]}")
    sink_ids = held if sink_text == "held_out" else shifted[sink_text]
    rec = {"run": family.summary(folder.name, folder.parent),
           "train_config": run_folder.read_run_info(folder)["train_config"],
           "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    final = load_source(str(folder))
    rec["figure12"] = {str(eps): [r.to_json() for r in metric.sink_rates_over_lengths(
        final.params, final.cfg, sink_ids, s["lengths"], s["num_seqs"], eps, bos=bos,
        windows=make)] for eps in s["eps"]}
    T = s["emergence_T"]
    win = (make(T) if make is not None else
           metric.bos_windows(sink_ids, T, s["num_seqs"], seed=T, bos=bos))
    rec["emergence"] = []
    for step in [0] + run_steps(folder):
        m = load_source(f"{folder}@{step}")
        r = metric.measure_sinks(m.params, m.cfg, win, s["eps"][0])
        rec["emergence"].append({"step": step, "tokens": step * tc.batch_size * tc.seq_len,
                                 "sink_rate": r.rate, "sink_rate_se": r.rate_se,
                                 "sink_rate_of_mean_alpha": r.rate_of_mean_alpha,
                                 "max_alpha": float(r.alpha_LH.max()),
                                 "mean_alpha": float(r.alpha_LH.mean()),
                                 "held_out": perplexity(m.params, m.cfg, **ppl(held, 1))})
    rec["table7"] = {"held_out": perplexity(final.params, final.cfg, **ppl(held, 1))}
    for k, ids in shifted.items():
        rec["table7"][k] = perplexity(final.params, final.cfg, **ppl(ids, 2))
    last = rec["figure12"][str(s["eps"][0])][-1]
    log(f"{folder.name}: sink rate at T={last['T']} {last['sink_rate']:.3f}; ppl "
        + ", ".join(f"{k} {v['ppl']:.1f}" for k, v in rec["table7"].items()))
    return rec


def share_vocabulary(runs: Path, committed: Path) -> None:
    """Keep the family's vocabulary with the study's records: if ``committed`` (a
    tokenizer.json kept beside them) exists, place it in ``runs`` for every run to use
    (:func:`family.vocabulary`); if not, and base-s42 has trained its own, copy that to
    ``committed``. A runs folder holding another vocabulary stops the study."""
    runs, committed = Path(runs), Path(committed)
    own = run_folder.tokenizer_path(runs / "base-s42")
    if not committed.is_file():
        if own.is_file():
            files.write_text(committed, own.read_text())
        return
    want = committed.read_text()
    for f in (runs / family.SHARED_VOCABULARY, own):
        if f.is_file() and f.read_text() != want:
            raise UserError(f"{f} is another vocabulary than the study's committed {committed}; "
                            "its runs cannot be paired with the saved measurements: use "
                            "another --runs-dir")
    if not (runs / family.SHARED_VOCABULARY).is_file():
        files.write_text(runs / family.SHARED_VOCABULARY, want)


def figure(records: dict, s: dict):
    from bornbiased_jax.plots import plt

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2))
    eps0 = str(s["eps"][0])
    arms = [a for a in records["arms"] if not is_control(a)]
    ctls = [a for a in records["arms"] if is_control(a)]
    for arm, rec in records["arms"].items():
        # one colour per arm in every panel; the seed controls dashed, in shades of grey
        style = (dict(color=str(0.35 + 0.4 * ctls.index(arm) / max(1, len(ctls) - 1)),
                      ls="--", label=arm) if is_control(arm) else
                 dict(color=f"C{arms.index(arm) % 10}", ls="-", label=arm))
        rs = rec["figure12"][eps0]
        axes[0].errorbar([r["T"] for r in rs], [r["sink_rate"] for r in rs],
                         yerr=[2 * r["sink_rate_se"] for r in rs], fmt="o", capsize=3, **style)
        em = rec["emergence"]
        axes[1].errorbar([e["step"] for e in em], [e["sink_rate"] for e in em],
                         yerr=[2 * e["sink_rate_se"] for e in em], fmt="o", capsize=2, **style)
        axes[2].plot([e["step"] for e in em], [e["max_alpha"] for e in em], "o", **style)
        conv = convergence(rec, records["arms"]["baseline"]) if arm != "baseline" else []
        if conv:
            axes[3].errorbar([c["step"] for c in conv], [c["diff"] for c in conv],
                             yerr=[2 * c["se"] for c in conv], fmt="o", capsize=2, **style)
    axes[0].set_xscale("log", base=2)
    axes[0].set_xticks(s["lengths"], [str(t) for t in s["lengths"]])
    axes[0].set(xlabel="sequence length T", ylabel=f"sink rate (eps = {eps0})",
                title=f"Figure 12: final checkpoints, {sink_text_name(s)} text", ylim=(-0.03, 1.03))
    axes[1].set(xlabel="training step", ylabel=f"sink rate at T = {s['emergence_T']}",
                title="Emergence over checkpoints (+- 2 SE)", ylim=(-0.03, 1.03))
    axes[2].axhline(float(eps0), color="k", ls=":", lw=1, label=f"eps = {eps0}")
    axes[2].set(xlabel="training step", ylabel="largest head alpha^1 (mean over windows)",
                title=f"Strongest first-token head, T = {s['emergence_T']}")
    axes[3].axhline(0.0, color="k", ls=":", lw=1, label="baseline")
    axes[3].set(xlabel="training step", ylabel="held-out log-ppl minus baseline",
                title="Convergence, paired with the baseline (+- 2 SE)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
