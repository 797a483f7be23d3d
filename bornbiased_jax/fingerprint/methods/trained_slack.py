"""The matched test's slack between two *trained* models: a law of training length.

Two independent models trained on similar text share some MLP units by function (the universal
neurons of Gurnee et al., 2024): units whose gate and up views both pick each other as partners.
The matched test between two trained models therefore asks whether the pair shares more doubly
matched units per layer pair than independent models may, ``slack`` units
(``matched.matched_test``). Unrelated same-data seeds share more units the longer they train
(RESULTS.md, "The matched leg's level along training", gives K per layer pair at every
checkpoint of every cell), so the slack is a law of the tokens T the longer-trained model saw
and of the MLP width F:

    u(T, F) = max(ceil(c + b log10 T), ceil(s F))

The slack is a calibration, not a bound on every pair: a cell's fitted slack is the smallest at
which its unrelated pairs reject at most alpha, and a pair of them may share a unit or two more
in some layer pair (RESULTS.md's law row says where), which the p-value P(K >= K_obs - slack)
does not find significant against chance matches.

``c`` and ``b``: the upper envelope of the slacks fitted on the first half of each long cell's
seeds at every checkpoint, regressed on log10 T (experiments/lineage/level_long_law.py); ``s``:
the largest of those fitted slacks as a share of the cell's width (the universal units are a
share of the width, 1-5 % in GPT-2). Judged on the other half of the seeds at every checkpoint,
the law's level is not rejected, by a rule of low power at the few held-out models there are
(RESULTS.md states it). The constants are :data:`defaults.MATCHED_SLACK_LAW`
(a test ties them to the record).

What a model was trained on is rarely stated by its file. ``tokens`` is the user's (``bornbiased
fingerprint --trained-tokens``, from the model cards); without it the law is taken at
:data:`defaults.MATCHED_TOKENS_ASSUMED`, the most tokens any public model card states, so the
default slack is the largest the law gives to a released model. That costs little power: a
descendant shares most of its units (hundreds per layer), and the slack removes tens.

Where it was measured (:data:`defaults.MATCHED_SLACK_MEASURED`): cell by cell, each cell's MLP
width, depth and the most tokens per model measured there. A pair is within it when one cell is
at least as long-trained, as wide and as deep; beyond that (every released model: billions to
trillions of tokens; or a width and a depth measured only in different cells) the slack is an
extrapolation, which :func:`beyond` names and the verdict line prints.
"""

from __future__ import annotations

import math

from bornbiased_jax.defaults import (MATCHED_SLACK_LAW, MATCHED_SLACK_MEASURED,
                                     MATCHED_TOKENS_ASSUMED)
from bornbiased_jax.errors import UserError


TOL = 1e-4


def law_terms(tokens: float, units: int, law: dict = MATCHED_SLACK_LAW) -> tuple[int, int]:
    """(the tokens term ceil(c + b log10 T), the width term ceil(s F)) of u(T, F) (module
    docstring); a law whose ``form`` is 'constant' (no detectable growth) has no tokens term
    beyond its intercept."""
    if not (math.isfinite(tokens) and tokens > 0):
        raise UserError(f"training tokens must be a positive number, got {tokens!r}")
    slope = 0.0 if law.get("form") == "constant" else law["slope"]
    # the fit's envelope touches a fitted slack exactly: a whole number, which the constants'
    # six decimals must not push over (TOL units is far below any count's noise)
    return (math.ceil(law["intercept"] + slope * math.log10(tokens) - TOL),
            math.ceil(law["share"] * units - TOL))


def law_units(tokens: float, units: int, law: dict = MATCHED_SLACK_LAW) -> int:
    """u(T, F), a whole number of units per layer pair: the larger of :func:`law_terms`."""
    return max(0, *law_terms(tokens, units, law))


def tokens_text(t: float) -> str:
    """'4.10 M', '2 T' (tokens)."""
    for unit, scale in (("T", 1e12), ("B", 1e9)):
        if t >= scale:
            return f"{t / scale:g} {unit}"
    return f"{t / 1e6:.2f} M"


def covers(cell: dict, tokens: float, units: int, layers: int) -> bool:
    """Whether a measured ``cell`` ({"tokens", "units", "layers"}) is at least as long-trained,
    as wide and as deep as a pair."""
    return tokens <= cell["tokens"] and units <= cell["units"] and layers <= cell["layers"]


