"""The matched test across shapes: MLP units matched across widths, layers matched across
depths, and the exact null of both (beyond the paper).

The matched test (:mod:`.matched`) counts, per MLP layer, the units of BASE (A) whose partner in
SUSPECT (B) is the same by their gate view and by their up view. Descendants change shapes:
pruned or padded MLP widths, dropped, inserted or stacked layers. This module generalises the
statistic and its null so that neither needs equal shapes.

Units across widths. A has F_A units in a layer, B has F_B. The gate matching g and the up
matching u pair reciprocal best partners by the |Pearson r| of the standardised views
(:func:`partners`): partial injections of A's units into B's, whatever the two widths. A *dead* unit, whose view is constant on the inputs (a zero row of W_gate
or W_up, as masked pruning and padded intermediate sizes leave), has no correlation with
anything; its standardised column is zero, every partner ties with every other, and two
assignments that break those ties the same way would count it as agreeing. Dead units are
therefore taken out of the view where they are dead, in both models, before matching
(:func:`live`), and never counted. K = #{i : g(i) = u(i), both defined}.

Null. As in :mod:`.matched`, re-pair A's up units with its gate units by a uniform permutation
sigma of its F_A units (at initialisation gate and up columns are i.i.d. and independent, so
the re-paired model has A's law, and the re-pairing leaves every view of the layer in place).
Then K(sigma) = #{i : g(i) = u(sigma(i))} = #{i in D : sigma(i) = phi(i)}, where
phi(i) = u^-1(g(i)) is defined on the m_A units D whose gate partner is also some unit's up
partner: the number of the m_A prescribed values that a uniform permutation of F_A items takes,
whose law is the *partial rencontres* law (:func:`partial_rencontres_log_sf`),
P(K = j) = C(m, j) sum_i (-1)^i C(m - j, i) (n - j - i)! / n!, mean m / n. With m = n (equal
widths, no dead unit) it is the rencontres law of :mod:`.matched`. Re-pairing B's units
instead gives the law with n = F_B and m_B = #{i : g(i), u(i) both defined}; each direction is
exact when its model is an initialisation, and the test takes the larger of the two p-values,
so it is exact (conservative) when either model is one.

Layers across depths. Which layer of B descends from which layer of A is not known. The screen
S(l_A, l_B) (:func:`screen`) is the mean, over a fixed subset of A's units, of the margin by
which each unit's most correlated unit of B's layer beats its second, on the gate views of a
fixed subset of rows: a layer that copies another's weights keeps every unit's partner far
above the rest even when its inputs moved (a stacked or shifted layer), where unrelated layers
leave no margin. (A similarity of whole layers, such as the CKA of their views, follows the
inputs instead and picks the neighbour of a stacked copy; the largest |r| alone is drawn to
the 'hub' layers of a trained model, whose units correlate broadly with many others.) Of each
layer's :data:`CANDIDATES` best partners by the screen, the one with the most reciprocal best
partners in the gate view on all rows is chosen, unless the screen's choice is clear
(:func:`choose`: a pruned copy's later layers, whose inputs moved most, are where the screen's
best and this step differ; how many origins each finds is measured in RESULTS.md's localised
tables, at the screen's :data:`SCREEN_UNITS` and the command's sequences). Both
steps read gate views only, which re-pairing a layer's up units against its gate units leaves
in place: choosing, for each layer l_A of A, its partner l_B uses nothing the re-pairing of
layer l_A moves, and the partial-rencontres p-value of that one pair stays exact given the choice (the
choice is paid for without splitting the inputs or a maximum under the null). The layers of A
then combine by Fisher's method: p_l is super-uniform given everything before layer l of A
(layer l's units feed only later layers), as in :mod:`.matched`.
The B direction chooses, for each layer of B, its partner in A, and combines over B's layers.
Both directions run; the verdict's p is the Fisher p of the direction that re-pairs the
initialisation where one model is one, else the larger of the two. The B direction
is the localised table: for every SUSPECT layer its BASE layer, the doubly matched units and p.
A copy's layers choose their own origin; a SOLAR-style stack has two SUSPECT layers choosing
one BASE layer; an inserted identity block or a BASE layer that was dropped chooses a layer it
shares nothing with, and its p is about 1.

Two trained models. Training couples a unit's gate and up columns, so the re-pairing no longer
keeps the law, and the p-value rests on an assumption: independent trained models share at most
``slack`` doubly matched units per tested layer pair (p = P(K >= K_obs - slack)). The slack is a
count of units, not a share of the width: unrelated same-data seeds share a few units per layer
at every width measured (RESULTS.md, the level table per width and depth).
"""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp
import numpy as np
from scipy import special

