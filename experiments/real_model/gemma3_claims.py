"""Verdict rules of the Gemma 3 study and its RESULTS.md section: pure functions of the records
of its model record (experiments/real_model/models/gemma3.json) ``gemma3_sinks``,
``gemma3_token_preference``, ``gemma3_init`` and ``gemma3_lineage``, and of the campaign's
paper-N record ``gemma3_init_n10k`` (results/records/paper/gemma3/).

Rules (each stated in its row):
  * sinks with ``<bos>`` (the file's tokenizer adds it): the real-model study's rule -- the 95 %
    lower bound of the per-sequence sink rate above :data:`SIGNIFICANT_RATE` at every length
    reproduces Figure 12's baseline premise; at some lengths partly; at none differs;
  * ``<bos>``'s part (beyond the paper): at each length the rate with ``<bos>`` exceeds the
    rate without by more than 1.96 standard errors of the difference (independent windows);
    the row counts the lengths where it does;
  * where the sinks are (measured): heads whose mean alpha^1 exceeds eps, in Gemma's global
    layers (every 6th) and in its sliding-window ones, at the shortest and longest length;
  * the trained model's token preference (beyond the paper): Table 1's Bonferroni binomial p
    below :data:`ALPHA`;
  * born biased at initialisation, per arm (full ``gemma3-270m``, QK-norm off, post-norms
    off, and in the campaign's N = 10,000 record the embedding scale off), at the CPU record's
    N and at Table 1(b)'s: Table 1(b)'s rule (:func:`experiments.common.preference.
    weak_preference`) -- the seeds' Bonferroni p pooled by Fisher's method below 0.05
    reproduces "a fresh model prefers a token"; not below, it differs where each seed's power
    against the paper's weakest preference (0.06 %, LLaMA-2) reaches 0.8 and is underpowered
    where not (N = 250: power 0.0005); beyond the paper, at N = 10,000, a spread preference:
    arg-max tokens that repeat more often than uniform draws' (a Poisson collision test, p below
    :data:`ALPHA`); Figure 2's contraction by the initialisation study's own rule
    (:func:`experiments.common.contraction.figure2_claim`, jackknife over blocks of sequences);
  * what each ablation changes (beyond the paper): the paired difference from the full arm
    seed by seed in the top-1 frequency and the fraction of distinct arg-max tokens (when the
    arms share N) and in the last block's mean cosine, a 95 % t interval over the seeds;
    "changes" where it excludes 0;
  * Table 6's question on Gemma 3: its honest descendants (LoRA, int8, int4, pruning) found and
    fresh initialisations not flagged reproduces at this scale; some found or one flagged
    partly; none differs. Renamed copies are beyond the paper, counted; the rotations are
    refused by the toolkit for a model with sandwich norms, and the row quotes why.
"""

from __future__ import annotations

import math

import numpy as np

from bornbiased_jax.fingerprint.methods.result import ALPHA
from bornbiased_jax.stats import seed_mean, t_quantile
from bornbiased_jax.verdicts import (BEYOND, DIFFERS, MEASURED, PARTLY, REPRODUCED,
                                     UNDERPOWERED, Claim, table)
from experiments.artifacts import earlier_matched
from experiments.common.contraction import figure2_claim
from experiments.common.level_range import DEFAULT_SLACK_TESTS, extrapolation
from experiments.common.paper_values import FIGURE12_BASELINE, paper_table1_summary
from experiments.common.preference import spread_preference, weak_preference
from experiments.common.pretrained import inputs_text
from experiments.common.pretrained import pairs_table as common_pairs_table
from experiments.common.pretrained import (SIGNIFICANT_RATE, Z95, found_by, index_ranges,
                                          lineage_verdict, runs_by_test, tested_by)
from experiments.real_model.claims import key_rule_note, run_command
from experiments.real_model.record import load

