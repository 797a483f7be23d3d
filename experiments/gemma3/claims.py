"""Verdict rules of the Gemma 3 study and its RESULTS.md section: pure functions of the records
``gemma3_sinks``, ``gemma3_token_preference``, ``gemma3_init`` and ``gemma3_lineage``.

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
    off): Table 1's statistic -- every seed's Bonferroni p below :data:`ALPHA` reproduces "a
    fresh model prefers a token", some seeds partly, none differs; Figure 2's contraction by
    the initialisation study's own rule (:func:`experiments.common.contraction.figure2_claim`,
    jackknife over blocks of sequences);
  * what QK-norm and the post-norms change (beyond the paper): per ablation, the paired
    difference from the full arm seed by seed in the top-1 frequency and in the last block's
    mean cosine, a 95 % t interval over the seeds; "changes" where it excludes 0;
  * Table 6's question on Gemma 3: its honest descendants (LoRA, int8, int4, pruning) found and
    fresh initialisations not flagged reproduces at this scale; some found or one flagged
    partly; none differs. Renamed copies are beyond the paper, counted; the rotations are
    refused by the toolkit for a model with sandwich norms, and the row quotes why.
"""

from __future__ import annotations

from experiments.artifacts import earlier_matched

import math

import numpy as np

from bornbiased_jax.stats import seed_mean, t_quantile
from bornbiased_jax.verdicts import (BEYOND, DIFFERS, MEASURED, PARTLY, REPRODUCED,
                                     UNDERPOWERED, Claim, table)
from experiments.common.contraction import figure2_claim
from bornbiased_jax.fingerprint.methods.result import ALPHA
from experiments.gemma3 import EXPERIMENTS as NAMES, TITLE
from experiments.common.pretrained import inputs_text
from experiments.common.pretrained import pairs_table as common_pairs_table
from experiments.common.pretrained import (SIGNIFICANT_RATE, Z95, found_by, index_ranges,
                                          lineage_verdict, runs_by_test, tested_by)
from experiments.common.paper_values import FIGURE12_BASELINE, paper_table1_summary

COMMAND = "python -m experiments.gemma3 --model gemma-3-270m-q4_k_m.gguf"
MODEL = "Gemma 3 270M (Q4_K_M GGUF)"
HONEST = ("lora", "int8", "int4-g32", "prune-50")
RENAMED = ("renamed", "signs-units")
UNRELATED = ("preset:gemma3-270m@1", "preset:gemma3-270m@2")
ARM_TEXT = {"gemma3-270m": "gemma3-270m", "no-qk-norm": "gemma3-270m without QK-norm",
            "no-post-norms": "gemma3-270m without post-norms"}
PATTERN = 6  # every 6th layer global (Gemma 3)
CHANGE_TEXT = {"no-qk-norm": "switching QK-norm off", "no-post-norms": "switching the post-norms off"}


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


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
                                 "num_seqs": s["num_seqs"]}}}


def init_claims(rec: dict) -> list[Claim]:
    init = rec["records"]
    s = init["settings"]
    scale = (f"{len(s['seeds'])} seeds, N = {s['num_seqs']} uniform random token sequences of "
             f"T = {s['seq_len']}, shared embedding (App. B.2)")
    rows = []
    for arm, a in init["arms"].items():
        per = a["per_seed"]
        sig = [10 ** p["log10_p"] < ALPHA for p in per]
        verdict = REPRODUCED if all(sig) else PARTLY if any(sig) else DIFFERS
        freq = seed_mean([p["top1_freq"] for p in per])
        rows.append(Claim(
            f"Born biased: a fresh {ARM_TEXT.get(arm, arm)} prefers a token (Table 1's "
            f"statistic) [{scale}]",
            paper_table1_summary(),
            f"top-1 frequency {_pct(freq.mean)} ± {_pct(freq.se)} over seeds ("
            + ", ".join(f"seed {p['seed']}: token {p['top1_id']} {p['top1_count']}/"
                        f"{s['num_seqs']}, log10 p {p['log10_p']:.1f}" for p in per) + ")",
            verdict, f"rule: every seed's Bonferroni binomial p below {ALPHA}; "
                     f"{sum(sig)} of {len(sig)} seeds"))
        fig2 = figure2_claim(_arm_record(init, arm))
        fig2.claim = f"Figure 2 / Finding 2.1 on a fresh {ARM_TEXT.get(arm, arm)} [{scale}]"
        rows.append(fig2)
    rows += arm_differences(init)
    return rows


def arm_differences(init: dict) -> list[Claim]:
    """Per ablation arm: the paired difference from the full arm, seed by seed."""
    full = {p["seed"]: p for p in init["arms"]["gemma3-270m"]["per_seed"]}
    rows = []
    for arm, a in init["arms"].items():
        if arm == "gemma3-270m":
            continue
        pairs = [(p, full[p["seed"]]) for p in a["per_seed"] if p["seed"] in full]
        parts, changed = [], []
        for what, f in (("top-1 frequency", lambda p: p["top1_freq"]),
                        ("last block's mean cosine", lambda p: p["block_mean_cos"][-1])):
            d = seed_mean([f(x) - f(y) for x, y in pairs])
            if len(pairs) < 2 or not np.isfinite(d.se):
                parts.append(f"{what} {d.mean:+.3f} (one seed: no interval)")
                continue
            half = t_quantile(len(pairs) - 1) * d.se
            if abs(d.mean) > half:
                changed.append(what)
            parts.append(f"{what} {d.mean:+.3f} ± {half:.3f}")
        rows.append(Claim(
            f"What {CHANGE_TEXT.get(arm, arm)} changes at initialisation: "
            f"{ARM_TEXT.get(arm, arm)} minus gemma3-270m, paired by seed", "-", "; ".join(parts),
            BEYOND if len(pairs) >= 2 else UNDERPOWERED,
            f"rule: a 95 % t interval over {len(pairs)} seeds ({len(pairs) - 1} df) that "
            f"excludes 0 is a change; "
            + (f"it changes the {' and the '.join(changed)}" if changed
               else "no change detected in either")))
    return rows


# --- lineage -------------------------------------------------------------------------------------
def lineage_claims(rec: dict) -> list[Claim]:
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
               else "")))
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


def section(records: dict, command: str) -> str | None:
    if not any(n in records for n in NAMES):
        return None
    rows = []
    for name, fn in (("gemma3_sinks", sinks_claims),
                     ("gemma3_token_preference", token_preference_claims),
                     ("gemma3_init", init_claims), ("gemma3_lineage", lineage_claims)):
        if name in records:
            rows += fn(records[name])
    lines = [f"## {TITLE}", "",
             "Generated from results/records/gemma3/ (written by "
             f"`{command}`; the model is the registry's gemma-3-270m-q4_k_m.gguf, joined from "
             "its split wheels by tests/fixtures/fetch_gemma3.sh and named in each record by "
             "its sha256; fresh initialisations are the `gemma3-270m` preset). Each command "
             "ran as a user types it, at CPU scale (the sizes are in each row); commands and "
             "wall times below.", "", table(rows)]
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
    if "gemma3_lineage" in records:
        lines += ["", "Every pair: p of each test (* below alpha = 0.01):", "",
                  pairs_table(records["gemma3_lineage"])]
    return "\n".join(lines)