from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods.kernels import (margins, parallel, reciprocal_partners,
                                                      rows_last)
from bornbiased_jax.fingerprint.methods.rencontres import (fisher_log_p, partial_log_pmf,
                                                         partial_rencontres_log_sf,
                                                         randomised_log_sf)

SCREEN_ROWS = 512  # rows of the views that the layer screen reads
SCREEN_UNITS = 128  # BASE units per layer the screen reads (each against every SUSPECT unit)
CANDIDATES = 2  # each layer's best partners by the screen that the gate view then decides between
CLEAR = 0.5  # ... unless the runner-up's screen is below this share of the best's
MIN_ROWS = 32  # rows of MLP views below which correlations tie and the test is refused
DEAD_RTOL = 1e-6  # a view whose sd is below this share of its layer's 90th-percentile sd is dead


def screen_settings() -> dict:
    """The layer screen's and choice's constants, as a measurement's record or cache keeps
    them (a cache of other ones is stale)."""
    return {"rows": SCREEN_ROWS, "units": SCREEN_UNITS, "candidates": CANDIDATES,
            "clear": CLEAR}


# the null's law: fingerprint.methods.rencontres (partial_log_pmf, partial_rencontres_log_sf)
_log_pmf = partial_log_pmf


# ------------------------------------------------------------------------------ the units
def live(z_RF: np.ndarray) -> np.ndarray:
    """The units whose standardised view is not constant: a column of zeros (a constant view,
    ``matched._standardise``), or one whose raw scale was below :data:`DEAD_RTOL` of its
    layer's 90th percentile, is dead. ``z_RF``: standardised views (R, F)."""
    return np.any(z_RF != 0, axis=0)


def dead_units(pre) -> int:
    """The units of a model that are dead in their gate or up view, summed over its layers."""
    return int(sum(np.sum(~(live(g) & live(u))) for g, u in pre))


def partners(za: np.ndarray, zb: np.ndarray, live_a: np.ndarray | None = None,
             live_b: np.ndarray | None = None) -> np.ndarray:
    """m[i]: B's unit matched to A's unit i, or -1: the *reciprocal best partners* by |Pearson
    r| of the standardised views (R, F_A) and (R, F_B), i and j matched when j is i's most
    correlated unit of B and i is j's of A. The result is a partial injection (what the null's
    law needs), it commutes with any relabelling of either side's units (what its exactness
    needs), and it costs one product and two arg-maxes, no assignment problem (a Hungarian
    assignment of 1,536 units takes 0.2 s, and a 30-layer pair needs 60 of them). Dead units
    (``live_*`` False) are no one's partner."""
    return _match(_View.of(za, True, live_a), _View.of(zb, False, live_b))


@dataclasses.dataclass(frozen=True)
class _View:
    """One view (gate or up) of one layer as the matchings read it, prepared once per pair
    of models: its live units and the standardised view as a float32 host array, (F, R) on
    A's side (the product's left factor, ``kernels.rows_last``: a copy), (R, F) on B's (no
    copy of a float32 view). Each matching sends its two views to the device, so the device
    holds those of the matchings running, not a model's."""

    z: np.ndarray
    live: np.ndarray

    @property
    def F(self) -> int:
        return len(self.live)

    @staticmethod
    def of(z: np.ndarray, left: bool, live_z: np.ndarray | None = None) -> "_View":
        if not np.isfinite(z).all():
            raise UserError("MLP views with NaN or infinite values: the matchings rank finite "
                            "correlations only (standardised views are finite: "
                            "matched._standardise)")
        lv = live(z) if live_z is None else np.asarray(live_z)
        # float32 products: the |r| only rank candidate partners (see matched.matching)
        return _View(rows_last(z) if left else np.ascontiguousarray(z, np.float32), lv)


def _prepare(pre, left: bool) -> list[tuple[_View, _View]]:
    """A model's (gate, up) views per layer as :class:`_View` s."""
    return [(_View.of(g, left), _View.of(u, left)) for g, u in pre]