GEMMA3 = load("gemma3")  # its model record
NAMES, TITLE = GEMMA3.experiments, GEMMA3.title
COMMAND = GEMMA3.command()
MODEL = GEMMA3.label
HONEST, RENAMED = GEMMA3.honest, GEMMA3.renamed
UNRELATED = GEMMA3.unrelated
ARM_TEXT = {"gemma3-270m": "gemma3-270m", "no-qk-norm": "gemma3-270m without QK-norm",
            "no-post-norms": "gemma3-270m without post-norms",
            "no-embed-scale": "gemma3-270m without the embedding scale"}
PATTERN = 6  # every 6th layer global (Gemma 3)
CHANGE_TEXT = {"no-qk-norm": "switching QK-norm off", "no-post-norms": "switching the post-norms off",
               "no-embed-scale": "switching the embedding scale (sqrt(d_model)) off"}
PAPER_N_RECORD = "gemma3_init_n10k"  # the campaign's record at Table 1(b)'s N
PAPER_N_COMMAND = "python -m experiments.paper_scale gemma3-init-n10k"
GEMMA3_VOCAB = 262_144  # the gemma3-270m preset's vocabulary, for records that do not name it
PREFERENCE_VERDICT = {"holds": REPRODUCED, "fails": DIFFERS, "underpowered": UNDERPOWERED}


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %" if x >= 0.01 or x == 0 else f"{100 * x:.3f} %"


def _is_global(layer: int) -> bool:
    return (layer + 1) % PATTERN == 0


# --- sinks ---------------------------------------------------------------------------------------
def sinks_claims(rec: dict) -> list[Claim]:
    r = rec["records"]
    bos = sorted(r["bos"]["results"], key=lambda x: x["T"])
    nob = {x["T"]: x for x in r["no_bos"]["results"]}
    n = bos[0]["n_seqs"]
    where = (f"{n} windows per length of {', '.join(r['bos']['settings'].get('corpus') or ['?'])}"
             f", the file's own tokenizer, eps {bos[0]['eps']}")
    lows = [x["sink_rate"] - Z95 * x["sink_rate_se"] for x in bos]
    ok = [lo > SIGNIFICANT_RATE for lo in lows]
    verdict = REPRODUCED if all(ok) else PARTLY if any(ok) else DIFFERS
    rates = lambda xs: "; ".join(f"T = {x['T']}: {x['sink_rate']:.3f} ± {x['sink_rate_se']:.3f}"
                                 for x in xs)
    rows = [Claim(f"Attention sinks in a trained model, windows with `<bos>` (Figure 12's "
                  f"baseline; the file says add_bos_token) [{MODEL}]",
                  f"'{FIGURE12_BASELINE}' (Sec. 6.2.1, Figure 12; no numbers)",
                  f"sink rate {rates(bos)}", verdict,
                  f"rule: 95 % lower bound of the per-sequence sink rate above "
                  f"{SIGNIFICANT_RATE} at every length; it holds at {sum(ok)} of {len(ok)} "
                  f"({where})", "6.2.1")]
    both = [(x, nob[x["T"]]) for x in bos if x["T"] in nob]
    gaps = [(a["sink_rate"] - b["sink_rate"],
             math.sqrt(a["sink_rate_se"] ** 2 + b["sink_rate_se"] ** 2)) for a, b in both]
    held = [d > Z95 * se for d, se in gaps]
    rows.append(Claim(
        f"The same windows without `<bos>` (`--no-bos`): the sinks' dependence on the "
        f"beginning-of-sequence token [{MODEL}]", "-",
        f"sink rate {rates([b for _, b in both])}", BEYOND,
        f"rule: the rate with `<bos>` exceeds the rate without by more than 1.96 standard errors "
        f"of the difference; it does at {sum(held)} of {len(held)} lengths (differences "
        + ", ".join(f"{d:+.3f}" for d, _ in gaps) + ")"))
    for key, label in (("bos", "with `<bos>`"), ("no_bos", "without `<bos>`")):
        res = sorted(r[key]["results"], key=lambda x: x["T"])
        parts = []
        for x in (res[0], res[-1]):
            eps, A = x["eps"], np.asarray(x["alpha_LH"], np.float64)  # (L, H)
            glob = [l for l in range(len(A)) if _is_global(l)]
            slide = [l for l in range(len(A)) if not _is_global(l)]
            sinks = A > eps
            parts.append(
                f"T = {x['T']}: sink heads (mean alpha^1 > {eps}) in global layers "
                f"{int(sinks[glob].sum())} of {sinks[glob].size}, in sliding layers "
                f"{int(sinks[slide].sum())} of {sinks[slide].size}; mean alpha^1 global "
                f"{A[glob].mean():.3f}, sliding {A[slide].mean():.3f}; layers without a sink "
                f"head: {index_ranges([l for l in range(len(A)) if not sinks[l].any()]) or '-'}")
        rows.append(Claim(f"Which layers hold the sinks, {label}: Gemma's global layers "
                          f"(5, 11, 17) and its sliding-window ones [{MODEL}]", "-",
                          "; ".join(parts), MEASURED,
                          "layers 0-based; at T <= 512 a sliding layer's window (512) still "
                          "holds the first token for every query, so the two kinds differ here "
                          "by their RoPE base and their weights, not by what they can see"))
    return rows