def pareto(cells) -> list[dict]:
    """The cells that no other covers in tokens, width and depth, longest-trained first."""
    cells = [dict(c) for c in cells]
    keep = [c for c in cells
            if not any(o != c and covers(o, c["tokens"], c["units"], c["layers"])
                       for o in cells)]
    out = []
    for c in sorted(keep, key=lambda c: (-c["tokens"], c["units"], c["layers"])):
        if c not in out:
            out.append(c)
    return out


def shapes_text(cells) -> str:
    """'MLP width 344 x 2 layers to 4.10 M tokens, 344 x 12 layers to 2.56 M, ...': where a law
    was measured, cell by cell (:func:`pareto`)."""
    parts = [f"{c['units']:,} x {c['layers']} layers to {tokens_text(c['tokens'])}"
             + (" tokens" if i == 0 else "") for i, c in enumerate(pareto(cells))]
    return "MLP width " + ", ".join(parts)


def beyond(tokens: float, units: tuple[int, int], layers: tuple[int, int],
           measured=MATCHED_SLACK_MEASURED) -> list[str]:
    """What of a pair of trained models lies beyond where the law was measured, by name
    ('36 T training tokens per model (measured up to 4.10 M)', 'MLP width 1,536 with 12 layers
    trained 2.56 M tokens (measured: MLP width 344 x 12 layers to 2.56 M tokens)'); empty when
    one measured cell is at least as long-trained, as wide and as deep as the pair (the widths
    and depths of different cells do not combine)."""
    F, L = max(units), max(layers)
    top = max(c["tokens"] for c in measured)
    out = []
    if tokens > top:
        out.append(f"{tokens_text(tokens)} training tokens per model (measured up to "
                   f"{tokens_text(top)})")
    T = min(tokens, top)
    if not any(covers(c, T, F, L) for c in measured):
        there = [c for c in measured if c["tokens"] >= T]
        out.append(f"MLP width {F:,} with {L} layers trained "
                   + (f"{tokens_text(T)} tokens or more" if tokens > top else
                      f"{tokens_text(T)} tokens")
                   + f" (measured: {shapes_text(there)})")
    return out


def rule(tokens: float | None, units: tuple[int, int], layers: tuple[int, int]) -> dict:
    """How the slack of two trained models is set: {"slack", "tokens", "tokens_given", "term",
    "beyond"} for the pair's widths and depths (the larger of each) and ``tokens`` (None: the
    assumed :data:`defaults.MATCHED_TOKENS_ASSUMED`); "term": which of :func:`law_terms` sets
    the slack, "tokens" or "width" (the width term only where it is the larger)."""
    given = tokens is not None
    T = float(tokens) if given else float(MATCHED_TOKENS_ASSUMED)
    by_tokens, by_width = law_terms(T, max(units))
    return {"slack": law_units(T, max(units)), "tokens": T, "tokens_given": given,
            "term": "width" if by_width > by_tokens else "tokens",
            "beyond": beyond(T, units, layers)}


def note(r: dict) -> str:
    """The matched test's note on a slack set by :func:`rule`."""
    law = MATCHED_SLACK_LAW
    T = (f"{tokens_text(r['tokens'])} tokens per model, as given" if r["tokens_given"] else
         f"{tokens_text(r['tokens'])} tokens per model, assumed (the most any public model "
         f"card states; --trained-tokens sets it)")
    where = (f"; this pair lies beyond where it was measured: {' and '.join(r['beyond'])}, so "
             f"the slack is an extrapolation" if r["beyond"] else
             "; within where it was measured")
    return (f"for two trained models the p-value assumes independent models share at most "
            f"{r['slack']} doubly matched units per layer pair: the law of training length "
            f"u(T, F) = max(ceil({law['intercept']:.2f} + {law['slope']:.2f} log10 T), "
            f"ceil({law['share']:.4f} F)) at T = {T}, fitted on half of the seeds of unrelated "
            f"same-data models, its level not rejected on the other half by a rule of low "
            f"power (docs/seedprint.md)"
            + ("; its width term sets it: the fitted share of shared units taken to hold at "
               "every MLP width, an assumption (docs/seedprint.md gives the widths measured)"
               if r.get("term") == "width" else "")
            + where)
