"""Verdict rules of the real-model study and a model's RESULTS.md section: pure functions of a
model record's records (SmolLM2-135M-Instruct's ``smollm2_sinks``, ``smollm2_token_preference``
and ``smollm2_lineage``; any other model's ``<name>_...``), each function given the model
record (:mod:`experiments.real_model.record`: its label, its descendants by kind, its
negatives; SmolLM2's by default). Gemma 3's section adds rows of its own
(:mod:`experiments.real_model.gemma3_claims`).

Rules (each stated in its row):
  * sinks: a layer-and-head sink rate (alpha^1 > eps, per sequence) whose 95 % lower bound
    (mean - 1.96 SE over sequences) exceeds :data:`SIGNIFICANT_RATE` at every length measured
    reproduces Figure 12's "consistently significant" baseline; at some lengths: partly; at none:
    differs;
  * token preference after training (beyond the paper, which measures it at initialisation):
    a preference where Table 1's Bonferroni binomial p is below :data:`ALPHA`, reported beside
    the paper's initialisation frequencies (quoted from the paper-values table the Table 1
    rules use, ``common.paper_values.PAPER_TABLE1``);
  * Table 6 on a real model: per test, the weight-derived descendants found at
    :data:`ALPHA` and the unrelated models (the negatives) called related. Finding every
    descendant says something only if the test does not call unrelated models related too,
    and a few negatives bound that rate only loosely (0 of 3 flagged: below 0.71, 95 %
    Clopper-Pearson), more loosely still when they are weak: an untrained initialisation is
    far easier to tell apart than a model trained from scratch on the descendants' own data.
    So the negatives are weighed by kind (:func:`negatives`: 'init', or 'trained' for
    ``trained_steps`` on the same data as the fine-tunes or not), and the rule is
    (:func:`lineage_verdict`): every honest edit (fine-tunes, weight quantization, pruning)
    found, no negative flagged, and the trained negatives enough to bound the false-positive
    rate below :data:`FPR_BOUND` (95 % Clopper-Pearson upper bound over them; 0 of
    :func:`negatives_needed` flagged) with at least one on the descendants' data: reproduced;
    every honest edit found and no negative flagged but the negatives too few or too weak to
    bound the rate: consistent, underpowered; some found, or a negative flagged: partly;
    none: differs. The rule weighs the negatives' number, kind and data, not their depth or
    training length: each row states every kind's depth and training tokens (from the
    record: :func:`negatives`), and a reproduced row says that its bound is for unrelated
    models like them, not for ones trained as long as the base. The renamed and rotated
    copies are beyond the paper: each row says how many each test found.
"""

from __future__ import annotations

from experiments.artifacts import earlier_matched

import re

from bornbiased_jax.verdicts import (BEYOND, DIFFERS, MEASURED, PARTLY, REPRODUCED, UNTESTABLE,
                                     Claim, table)

from bornbiased_jax.fingerprint.methods.result import ALPHA
from experiments.real_model.record import LEGACY_KEY_RULE, LEGACY_KEY_TEXT, key_rules, load
from experiments.common.level_range import DEFAULT_SLACK_TESTS, extrapolation, shaped_negatives
from experiments.common.level_range import tokens_text
from experiments.common.pretrained import PRETRAINING_TOKENS, inputs_text
from experiments.common.pretrained import pairs_table as common_pairs_table
from experiments.common.pretrained import (FPR_BOUND, SIGNIFICANT_RATE, Z95,  # noqa: F401
                                          found_by, index_ranges, lineage_verdict,
                                          negatives_needed, runs_by_test, tested_by)
from experiments.common.paper_values import paper_table1_summary
from experiments.common.paper_values import PAPER_TABLE6, paper_table6_range
from experiments.common.paper_values import FIGURE12_BASELINE, paper_table1_summary