def token_preference_claims(rec: dict) -> list[Claim]:
    r = rec["records"]
    rows = []
    for x in sorted(r["records"], key=lambda x: x["seq_len"]):
        text = r.get("token_text", {}).get(str(x["top1_id"]))
        favours = 10 ** x["log10_p"] < ALPHA
        rows.append(Claim(
            f"A trained model's preference on random token sequences (Table 1's protocol, "
            f"T = {x['seq_len']}, no `<bos>`) [{MODEL}]",
            f"at initialisation: {paper_table1_summary()}; nothing after training",
            f"top-1 token {x['top1_id']}" + (f" ({text!r})" if text else "") +
            f": {_pct(x['top1_freq'])} of N = {x['num_seqs']:,}, log10 p {x['log10_p']:.1f}",
            BEYOND, ("a preference: Bonferroni binomial p below " if favours else
                     "no preference detected: Bonferroni binomial p not below ") + f"{ALPHA}"))
    return rows


# --- initialisation ------------------------------------------------------------------------------
def _arm_record(init: dict, arm: str) -> dict:
    """An arm as the initialisation study's Figure 2 record."""
    s = init["settings"]
    return {"records": {"per_seed": init["arms"][arm]["per_seed"]},
            "run": {"settings": {"preset": ARM_TEXT.get(arm, arm), "seq_len": s["seq_len"],
                                 "num_seqs": _arm_n(init, arm)}}}


def _arm_n(init: dict, arm: str) -> int:
    return init["arms"][arm].get("num_seqs", init["settings"]["num_seqs"])


def paper_n_init(rec: dict) -> dict:
    """The campaign's N = 10,000 record (``gemma3_init_n10k``) in the shape of ``gemma3_init``'s
    records: settings, and per arm its N, blocks and per-seed rows (arms not started omitted)."""
    return {"settings": rec["run"]["settings"],
            "arms": {a: v for a, v in rec["records"].items() if v["per_seed"]}}


def paper_n_text(rec: dict | None) -> str:
    """Where the paper-N rows come from: the campaign piece's command, each arm's N and compute
    seconds, and the arms still to measure."""
    if rec is None:
        return (f"Initialisation at Table 1(b)'s N = 10,000: not measured yet "
                f"(`{PAPER_N_COMMAND}`, resumable).")
    run, target = rec["run"], rec["run"]["settings"].get("target_num_seqs")
    arms = "; ".join(f"{a}: N = {v['num_seqs']:,}" + (f" of {target:,}" if target and
                                                       v["num_seqs"] < target else "")
                     + f", {v.get('blocks_seconds', 0):.0f} s" for a, v in rec["records"].items())
    return (f"Initialisation at Table 1(b)'s N (rows marked [paper N: ...]): results/records/"
            f"paper/gemma3/{PAPER_N_RECORD}.json, measured in blocks of "
            f"{run['settings']['block']:,} sequences by `{PAPER_N_COMMAND}` (resumable; record "
            f"written by `{run['command']}`) on {run.get('device', '?')} "
            f"({run.get('machine', '?')}), jax {run.get('jax', '?')}; per arm its N and the "
            f"compute seconds of its blocks: {arms}.")


