"""What the level table measured the matched leg's default slack on, and the sentence a row that
applies that default to another model states beside the model's own training.

The level table (experiments/lineage/level_claims.py) fits the slack between two trained models
(units per layer pair) on small models of the level families, each trained on a fixed number of
tokens, and the default is its largest fit. A released model (SmolLM2-135M, Gemma 3 270M) was
trained on millions of times as many: a row that applies the default to it puts the tokens the
cells were trained on beside the model's own (:func:`extrapolation`), so a reader sees that the
default is extrapolated there, not measured.

A cell's training comes from the records: its own ``train`` settings in the level record
(steps, global batch, T, vocabulary: ``experiments.lineage.level`` keeps them), else its steps
from the level record with the global batch, T and vocabulary of the seed family's training
record (results/records/training/seed_family.json, :data:`FAMILY_RECORD`), whose schedule every
cell shares (experiments/lineage/level_families.py changes only the shape): when the cell's
steps are not the family record's, its tokens are unknown (None).
"""

from __future__ import annotations

import math

FAMILY_RECORD = "seed_family"  # the training record of the 32-seed family (cell L2-F176)
# the tests whose matched leg, between two trained models, applies the default slack
DEFAULT_SLACK_TESTS = ("any_pair", "matched")


def cells_training(level: dict, family: dict | None = None) -> dict[str, dict | None]:
    """{cell: {"steps", "batch_size", "seq_len", "vocab_size", "tokens"}, or None where the
    records do not give it} of the level record ``level``; ``family``: the seed family's
    training record (module docstring)."""
    out = {}
    for name, c in level["records"].get("raw", {}).get("cells", {}).items():
        t = c.get("train")
        if t is None and family is not None:
            tc = family["run"]["train_config"]
            if tc["steps"] == c.get("steps"):
                t = {"steps": c["steps"], "batch_size": tc["batch_size"],
                     "seq_len": tc["seq_len"], "vocab_size": family["run"]["data"]["vocab_size"]}
        out[name] = None if t is None else {**t, "tokens": t["steps"] * t["batch_size"]
                                            * t["seq_len"]}
    return out


def tokens_text(x: float) -> str:
    """'256,000' below a billion; '1.5 billion', '2 trillion' above."""
    for unit, scale in (("trillion", 1e12), ("billion", 1e9)):
        if x >= scale:
            return f"{x / scale:g} {unit}"
    return f"{int(x):,}"


def range_text(training: dict[str, dict | None]) -> str | None:
    """The cells' training tokens per model: '256,000' when every cell's are that, '100,000 to
    256,000' otherwise; None when no cell's are known."""
    known = sorted({t["tokens"] for t in training.values() if t})
    if not known:
        return None
    text = tokens_text(known[0]) + ("" if len(known) == 1 else f" to {tokens_text(known[-1])}")
    return text + ("" if all(training.values()) else " (where recorded)")


def schedule_text(training: dict[str, dict | None]) -> str:
    """How the cells' models were trained, grouped by schedule: '250 steps of 16 x 64 tokens,
    256,000 tokens per model, vocabulary 2,048' (cells named where they differ)."""
    groups: dict = {}
    for name, t in training.items():
        key = None if t is None else tuple(t[k] for k in ("steps", "batch_size", "seq_len",
                                                           "tokens", "vocab_size"))
        groups.setdefault(key, []).append(name)
    texts = []
    for key, names in groups.items():
        text = ("training not recorded" if key is None else
                f"{key[0]} steps of {key[1]} x {key[2]} tokens, {tokens_text(key[3])} tokens "
                f"per model, vocabulary {key[4]:,}")
        texts.append(text if len(groups) == 1 else f"{', '.join(names)}: {text}")
    return "; ".join(texts) or "not recorded"