SMOLLM2 = load("smollm2")  # the default model record of every function here
HONEST, RENAMED = SMOLLM2.honest, SMOLLM2.renamed
# shape-changed copies (fingerprint.edits.derivatives.SHAPES): MLP width, depth, vocabulary
SHAPED = SMOLLM2.shaped
TEST_NAMES = {"any_pair": "any-pair verdict (permutation and matched at alpha/2 each: "
                          "fingerprint's default for two released checkpoints)",
              "permutation": "permutation (exact, token inputs)",
              "matched": "matched (gated-MLP units, robust to renamings and rotations)",
              "paper": "paper (Algorithm 1, Gaussian inputs)",
              "official": "official (the authors' released code)"}
MATCHED_TESTS = ("any_pair", "matched", "matched_init")  # the tests the matched statistic decides
MODEL = SMOLLM2.label
# the unrelated models of a record written before its negatives were (the first SmolLM2
# record's): the models trained from scratch and the unrelated sources
UNRELATED = (*SMOLLM2.trained_negatives, *SMOLLM2.unrelated)


def base_training(model=SMOLLM2) -> str:
    """How the base was trained, beside what the negatives' bound covers (lineage_verdict):
    its pretraining tokens per its model card, where the record names the card."""
    if model.released_as not in PRETRAINING_TOKENS:
        return ""
    return (f"{model.released_as}: pretrained on "
            f"{tokens_text(PRETRAINING_TOKENS[model.released_as])} tokens, per its model card")


BASE_TRAINING = base_training()


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def sinks_claims(rec: dict, model=SMOLLM2) -> list[Claim]:
    MODEL = model.label
    r = rec["records"]
    res = sorted(r["results"], key=lambda x: x["T"])
    lows = [x["sink_rate"] - Z95 * x["sink_rate_se"] for x in res]
    ok = [lo > SIGNIFICANT_RATE for lo in lows]
    verdict = REPRODUCED if all(ok) else PARTLY if any(ok) else DIFFERS
    ours = "; ".join(f"T = {x['T']}: {x['sink_rate']:.3f} ± {x['sink_rate_se']:.3f}"
                     for x in res)
    floor = "; ".join(f"{x['T']}: {_mean(x['alpha_LH']):.3f} vs {x['alpha_floor']:.4f}"
                      for x in res)
    n = res[0]["n_seqs"]
    why = (f"rule: 95 % lower bound of the per-sequence sink rate (eps {res[0]['eps']}) above "
           f"{SIGNIFICANT_RATE} at every length; it holds at {sum(ok)} of {len(ok)} lengths "
           f"({n} windows each of {', '.join(r['settings'].get('corpus') or ['?'])}, "
           f"{'with' if r['settings'].get('bos_prepended') else 'no'} BOS)")
    rows = [Claim(f"Attention sinks in a trained model (Sec. 6.2's premise, Gu et al.; "
                  f"Figure 12's baseline) [{MODEL}]",
                  f"'{FIGURE12_BASELINE}' (Sec. 6.2.1, Figure 12; no numbers)",
                  f"sink rate {ours}", verdict, why, "6.2.1")]
    last = res[-1]
    L = len(last["alpha_LH"])
    sink_layers = [l for l, heads in enumerate(last["alpha_LH"])
                   if any(a > last["eps"] for a in heads)]
    none = [l for l in range(L) if l not in sink_layers]
    best = max(((a, l, h) for l, heads in enumerate(last["alpha_LH"])
                for h, a in enumerate(heads)))
    rows.append(Claim(
        f"Where the sinks are, and alpha^1 against the uniform floor 1/T [{MODEL}]", "-",
        f"mean alpha^1 vs 1/T: {floor}; at T = {last['T']} a head with mean alpha^1 > "
        f"{last['eps']} in {len(sink_layers)} of {L} layers (none in layers "
        f"{index_ranges(none) or '-'}); strongest: layer {best[1]}, head {best[2]} "
        f"(alpha^1 {best[0]:.4f})", MEASURED,
        "layers and heads 0-based; per-layer, per-head values in the record"))
    return rows


def _mean(alpha_LH) -> float:
    vals = [a for heads in alpha_LH for a in heads]
    return sum(vals) / len(vals)