def init_claims(rec: dict, paper_n: bool = False) -> list[Claim]:
    """The rows of one initialisation record (``gemma3_init``, or with ``paper_n`` the
    campaign's ``gemma3_init_n10k``): per arm, born biased by Table 1(b)'s rule
    (:func:`experiments.common.preference.weak_preference`) and Figure 2's contraction; then
    the arms' paired differences."""
    init = paper_n_init(rec) if paper_n else rec["records"]
    s = init["settings"]
    vocab = s.get("vocab_size", GEMMA3_VOCAB)
    rows = []
    for arm, a in init["arms"].items():
        per, n = a["per_seed"], _arm_n(init, arm)
        scale = (f"{'paper N: ' if paper_n else ''}{len(per)} seeds, N = {n:,} uniform random "
                 f"token sequences of T = {s['seq_len']}, shared embedding (App. B.2)")
        state, why = weak_preference(
            [{**p, "num_seqs": n, "seq_len": s["seq_len"]} for p in per], vocab,
            ARM_TEXT.get(arm, arm))
        freq = seed_mean([p["top1_freq"] for p in per])
        rows.append(Claim(
            f"Born biased: a fresh {ARM_TEXT.get(arm, arm)} prefers a token (Table 1's "
            f"statistic, Table 1(b)'s rule) [{scale}]",
            paper_table1_summary(),
            f"top-1 frequency {_pct(freq.mean)} ± {_pct(freq.se)} over seeds ("
            + ", ".join(f"seed {p['seed']}: token {p['top1_id']} {p['top1_count']}/{n:,}"
                        for p in per) + ")",
            PREFERENCE_VERDICT[state], f"rule: {why}" + coincide_note(per, arm)))
        if paper_n:  # at N = 250 uniform draws collide 0.1 times: nothing to see
            hits, why = spread_preference([{**p, "num_seqs": n} for p in per], vocab, ALPHA)
            rows.append(Claim(
                f"A spread preference: the arg-max tokens of a fresh {ARM_TEXT.get(arm, arm)} "
                f"repeat more often than uniform draws' [{scale}]", "-",
                f"collisions beyond uniform at {hits} of {len(per)} seeds", BEYOND, why))
        fig2 = figure2_claim(_arm_record(init, arm))
        fig2.claim = f"Figure 2 / Finding 2.1 on a fresh {ARM_TEXT.get(arm, arm)} [{scale}]"
        rows.append(fig2)
    rows += arm_differences(init, paper_n)
    return rows


# Why an arm's seeds can coincide, where a test shows the mechanism: without post-norms the
# embedding (scaled by sqrt(d_model), tied to the head) dominates a fresh model's residual
# stream, and its arg-max is its last input token (tests/test_gemma3_study.py).
COINCIDE_WHY = {"no-post-norms": "without post-norms a fresh model's arg-max is its last input "
                                 "token (the sqrt(d_model)-scaled embedding, tied to the head, "
                                 "dominates the residual stream; tests/test_gemma3_study.py), "
                                 "so its arg-max tokens are the probe's last tokens, uniform "
                                 "draws shared by every seed"}