def extrapolation(records: dict, model: str, lineage: dict | None = None) -> str:
    """What a row that applies the default slack between two trained models to ``model`` (a
    key of ``pretrained.PRETRAINING_TOKENS``: its pretraining tokens, per its model card)
    states: the slack and where it was measured (``records``: every record, the level records
    and the seed family's training record among them), beside the model's tokens, and their
    ratio. ``lineage``: the model's lineage record; where its pairs carry the law of training
    length's rule (``slack_rule``: records made since the slack became that law) the sentence
    is :func:`law_extrapolation`'s, else the level table's constant default's."""
    from experiments.common.pretrained import PRETRAINING_TOKENS

    rule = next((p["slack_rule"] for t in (lineage or {}).get("records", {}).get("tests", {})
                 .values() for p in t["pairs"] if p.get("slack_rule")), None)
    if rule is not None:
        return law_extrapolation(records, model, rule)
    tokens = PRETRAINING_TOKENS[model]
    level = records.get("lineage_level")
    if level is None:
        return (f"its matched leg between two trained models applies the default slack, which "
                f"the level table measures on small models (its record is missing here); "
                f"{model} was pretrained on {tokens_text(tokens)} tokens (its model card)")
    training = cells_training(level, records.get("training", {}).get(FAMILY_RECORD))
    known = [t["tokens"] for t in training.values() if t]
    cells = (f"cells of models trained {range_text(training)} tokens each" if known else
             "cells whose training tokens are not recorded")
    ratio = f", {_times(tokens / max(known))} as many as any cell's models" if known else ""
    return (f"its matched leg between two trained models applies the default slack "
            f"({level['records']['summary']['default_slack']} units per layer pair), the "
            f"largest the level table fitted, on {cells}; {model} was pretrained on "
            f"{tokens_text(tokens)} tokens (its model card){ratio}: the default is "
            f"extrapolated to it, not measured there" + long_failure(records))


def long_cells(cells: dict) -> list[dict]:
    """{"tokens", "units", "layers"} of each long cell in the law's fit (``cells``: the long
    record's cells; one whose record says ``"in_fit": false`` is not in it) at the most tokens per
    model measured there, before ``trained_slack.pareto`` drops the covered ones."""
    return [{"tokens": max(st["tokens"] for st in c["steps"].values()),
             "units": c["units"], "layers": c["layers"]}
            for c in cells.values() if c.get("in_fit", True) and c["steps"]]


def measured_cells(records: dict) -> list[dict]:
    """Where the law of training length was measured, cell by cell (``records``: every
    record): {"tokens", "units", "layers"} of each long cell in its fit, at the most tokens per
    model measured there (a cell whose record says ``"in_fit": false`` is not in it), and of
    each level-table cell at its recorded tokens; only the cells no other covers
    (``trained_slack.pareto``), as ``defaults.MATCHED_SLACK_MEASURED`` holds them."""
    from bornbiased_jax.fingerprint.methods.trained_slack import pareto

    long = records.get("lineage_level_long")
    out = long_cells(long["records"]["cells"]) if long else []
    level = records.get("lineage_level")
    if level is not None:
        training = cells_training(level, records.get("training", {}).get(FAMILY_RECORD))
        for name, c in level["records"]["summary"]["cells"].items():
            if training.get(name):
                out.append({"tokens": training[name]["tokens"], "units": c["units"],
                            "layers": c["layers"]})
    return pareto(out)