def _match(a: _View, b: _View) -> np.ndarray:
    """:func:`partners` of two prepared views."""
    if not a.live.any() or not b.live.any():
        return np.full(a.F, -1, np.int64)
    return np.asarray(reciprocal_partners(a.z, b.z, jnp.asarray(a.live), jnp.asarray(b.live))
                      ).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class PairCount:
    """One (layer of A, layer of B) pair: K doubly matched units; the null's sizes in each
    direction, (n, m) of the partial rencontres law when A's units are re-paired (n_a = F_A)
    and when B's are (n_b = F_B); the dead units of each side (either view)."""

    K: int
    n_a: int
    m_a: int
    n_b: int
    m_b: int
    dead_a: int
    dead_b: int

    def log_p(self, slack: int = 0, direction: str = "both", u: float | None = None) -> float:
        """log P(K' >= K - slack): the A direction's, the B direction's or the larger; with a
        uniform draw ``u`` (one direction only), the randomised P(K' > k) + u P(K' = k)."""
        if u is not None:
            if direction == "both":
                raise UserError("a randomised p needs the direction of the initialisation")
            n, m = (self.n_a, self.m_a) if direction == "a" else (self.n_b, self.m_b)
            return randomised_log_sf(n, m, self.K - slack, u)
        la = partial_rencontres_log_sf(self.n_a, self.m_a, self.K - slack)
        lb = partial_rencontres_log_sf(self.n_b, self.m_b, self.K - slack)
        return {"a": la, "b": lb, "both": max(la, lb)}[direction]


def count_pair(views_a, views_b, gate: np.ndarray | None = None) -> PairCount:
    """K and the null's sizes for one layer pair from its (gate, up) standardised views
    (``gate``: the gate view's partners when already computed)."""
    (ga, ua), (gb, ub) = views_a, views_b
    if len(ga) != len(gb):
        raise UserError(f"MLP views of {len(ga)} and {len(gb)} rows: both models must read "
                        f"the same inputs")
    a = (_View.of(ga, True), _View.of(ua, True))
    b = (_View.of(gb, False), _View.of(ub, False))
    return _count(a, b, _match(a[0], b[0]) if gate is None else gate, _match(a[1], b[1]))


def _count(a: tuple[_View, _View], b: tuple[_View, _View], g: np.ndarray,
           u: np.ndarray) -> PairCount:
    """:class:`PairCount` of a layer pair's prepared (gate, up) views from the gate and up
    views' partners ``g`` and ``u``."""
    both = (g >= 0) & (u >= 0)
    K = int(np.sum(both & (g == u)))
    image_u = np.zeros(b[0].F, bool)
    image_u[u[u >= 0]] = True
    m_a = int(np.sum((g >= 0) & image_u[np.maximum(g, 0)]))
    return PairCount(K, a[0].F, m_a, b[0].F, int(both.sum()),
                     int(np.sum(~(a[0].live & a[1].live))), int(np.sum(~(b[0].live & b[1].live))))


# ----------------------------------------------------------------------------- the layers
def screen_rows(R: int, rows: int = SCREEN_ROWS) -> np.ndarray:
    """The rows the screen reads: ``rows`` spread evenly over R (all when R is smaller)."""
    return np.arange(R) if R <= rows else np.linspace(0, R - 1, rows).round().astype(int)


def screen_views(pre, rows: np.ndarray, units: int | None = SCREEN_UNITS) -> list[np.ndarray]:
    """Per layer, the gate view on ``rows``, re-standardised there, of at most ``units`` units
    spread evenly over the layer (all with ``units`` None): what the screen reads of a model.
    Only gate views: re-pairing a layer's units moves its up columns against its gate columns,
    so a screen of gate views is unchanged by it."""
    out = []
    for g, _ in pre:
        cols = (np.arange(g.shape[1]) if units is None or g.shape[1] <= units else
                np.linspace(0, g.shape[1] - 1, units).round().astype(int))
        z = np.asarray(g[np.ix_(rows, cols)], np.float32)
        z = z - z.mean(0, keepdims=True)
        sd = np.sqrt((z * z).mean(0))
        out.append(z / np.where(sd > 0, sd, np.inf))
    return out