def token_preference_claims(rec: dict, model=SMOLLM2) -> list[Claim]:
    MODEL = model.label
    r = rec["records"]
    rows = []
    for x in sorted(r["records"], key=lambda x: x["seq_len"]):
        p = 10 ** x["log10_p"]
        favours = p < ALPHA
        text = r.get("token_text", {}).get(str(x["top1_id"]))
        rows.append(Claim(
            f"A trained model's preference on random token sequences (Table 1's protocol, "
            f"T = {x['seq_len']}) [{MODEL}]",
            f"at initialisation: top-1 {paper_table1_summary()}; nothing after training",
            f"top-1 token {x['top1_id']}" + (f" ({text!r})" if text else "") +
            f": {_pct(x['top1_freq'])} of N = {x['num_seqs']:,}, log10 p {x['log10_p']:.1f}",
            BEYOND,
            ("a preference: Bonferroni binomial p below " if favours else
             "no preference detected: Bonferroni binomial p not below ") + f"{ALPHA}"))
    return rows


def negatives(r: dict, model=SMOLLM2) -> list[dict]:
    """The unrelated models of a lineage record, each {"name", "kind": "init" | "trained" |
    "unknown", "trained_steps", "same_data", "layers", "tokens"} (same_data: trained on the
    text the descendants were fine-tuned on; layers: its depth, None where the record does not
    say; tokens: the tokens it was trained on, 0 for an initialisation, None where the record
    does not say). Read from the record's ``negatives`` list (``measure.negatives`` writes it);
    a record written before that list was kept (the first SmolLM2 record) has them derived from
    what it holds: a ``preset:`` suspect is an untrained initialisation, a built suspect whose
    description says 'trained N steps on the same text' (``suspects``' ``what``) a model
    trained N steps on the descendants' data, and the names of :data:`UNRELATED` not found
    either way are 'unknown' (counted as untrained). The depth is the one the matched test
    measured (a pair's ``layers``), else an 'N-layer' in the description; the tokens are the
    entry's own, else its description's 'N steps of B x T tokens'."""
    if "negatives" in r:
        return _depth_and_tokens(r, [dict(n) for n in r["negatives"]])
    names = list(dict.fromkeys(p["suspect"] for run in r["tests"].values()
                               for p in run["pairs"]
                               if p["suspect"] not in model.honest + model.renamed))
    out = []
    for n in names:
        what = r.get("suspects", {}).get(n, {}).get("what", "")
        m = re.search(r"trained (\d+) steps", what)
        if n.startswith("preset:"):
            out.append({"name": n, "kind": "init", "trained_steps": 0, "same_data": False})
        elif m:
            out.append({"name": n, "kind": "trained", "trained_steps": int(m.group(1)),
                        "same_data": "same text" in what or "same shape and data" in what})
        else:
            out.append({"name": n, "kind": "unknown", "trained_steps": 0, "same_data": False})
    return _depth_and_tokens(r, out)


def _depth_and_tokens(r: dict, neg: list[dict]) -> list[dict]:
    """``neg`` (:func:`negatives`), each with its "layers" and "tokens" from the record ``r``
    where the entry lacks them."""
    depth = {p["suspect"]: p["layers"] for run in r["tests"].values() for p in run["pairs"]
             if "layers" in p}
    for n in neg:
        what = n.get("what") or r.get("suspects", {}).get(n["name"], {}).get("what", "")
        d = re.search(r"(\d+)-layer", what)
        t = re.search(r"(\d+) steps of (\d+) x (\d+) tokens", what)
        n.setdefault("layers", depth.get(n["name"], int(d.group(1)) if d else None))
        n.setdefault("tokens", 0 if n["kind"] == "init" else
                     int(t.group(1)) * int(t.group(2)) * int(t.group(3)) if t else None)
    return neg



def _table6_tokens() -> str:
    """The fine-tuning tokens of Table 6's suspects, as a range ('5M-500B')."""
    tokens = [t for t, _ in PAPER_TABLE6.values()]
    return f"{tokens[0]}-{tokens[-1]}"