def law_extrapolation(records: dict, model: str, rule: dict) -> str:
    """The sentence of :func:`extrapolation` for a record whose matched leg applied the law of
    training length (``rule``: a pair's ``slack_rule``): its slack at the tokens it used, the
    tokens the law was measured up to (the long cells' record), the model's own."""
    from experiments.common.pretrained import MLP_WIDTH, PRETRAINING_TOKENS

    tokens = PRETRAINING_TOKENS[model]
    from bornbiased_jax.fingerprint.methods.trained_slack import shapes_text

    cells = measured_cells(records) if records.get("lineage_level_long") else []
    measured = max((c["tokens"] for c in cells), default=None)
    where = (f"fitted on unrelated same-data models trained up to {tokens_text(measured)} "
             f"tokens each ({shapes_text(cells)}, cell by cell; the level along training)"
             if measured else "fitted on the long level cells (their record is missing here)")
    ratio = f", {_times(tokens / measured)} as many" if measured else ""
    T = ("as given" if rule["tokens_given"] else "assumed: the most any public model card "
         "states")
    from bornbiased_jax.defaults import MATCHED_SLACK_LAW
    from bornbiased_jax.fingerprint.methods.trained_slack import law_terms

    by_tokens, by_width = law_terms(rule["tokens"], MLP_WIDTH[model])
    width = by_width > by_tokens and by_width == rule["slack"]
    term = (f", set by its width term, ceil({MATCHED_SLACK_LAW['share']:.4f} x "
            f"{MLP_WIDTH[model]:,}), above its tokens term's {by_tokens}" if width else "")
    return (f"its matched leg between two trained models applies the law of training "
            f"length's slack ({rule['slack']} units per layer pair at "
            f"{tokens_text(rule['tokens'])} tokens per model, {T}{term}), {where}; {model} was "
            f"pretrained on {tokens_text(tokens)} tokens (its model card){ratio}: the slack is "
            f"extrapolated to it, not measured there"
            + (width_extrapolation(records, MLP_WIDTH[model]) if width else "")
            + stale_slack([rule["slack"]], rule["tokens"], MLP_WIDTH[model]))


def width_extrapolation(records: dict, units: int) -> str:
    """The clause saying that a slack set by the law's width term rests on the fitted share of
    shared units holding at ``units``, and what the widest measured long cell shows: its own
    fitted slack (first half of its seeds) and its pairs' largest K, at its last checkpoint."""
    from bornbiased_jax.defaults import MATCHED_SLACK_LAW
    from experiments.common.level_fit import among, fit_slack, halves, k_max

    from bornbiased_jax.fingerprint.methods.trained_slack import law_terms

    said = (f"; at these tokens the slack is its width term's, which rests on the largest "
            f"fitted share of shared units ({MATCHED_SLACK_LAW['share']:.2%} of the MLP width) "
            f"taken to hold at MLP width {units:,}")
    long = records.get("lineage_level_long") or {}
    cells = [c for c in long.get("records", {}).get("cells", {}).values()
             if c.get("in_fit", True) and c.get("steps")]
    if not cells:
        return said + " (the long cells' record is missing here)"
    c = max(cells, key=lambda c: (c["units"], -c["layers"]))
    last = c["steps"][max(c["steps"], key=int)]
    head = (f"; the widest cell measured (MLP width {c['units']:,}, {c['layers']} layers, "
            f"{tokens_text(last['tokens'])} tokens per model)")
    if last.get("pairs"):
        fit = fit_slack(among(last["pairs"], halves(c["seeds"])[0]))
        K = k_max(last["pairs"])
        w = law_terms(last["tokens"], c["units"])[1]
        head += (f" fitted a slack of {fit} unit{'s' if fit != 1 else ''} and its pairs share "
                 f"at most {K} in any layer pair, where the width term gives {w}"
                 + (f", {w - K} above every pair measured there" if K < w else ""))
    return said + head + (f"; the share is not measured at this model's width, depth or tokens"
                          if c["units"] < units else
                          "; it is not measured at this model's depth or tokens")


def stale_slack(applied, tokens: float, units: int) -> str:
    """'' when every slack a record ``applied`` is the toolkit's default now (the law
    ``defaults.MATCHED_SLACK_LAW`` at ``tokens`` and MLP width ``units``); else the sentence
    saying the record was measured under an earlier law and what the default gives now (the
    law is refitted as the long level cells come in; the record's rows stand for the slack they
    applied until it is measured again)."""
    from bornbiased_jax.fingerprint.methods.trained_slack import law_units

    now = law_units(tokens, units)
    if set(applied) <= {now}:
        return ""
    return (f"; measured under an earlier fit of the law: the toolkit's default now gives "
            f"{now} units per layer pair there (at {tokens_text(tokens)} tokens, MLP width "
            f"{units:,}), so these rows stand for the slack they applied until measured again")