def screen(views_a, views_b) -> np.ndarray:
    """S (L_A, L_B): for each layer pair, the mean over A's screened units of the margin by
    which a unit's most correlated unit of B's layer beats its second (|r|, gate views;
    :func:`screen_views` of A with a unit subset, of B with every unit). A layer that copies
    another's weights keeps each unit's partner far above the rest even when its inputs moved
    (a stacked copy, a shifted layer); unrelated layers, and the 'hub' layers of a trained
    model whose units correlate broadly with many others, leave no margin."""
    R = len(views_a[0])
    widths = {v.shape[1] for v in views_b}
    if len(widths) == 1 and min(widths) >= 2:  # B's layers of one width: one jitted program
        zb = jnp.asarray(np.concatenate(views_b, axis=1))  # (R, L_B F_B), layer by layer
        return np.stack(parallel(lambda za: np.asarray(
            margins(jnp.asarray(rows_last(za)), zb, len(views_b)), np.float64), views_a))
    zb = np.concatenate(views_b, axis=1)  # (R, sum F_B)
    edges = np.cumsum([0] + [v.shape[1] for v in views_b])
    S = np.zeros((len(views_a), len(views_b)))
    for i, za in enumerate(views_a):
        c = np.abs(za.T @ zb) / R  # (units_A, sum F_B)
        for j in range(len(views_b)):
            block = c[:, edges[j]:edges[j + 1]]
            if block.shape[1] >= 2:
                top = np.partition(block, -2, axis=1)[:, -2:]
                S[i, j] = float((top[:, 1] - top[:, 0]).mean())
            # a one-unit layer has no runner-up: no margin, a score of 0
    return S


def candidates(S: np.ndarray, k: int | None = None) -> tuple[list[list[int]], list[list[int]]]:
    """(for each layer of A its candidate layers of B, for each layer of B its candidates of
    A): its best by the screen S alone when the runner-up's screen is below :data:`CLEAR` of
    it, else its ``k`` (default :data:`CANDIDATES`) best, in the screen's order."""
    k_max = max(1, CANDIDATES if k is None else k)

    def of(scores) -> list[int]:
        order = [int(c) for c in np.argsort(-scores, kind="stable")[:k_max]]
        return order[:1] if len(order) == 1 or scores[order[1]] < CLEAR * scores[order[0]] \
            else order
    return ([of(S[l]) for l in range(S.shape[0])], [of(S[:, l]) for l in range(S.shape[1])])