def lineage_claims(rec: dict, slack_note: str = "", model=SMOLLM2) -> list[Claim]:
    """Table 6's rows; ``slack_note`` (``level_range.extrapolation``) is added to the rows of the
    tests that apply the default slack between two trained models."""
    MODEL, HONEST, RENAMED, SHAPED = model.label, model.honest, model.renamed, model.shaped
    r = rec["records"]
    rows = [Claim("Table 6: SeedPrint finds five released 7B descendants of Llama-2-7B "
                  f"(fine-tunes of {_table6_tokens()} tokens)", f"U p {paper_table6_range()}, all found", "-",
                  UNTESTABLE, "no 7B weights on this machine (nothing is downloaded from the "
                  "hub here) and a 7B forward pass on 2 CPU cores takes hours per pair; the "
                  "rows below ask the same question of a 135M model", "6.1.2")]
    negs = negatives(r, model)
    neg_names = [n["name"] for n in negs]
    for test, run in runs_by_test(r):
        pairs = run["pairs"]
        honest = tested_by(pairs, HONEST, test)
        found = found_by(pairs, HONEST, test)
        flagged = found_by(pairs, neg_names, test)
        unrelated = tested_by(pairs, neg_names, test)
        renamed_found = found_by(pairs, RENAMED, test)
        renamed = tested_by(pairs, RENAMED, test)
        if not honest:
            continue
        verdict, level = lineage_verdict(len(found), len(honest),
                                         [n for n in negs if n["name"] in unrelated], flagged,
                                         base=base_training(model))
        per_pair = run["wall_seconds"] / max(1, len(pairs))
        rows.append(Claim(
            f"Table 6's question on a real model: its descendants found, unrelated models "
            f"not, by the {TEST_NAMES.get(test, test)} test [{MODEL}]",
            "every descendant found (Table 6)",
            f"honest edits found {len(found)} of {len(honest)}"
            + (f" (missed: {', '.join(n for n in honest if n not in found)})"
               if len(found) < len(honest) else "")
            + f"; unrelated called related {len(flagged)} of {len(unrelated)}"
            + f"; renamed or rotated copies found {len(renamed_found)} of {len(renamed)}"
            + (f" ({', '.join(renamed_found)})" if renamed_found else "")
            + (f"; shape-changed copies found {len(found_by(pairs, SHAPED, test))} of "
               f"{len(tested_by(pairs, SHAPED, test))}" if tested_by(pairs, SHAPED, test) else ""),
            verdict,
            f"{level}; rule: all honest edits ({', '.join(HONEST)}) found, no negative "
            f"flagged at alpha {ALPHA}, and trained negatives, one on the descendants' data, "
            f"enough to bound the false-positive rate below {FPR_BOUND:g}; renamed/rotated "
            f"and shape-changed copies are beyond the paper; {inputs_text(run, test)}, "
            f"T = {run['settings']['seq_len']}, "
            f"{run['settings']['input']} inputs; {per_pair:.0f} s a pair on this 2-core CPU "
            f"(the whole command over its {len(pairs)} pairs, loading included; the tests' "
            f"commands run in one call of the study share the CPU)"
            + (f"; {earlier_matched(r)}" if earlier_matched(r) and test in MATCHED_TESTS
               else "")
            + (f"; {slack_note}" if slack_note and test in DEFAULT_SLACK_TESTS else "")))
    rows += localised_claims(r, model)
    return rows


def localised_claims(r: dict, model=SMOLLM2) -> list[Claim]:
    """Where the matched test says each shape-changed copy descends from: its SUSPECT layers
    attributed to a BASE layer (own p <= alpha / L), and the share of its copied layers
    attributed to their origin (a measurement: the derivative states the origins)."""
    run = next((run for t, run in runs_by_test(r) if t == "matched"), None)
    if run is None:
        return []
    shaped = [p for p in run["pairs"] if p["suspect"] in model.shaped and "localised" in p]
    if not shaped:
        return []
    per_pair = run["wall_seconds"] / max(1, len(run["pairs"]))
    return [Claim(
        f"Where {model.short or model.name}'s shape-changed copies descend from (the matched "
        f"test's localised table) [{model.label}]", "- (beyond the paper)",
        "; ".join(f"{p['suspect']}: {p['attributed_layers']} of {p['layers']} layers "
                  f"attributed, copied layers at their origin {p['localised']:.0%}"
                  for p in shaped),
        MEASURED, f"a layer is attributed when its own p is at most alpha / L; the origins "
                  f"are the derivatives' own (fingerprint.edits.derivatives.SHAPES); "
                  f"{per_pair:.0f} s a pair at the command's defaults (n = "
                  f"{run['settings']['n']}, T = {run['settings']['seq_len']})")]