def coincide_note(per: list[dict], arm: str) -> str:
    """'' unless every seed of the arm has the same arg-max token, count and number of distinct
    arg-max tokens (what the seeds differ in, the blocks' weights, does not reach the arg-max);
    then a sentence that says so, with the mechanism where one is known (:data:`COINCIDE_WHY`)."""
    keys = {(p["top1_id"], p["top1_count"], p.get("distinct_tokens")) for p in per}
    if len(per) < 2 or len(keys) > 1:
        return ""
    why = COINCIDE_WHY.get(arm)
    return (f"; the {len(per)} seeds coincide (the same arg-max token, count and distinct "
            f"tokens): the seeds' own weights do not reach the arg-max"
            + (f": {why}" if why else ""))


def arm_differences(init: dict, paper_n: bool = False) -> list[Claim]:
    """Per ablation arm: the paired difference from the full arm, seed by seed, in the top-1
    frequency, the fraction of distinct arg-max tokens (both depend on N: compared only when
    the arms share it) and the last block's mean cosine."""
    full = {p["seed"]: p for p in init["arms"]["gemma3-270m"]["per_seed"]}
    n_full = _arm_n(init, "gemma3-270m")
    rows = []
    for arm, a in init["arms"].items():
        if arm == "gemma3-270m":
            continue
        pairs = [(p, full[p["seed"]]) for p in a["per_seed"] if p["seed"] in full]
        n = _arm_n(init, arm)
        metrics = [("last block's mean cosine", lambda p, n: p["block_mean_cos"][-1])]
        if n == n_full:
            metrics = [("top-1 frequency", lambda p, n: p["top1_freq"]),
                       ("distinct arg-max fraction", lambda p, n: p["distinct_tokens"] / n)
                       ] + metrics
        parts, changed = [], []
        for what, f in metrics:
            d = seed_mean([f(x, n) - f(y, n_full) for x, y in pairs])
            if len(pairs) < 2 or not np.isfinite(d.se):
                parts.append(f"{what} {d.mean:+.4f} (one seed: no interval)")
                continue
            half = t_quantile(len(pairs) - 1) * d.se
            if abs(d.mean) > half:
                changed.append(what)
            parts.append(f"{what} {d.mean:+.4f} ± {half:.4f}")
        at = f"N = {n:,}" if n == n_full else f"N = {n:,} and {n_full:,}"
        rows.append(Claim(
            f"What {CHANGE_TEXT.get(arm, arm)} changes at initialisation: "
            f"{ARM_TEXT.get(arm, arm)} minus gemma3-270m, paired by seed [{at}"
            f"{', paper N' if paper_n else ''}]", "-", "; ".join(parts),
            BEYOND if len(pairs) >= 2 else UNDERPOWERED,
            f"rule: a 95 % t interval over {len(pairs)} seeds ({len(pairs) - 1} df) that "
            f"excludes 0 is a change; "
            + (f"it changes the {' and the '.join(changed)}" if changed
               else "no change detected")
            + ("" if n == n_full else "; the top-1 frequency and the distinct fraction depend "
               "on N and are compared once the arms share it")))
    return rows