def long_failure(records: dict) -> str:
    """'' unless the long cells' record (``lineage_level_long``) shows the default slack
    failing its level at some checkpoint; then the sentence that says where, from its rows
    (:func:`experiments.common.level_fit.default_rates`)."""
    from experiments.common.level_fit import default_rates

    long = records.get("lineage_level_long")
    if long is None:
        return ""
    bad = [r for c in long["records"]["cells"].values() for r in default_rates(c)
           if r["level"]["rejected"]]
    if not bad:
        return ""
    lo, hi = min(bad, key=lambda r: r["tokens"]), max(bad, key=lambda r: r["tokens"])
    return (f"; and on unrelated same-data seeds trained longer the default fails its level: "
            f"{lo['rate']['rate']:.0%} called related at {tokens_text(lo['tokens'])} tokens per "
            f"model, {hi['rate']['rate']:.0%} at {tokens_text(hi['tokens'])} (the level along "
            f"training), so this row's matched-leg rejections are no evidence of lineage")


def _times(r: float) -> str:
    """'7.8 million times' for 7.8e6 (a ratio of token counts)."""
    if r < 1e3:
        return f"{r:.3g} times"
    e = 3 * int(math.log10(r) // 3)
    word = {3: "thousand", 6: "million", 9: "billion"}.get(e)
    v = r / 10 ** e
    return (f"{v:.0f}" if v >= 100 else f"{v:.2g}") + f" {word} times" if word else \
        f"{r:.2g} times"


# a released model -> its long level cells (experiments/lineage/level_long.py): (cell, what of
# the model's shape it has, where it trains); a GPU's cell of its whole shape, a CPU's cell of
# its width
SHAPED_CELLS = {"SmolLM2-135M": (("L30-F1536-smollm2", "whole shape", "gpu"),
                                 ("L2-F1536-long", "width (d 576, 9 heads, 3 KV heads, F 1,536)"
                                                   " at 2 of its 30 layers, with a 2,048-token "
                                                   "vocabulary", "cpu"))}
SHAPED_COMMAND = ("python -m experiments lineage_level_long --train --measure --cells {cell} "
                  "--train-seconds 270 --cache \"$OUT\"/cache "
                  "--records \"$OUT\"")
CPU_COMMAND = ("nice -n 19 python -m experiments lineage_level_long --train` (resumable), then "
               "`python -m experiments lineage_level_long --measure")


def shaped_negatives(records: dict, model: str, label: str) -> list | None:
    """The rows beside a released model's lineage rows for unrelated same-data models of its
    shape trained from scratch, one per long level cell of :data:`SHAPED_CELLS` (a ``Claim``
    when measured, else a sentence saying how to measure it); ``None`` when the model has no
    such cell. See :func:`shaped_cell`."""
    cells = SHAPED_CELLS.get(model)
    if cells is None:
        return None
    return [shaped_cell(records, model, label, cell, what, device)
            for cell, what, device in cells]


def shaped_cell(records: dict, model: str, label: str, cell: str, what: str,
                device: str = "cpu"):
    """One cell's row: per checkpoint, the tokens each model saw, the shared units K per layer
    pair (mean, largest), the toolkit's default law's slack at those tokens and width, and how
    many pairs the matched leg then calls related. The pairs are out of sample: all of them for
    a cell outside the law's fit (a GPU's), the held-out half's for a cell in it. The rule is
    the margin: the largest K of any pair (``level_fit.k_decisive``) at most the law's slack at
    every checkpoint.
    With the cell's few seeds the rejection count bounds a false-positive rate only loosely,
    and the level rule has no power (the row says how little), so neither is the verdict. A
    ``Claim``, or a sentence when the cell is not measured yet."""
    from bornbiased_jax.defaults import MATCHED_SLACK_LAW
    from bornbiased_jax.fingerprint.methods.trained_slack import law_terms, law_units
    from bornbiased_jax.verdicts import BEYOND, Claim
    from experiments.common import level_rule
    from experiments.common.level_fit import (POWER_RATE, among, fit_slack, halves, k_max,
                                              k_table, rates)

    long = records.get("lineage_level_long")
    c = (long or {}).get("records", {}).get("cells", {}).get(cell)
    if c is None or not c["steps"]:
        how = (f"A GPU window trains and measures them: `{SHAPED_COMMAND.format(cell=cell)}` "
               f"(carry runs/smollm2/tokenizer.json), then its cache files replace the cell's "
               f"in results/records/lineage_level/long-gpu/ and `python -m experiments "
               f"lineage_level_long --measure` reads them." if device == "gpu" else
               f"They train on a CPU in the background: `{CPU_COMMAND}`.")
        return (f"Unrelated models of {model}'s {what}, trained from scratch on the same text "
                f"(the long level cell {cell}): not measured yet. {how}")
    in_fit = c.get("in_fit", True)
    seeds = halves(c["seeds"])[1] if in_fit else list(c["seeds"])
    said, over = [], []
    for step in sorted(c["steps"], key=int):
        st = c["steps"][step]
        pairs = among(st["pairs"], seeds)
        K = k_table(pairs)
        top = k_max(pairs)
        u = law_units(st["tokens"], c["units"], MATCHED_SLACK_LAW)
        r = rates(pairs, u)["0.01"]
        lo, hi = r["ci95"]
        said.append(f"{tokens_text(st['tokens'])} tokens (step {st['step']:,}): K per layer "
                    f"pair mean {K.mean():.2f}, largest {top} (as the test reads it); the law's "
                    f"slack {u}; called related {r['rejections']} of {r['pairs']} pairs (95 % "
                    f"Clopper-Pearson {lo:.2f}-{hi:.2f}, the pairs counted as independent, "
                    f"which they are not: too narrow)")
        if top > u:
            over.append(tokens_text(st["tokens"]))
    power = level_rule.power(POWER_RATE, 0.01, len(seeds), 1)
    prov = c.get("provenance")
    where = (f"; trained to step {prov['reached']:,} of {c['schedule_steps']:,} and measured "
             f"on {prov['device']}" if prov else "")
    sample = (f"the held-out half's {len(seeds)} seeds (the law was fitted on the other "
              f"{len(c['seeds']) - len(seeds)})" if in_fit else
              f"{len(seeds)} seeds, not in the law's fit (out of sample)")
    last = c["steps"][max(c["steps"], key=int)]
    u_last = law_units(last["tokens"], c["units"], MATCHED_SLACK_LAW)
    own = fit_slack(among(last["pairs"], halves(c["seeds"])[0])) if in_fit else None
    margin = u_last - k_max(among(last["pairs"], seeds))
    terms = law_terms(last["tokens"], c["units"], MATCHED_SLACK_LAW)
    which = "its width term" if terms[1] > terms[0] else "its tokens term"
    why = (f"rule: the largest K of any pair as the test reads it (its largest over layer pairs, "
           f"the smaller of its two directions') stays at or below the toolkit's default law's "
           f"slack at every checkpoint (the margin the verdict between two such models rests "
           f"on: a pair is called related only where its K exceeds it); "
           + (f"it exceeds the slack at {', '.join(over)} tokens" if over else
              f"it stays at or below at every checkpoint, by {margin} units at the last")
           + (f"; the cell's own fitted half needs a slack of {own} there, the law's ({which}) "
              f"lies {u_last - own} above it: the law holds here with room to spare, and the "
              f"margin shows how conservative it is at this shape"
              if own is not None and own < u_last else "")
           + f"; {sample}; the level rule over their pairs would flag a true rate of "
             f"{POWER_RATE:.0%} with probability {power:.3f}, so no rate is claimed "
             f"({c['layers']} layers, d {c['d_model']}, F {c['units']:,}; the same text, "
             f"batches and tokenizer for every seed{where})")
    return Claim(f"Unrelated models of {model}'s {what}, trained from scratch on the same "
                 f"text (the long level cell {cell}): the matched leg between two of them "
                 f"[{label}]", "-", "; ".join(said), BEYOND, why)