def pairs_table(rec: dict, model=SMOLLM2) -> str:
    """Every suspect's p-value under every test."""
    what = rec["records"].get("suspects", {})
    negs = {x["name"]: x for x in negatives(rec["records"], model)}

    def kind(n):
        return ("honest edit" if n in model.honest else "renamed / rotated"
                if n in model.renamed else "shape-changed" if n in model.shaped
                else "unrelated" if n in negs else "?")

    return common_pairs_table(rec, kind, lambda n: what.get(n, {}).get(
        "what", "a fresh initialisation" if n.startswith("preset:") else ""))


def key_rule_note(records: dict, name: str) -> str:
    """The sentence the section adds where a lineage record's suspects were built by the
    earlier name hash (``record.key_rules``), naming them when the rules are mixed; '' when
    every suspect took keys.fold_in_name."""
    rules = key_rules(records.get(name, {}).get("records", {}).get("suspects", {}))
    old = rules.get(LEGACY_KEY_RULE)
    if not old:
        return ""
    which = "" if len(rules) == 1 else f" {', '.join(old)}"
    return f" The suspects{which} of {name} took their random keys from {LEGACY_KEY_TEXT}."


def run_command(records: dict, names, command: str) -> str:
    """The command that wrote the records ``names`` (the first one's ``run.command``), else
    ``command``."""
    return next((records[n]["run"]["command"] for n in names
                 if records.get(n, {}).get("run", {}).get("command")), command)


def section(records: dict, command: str, model=SMOLLM2) -> str | None:
    NAMES = model.experiments
    if not any(n in records for n in NAMES):
        return None
    sinks, sweep, lineage = (model.experiment(s) for s in ("sinks", "sweep", "lineage"))
    rows = []
    if sinks in records:
        rows += sinks_claims(records[sinks], model)
    if sweep in records:
        rows += token_preference_claims(records[sweep], model)
    if lineage in records:
        slack = (extrapolation(records, model.released_as, records[lineage])
                 if model.released_as in PRETRAINING_TOKENS else "")
        rows += lineage_claims(records[lineage], slack, model)
    shaped = (shaped_negatives(records, model.released_as, model.label) or []) \
        if lineage in records else []
    rows += [s for s in shaped if not isinstance(s, str)]
    lines = [f"## {model.title or model.label}", "",
             f"Generated from results/records/{model.study}/ (written by "
             f"`{run_command(records, NAMES, command)}`; the model is "
             f"{model.source or model.file} and named in each record by its sha256). Each step "
             "runs the toolkit's own command as a user types it; the commands and wall times "
             "are below." + key_rule_note(records, lineage), "",
             table(rows)]
    lines += [x for s in shaped if isinstance(s, str) for x in ("", s)]
    for n in NAMES:
        if n not in records:
            lines += ["", f"Not measured yet: {n} (`{command}`)."]
            continue
        r = records[n]["records"]
        cmds = ([r["command"]] if "command" in r else
                [t["command"] for t in r.get("tests", {}).values()])
        walls = ([r.get("wall_seconds")] if "command" in r else
                 [t["wall_seconds"] for t in r.get("tests", {}).values()])
        for c, w in zip(cmds, walls):
            lines += ["", f"`{c}`" + ("" if w is None else f" ({w:.0f} s)")]
    if lineage in records:
        lines += ["", "Every pair: p of each test (* below alpha = 0.01):", "",
                  pairs_table(records[lineage], model)]
    return "\n".join(lines)


COMMAND = SMOLLM2.command()