def choose(S: np.ndarray, live_pairs, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(to_b, to_a): each layer's partner in the other model: of its :func:`candidates`, the
    one with the most reciprocal best partners in the gate view (``live_pairs(pairs)``: a
    {(l_a, l_b): count} for the list of pairs asked; ties to the screen's order). Gate views
    only, as the screen."""
    cand_b, cand_a = candidates(S, k)
    asked = sorted({(l, c) for l, cs in enumerate(cand_b) if len(cs) > 1 for c in cs}
                   | {(c, l) for l, cs in enumerate(cand_a) if len(cs) > 1 for c in cs})
    count = live_pairs(asked) if asked else {}

    def pick(cs, pair):
        return cs[int(np.argmax([count[pair(c)] for c in cs]))] if len(cs) > 1 else cs[0]
    to_b = [pick(cs, lambda c, l=l: (l, c)) for l, cs in enumerate(cand_b)]
    to_a = [pick(cs, lambda c, l=l: (c, l)) for l, cs in enumerate(cand_a)]
    return np.array(to_b, int), np.array(to_a, int)


@dataclasses.dataclass(frozen=True)
class LayerMatch:
    """The matched test across shapes of one pair: the screen S (L_A, L_B); each direction's
    choice (``to_b[l_A]``: B's layer chosen for A's layer l_A; ``to_a[l_B]``: A's layer chosen
    for B's layer l_B); the counts of every pair that ran; the slack; and the per-layer log p
    of each direction with its Fisher combination (natural logs)."""

    S: np.ndarray
    to_b: np.ndarray
    to_a: np.ndarray
    counts: dict
    slack: int
    log_p_a: np.ndarray
    log_p_b: np.ndarray
    log_p_fisher_a: float
    log_p_fisher_b: float

    direction: str = "both"

    @property
    def log_p(self) -> float:
        """The test's log p: the Fisher p of the direction that re-pairs the initialisation
        ('a': BASE is one, 'b': SUSPECT is one; exact), or the larger of the two ('both')."""
        return {"a": self.log_p_fisher_a, "b": self.log_p_fisher_b,
                "both": max(self.log_p_fisher_a, self.log_p_fisher_b)}[self.direction]

    def suspect_rows(self) -> list[dict]:
        """The localised table, one row per SUSPECT (B) layer: its chosen BASE layer, the
        screen's value (the mean margin), K doubly matched units of its F_B, and the pair's
        log10 p (the larger of the two re-pairings')."""
        rows = []
        for l_b, l_a in enumerate(self.to_a):
            c = self.counts[(int(l_a), l_b)]
            # the pair's p under the re-pairing of either model: valid whichever one is the
            # initialisation (and, between trained models, at the slack's assumption)
            lp = c.log_p(self.slack, "both")
            rows.append({"suspect_layer": l_b, "base_layer": int(l_a),
                         "screen": round(float(self.S[l_a, l_b]), 4), "K": c.K,
                         "units": c.n_b, "dead": c.dead_b, "log10_p": lp / math.log(10)})
        return rows


def gate_partners(va, vb, pairs, gates: dict) -> None:
    """The gate views' partners of the layer pairs ``pairs`` of two models' prepared views
    (:func:`_prepare`) added to ``gates`` where it lacks them (two matchings at once)."""
    todo = [p for p in pairs if p not in gates]
    gates.update(zip(todo, parallel(lambda p: _match(va[p[0]][0], vb[p[1]][0]), todo)))


def count_pairs(va, vb, keys, gates: dict) -> dict:
    """{(l_a, l_b): PairCount} of the layer pairs ``keys`` from two models' prepared views
    (:func:`_prepare`), with the gate partners already in ``gates`` reused (and added)."""
    gate_partners(va, vb, keys, gates)
    ups = parallel(lambda p: _match(va[p[0]][1], vb[p[1]][1]), keys)
    return {p: _count(va[p[0]], vb[p[1]], gates[p], u) for p, u in zip(keys, ups)}


def match_layers(pre_a, pre_b, *, slack: int = 0, direction: str = "both", screen_a=None,
                 rows: np.ndarray | None = None) -> LayerMatch:
    """The matched test of B against A across shapes (the module docstring): the screen, each
    direction's layer choices, the pair counts they need (each pair counted once) and the
    per-layer and Fisher p-values at ``slack`` units per layer pair. ``direction``: which
    model's re-pairing gives the p-value: 'a' where A is an initialisation, 'b' where B is
    (each exact), 'both' (the larger p) otherwise. ``screen_a``: A's :func:`screen_views`
    on ``rows`` when already computed (a base compared with several suspects)."""
    if direction not in ("a", "b", "both"):
        raise UserError(f"direction must be 'a', 'b' or 'both', got {direction!r}")
    if not pre_a or not pre_b:
        raise UserError("the matched test needs at least one MLP layer in each model")
    R = len(pre_a[0][0])
    if len(pre_b[0][0]) != R:
        raise UserError(f"MLP views of {R} and {len(pre_b[0][0])} rows: both models must read "
                        f"the same inputs")
    if R < MIN_ROWS:
        raise UserError(f"the matched test reads {R} rows of MLP views (sequences x positions "
                        f"beyond the first 4), fewer than {MIN_ROWS}: on so few rows the "
                        f"units' correlations tie; give more sequences or longer ones")
    for name, pre in (("BASE", pre_a), ("SUSPECT", pre_b)):
        if not any(live(z).any() for views in pre for z in views):
            raise UserError(f"every MLP unit of {name} is dead (its gate and up views are "
                            f"constant on the inputs: zero weights?): the matched test has "
                            f"no unit to compare")
    if int(slack) != slack or slack < 0:
        raise UserError(f"the slack must be a whole number of units >= 0, got {slack!r}")
    rows = screen_rows(R) if rows is None else rows
    S = screen(screen_a if screen_a is not None else screen_views(pre_a, rows),
               screen_views(pre_b, rows, units=None))
    va, vb = _prepare(pre_a, True), _prepare(pre_b, False)
    gates: dict = {}  # (l_a, l_b) -> the gate view's reciprocal best partners

    def live_pairs(pairs) -> dict:
        gate_partners(va, vb, pairs, gates)
        return {p: int(np.sum(gates[p] >= 0)) for p in pairs}

    to_b, to_a = choose(S, live_pairs)
    keys = sorted({(l, int(to_b[l])) for l in range(len(pre_a))}
                  | {(int(to_a[l]), l) for l in range(len(pre_b))})
    counts = count_pairs(va, vb, keys, gates)
    del va, vb
    log_p_a = np.array([counts[(l, int(to_b[l]))].log_p(slack, "a") for l in range(len(pre_a))])
    log_p_b = np.array([counts[(int(to_a[l]), l)].log_p(slack, "b") for l in range(len(pre_b))])
    return LayerMatch(S, to_b, to_a, counts, int(slack), log_p_a, log_p_b,
                      fisher_log_p(log_p_a), fisher_log_p(log_p_b), direction)