# --- lineage -------------------------------------------------------------------------------------
def lineage_claims(rec: dict, slack_note: str = "") -> list[Claim]:
    """Table 6's rows; ``slack_note`` (``level_range.extrapolation``) is added to the rows of the
    tests that apply the default slack between two trained models."""
    r = rec["records"]
    rows = []
    for test, run in runs_by_test(r):
        pairs = run["pairs"]
        honest, found = tested_by(pairs, HONEST, test), found_by(pairs, HONEST, test)
        flagged, unrelated = found_by(pairs, UNRELATED, test), tested_by(pairs, UNRELATED, test)
        renamed_found, renamed = found_by(pairs, RENAMED, test), tested_by(pairs, RENAMED, test)
        if not honest:
            continue
        # the same rule as SmolLM2's rows: the negatives' number and kind must bound the level
        neg = [{"name": n, "kind": "init", "trained_steps": 0, "same_data": False}
               for n in unrelated]
        verdict, why = lineage_verdict(len(found), len(honest), neg, flagged)
        rows.append(Claim(
            f"Table 6's question on Gemma 3: its descendants found, fresh initialisations not, "
            f"by the {test} test [{MODEL}]", "every descendant found (Table 6)",
            f"honest edits found {len(found)} of {len(honest)}"
            + (f" (missed: {', '.join(n for n in honest if n not in found)})"
               if len(found) < len(honest) else "")
            + f"; fresh initialisations called related {len(flagged)} of {len(unrelated)}"
            + f"; renamed copies found {len(renamed_found)} of {len(renamed)}", verdict,
            f"{why}; honest edits: {', '.join(HONEST)}; alpha {ALPHA}; "
            f"{inputs_text(run, test)}, T = {run['settings']['seq_len']}, "
            f"{run['settings']['input']} inputs"
            + (f"; {earlier_matched(r)}" if earlier_matched(r) and test != "permutation"
               else "")
            + (f"; {slack_note}" if slack_note and test in DEFAULT_SLACK_TESTS else "")))
    refused = {n: s for n, s in r.get("suspects", {}).items() if "refused" in s}
    if refused:
        rows.append(Claim(
            f"Rotated copies (residual rotation, QuaRot) of a model with sandwich norms "
            f"[{MODEL}]", "-", "refused: " + ", ".join(refused), MEASURED,
            next(iter(refused.values()))["refused"]))
    return rows


def pairs_table(rec: dict) -> str:
    """Every suspect's p-value under every test."""
    what = rec["records"].get("suspects", {})

    def kind(n):
        return ("honest edit" if n in HONEST else "renamed" if n in RENAMED
                else "fresh initialisation" if n in UNRELATED else "?")

    return common_pairs_table(rec, kind, lambda n: what.get(n, {}).get("what", ""))


def section(records: dict, command: str, model=GEMMA3) -> str | None:
    if not any(n in records for n in NAMES):
        return None
    rows = []
    for name, fn in (("gemma3_sinks", sinks_claims),
                     ("gemma3_token_preference", token_preference_claims),
                     ("gemma3_init", init_claims),
                     ("gemma3_lineage", lambda rec: lineage_claims(
                         rec, extrapolation(records, "Gemma 3 270M", rec)))):
        if name in records:
            rows += fn(records[name])
        if name == "gemma3_init" and PAPER_N_RECORD in records.get("paper", {}):
            rows += init_claims(records["paper"][PAPER_N_RECORD], paper_n=True)
    lines = [f"## {TITLE}", "",
             f"Generated from results/records/{model.study}/ (written by "
             f"`{run_command(records, NAMES, command)}`; the model is {model.source} and "
             f"named in each record by its sha256; fresh initialisations are the "
             f"`{model.preset}` preset). Each command ran as a user types it, at CPU scale (the "
             "sizes are in each row); commands and wall times below."
             + key_rule_note(records, "gemma3_lineage"), "", table(rows)]
    for n in NAMES:
        if n not in records:
            lines += ["", f"Not measured yet: {n} (`{command}`)."]
            continue
        r = records[n]["records"]
        runs = ([r[k] for k in ("bos", "no_bos") if k in r] or
                ([r] if "command" in r else list(r.get("tests", {}).values())))
        for x in runs:
            if "command" in x:
                w = x.get("wall_seconds")
                lines += ["", f"`{x['command']}`" + ("" if w is None else f" ({w:.0f} s)")]
        if n == "gemma3_init":
            arms = r["arms"]
            lines += ["", "Initialisation arms (Python API, `blockwise_sweep` of the last-token "
                          "probe; compute seconds of their blocks): "
                      + "; ".join(f"{a}: {v['seconds']:.0f} s" for a, v in arms.items())]
            lines += ["", paper_n_text(records.get("paper", {}).get(PAPER_N_RECORD))]
    if "gemma3_lineage" in records:
        lines += ["", "Every pair: p of each test (* below alpha = 0.01):", "",
                  pairs_table(records["gemma3_lineage"])]
    return "\n".join(lines)
