"""The lineage tests, one :class:`Entry` each: what the test needs, how it runs, its level and
what the tables and the rejection study call it, and where it stands in the verdict; and the
verdicts computed from several tests' results (:data:`COMBINATIONS`: the any-pair verdict).
Every consumer reads these lists and none names the tests itself: ``compare`` (which tests
exist, what to prepare for them, the dispatch, the combinations), ``bornbiased fingerprint``
(its ``--test`` choices and their help, what 'auto' and 'all' run), ``audit`` and ``tables``
(the verdict line, p-value labels, legends, the figure's panels), ``rejection`` (its variants),
docs/seedprint.md (its table of the rule: :func:`rule_markdown`) and the studies (their
columns).

Adding a lineage test is its own module, with a function that takes the prepared
:class:`Context` of one (BASE, SUSPECT) pair and returns a ``LineageResult``, and one entry in
:data:`ENTRIES` (tests/test_registry.py checks that every consumer then knows it).

Importing this module imports nothing but the standard library, so that ``--help`` and the
rendering of RESULTS.md may read it: a test's functions are named as 'module:function' and
imported when first called.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Iterable, Sequence

# What a test needs (Entry.needs). compare prepares, once per base, what the chosen tests need:
# the features of BASE's initialisation (INIT), the features of K fresh initialisations (NULLS)
# and both models' MLP pre-activations (GATED).
INIT = "BASE's initialisation"  # known (BASE is one, or its source names it)
TOKENS = "token inputs"  # --input tokens
RESIDUAL = "residual outputs"  # --feature normed or prenorm, not logits
GATED = "gated MLP"  # both models have a gated (SwiGLU) MLP
NULLS = "null models"  # fresh initialisations of BASE's architecture
NEEDS = (INIT, TOKENS, RESIDUAL, GATED, NULLS)

# A test's level: what its false-positive rate at alpha is known to be.
INIT_ONLY = ("exact when one model is an initialisation; between trained models an assumption, "
             "not rejected on unrelated same-data seeds by a rule of low power, though their "
             "observed rate exceeds alpha at some checkpoints")
LEVELS = ("exact", "exact when one model is an initialisation", INIT_ONLY, "measured", "none")

# When '--test auto' runs a test (Entry.auto), wherever its needs are met:
ALWAYS = "always"
INIT_UNKNOWN = "when BASE's initialisation is unknown"
UNGATED = "when BASE's MLP is not gated"
AUTOS = (ALWAYS, INIT_UNKNOWN, UNGATED)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One lineage test.

    name: its name everywhere (``--test NAME``, the results' keys, the records' columns).
    needs: what it needs (a subset of :data:`NEEDS`).
    run: 'module:function' (or a function) taking a :class:`Context`, returning its
      ``LineageResult``.
    level: one of :data:`LEVELS`. description: one line.
    auto: when ``--test auto`` runs it (:data:`ALWAYS`, :data:`INIT_UNKNOWN`) or None (never).
    check: 'module:function' (or a function) taking the ``Settings``, raising a UserError when
      the test cannot run with them; None: the generic check of its TOKENS and RESIDUAL needs.
    check_pair: 'module:function' (or a function) ``(base_cfg, suspect_cfg, settings, suspect)``
      raising a UserError when the two configurations cannot be compared by it (before any
      model is loaded); None: nothing beyond compare's own checks.
    p_labels: the tables' label of each p-value it reports, the primary one first.
    legend: what the tables' 'mean corr' column holds for it, formatted with its result's
      details ('' when the Kendall tau on S, the paper's and the released code's).
    legend_note: a sentence the tables' legend adds when it ran.
    null_label: what its figure panel calls its null ('fresh inits'): a histogram of
      ``LineageResult.null`` against its statistic; '' for a panel of per-dimension Kendall
      taus.
    rejection: the rejection study's variants of it (``fingerprint.runner.rejection.VARIANTS``).
    verdict: its rank in the verdict line's order (0 first: :func:`verdict_order`), or None.
    localises: its result holds per-layer rows (the matched tests): the tables' localised
      table and the verdict's summary of what descends from where.
    """

    name: str
    needs: frozenset
    run: str | Callable
    level: str
    description: str
    auto: str | None = None
    check: str | Callable | None = None
    check_pair: str | Callable | None = None
    p_labels: dict = dataclasses.field(default_factory=dict)
    legend: str = ""
    legend_note: str = ""
    null_label: str = ""
    rejection: tuple = ()
    verdict: int | None = None
    localises: bool = False

    def runner(self) -> Callable:
        return _resolve(self.run)

    def checker(self) -> Callable | None:
        return _resolve(self.check) if self.check is not None else None

    def pair_checker(self) -> Callable | None:
        return _resolve(self.check_pair) if self.check_pair is not None else None

    def applies(self, init_known: bool, gated: bool) -> bool:
        """Whether its needs that a model source decides are met: BASE's initialisation known
        (INIT), a gated MLP (GATED)."""
        return (init_known or INIT not in self.needs) and (gated or GATED not in self.needs)


def _resolve(ref: str | Callable) -> Callable:
    if callable(ref):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclasses.dataclass(frozen=True)
class Combination:
    """A verdict computed from registered tests' results rather than run on a pair.

    name: its name (the results' key, the records' columns). legs: the tests it combines; it
    is computed wherever all of them ran. combine: 'module:function' (or a function) taking
    the legs' results in that order, returning its ``LineageResult``, whose details name the
    leg that decided (``decided_by``). level, description, p_labels, verdict: as an
    :class:`Entry`'s.
    """

    name: str
    legs: tuple[str, ...]
    combine: str | Callable
    level: str
    description: str
    p_labels: dict = dataclasses.field(default_factory=dict)
    verdict: int | None = None
    first: str | None = None  # a leg that reads only the first inputs (the matched test's);
    # 'stops' says when the other legs stop at those inputs too: stops(first_result) -> a
    # reason (a string) or None; 'holds(reason, leg_result)' whether the stop stands given a
    # leg's result on those inputs (else every leg reads all of them)
    stops: str | Callable | None = None
    holds: str | Callable | None = None

    def combiner(self) -> Callable:
        return _resolve(self.combine)

    def stopper(self) -> Callable:
        """``stops(first_result) -> str | None``: why the other legs stop at the first leg's
        inputs, or None where they read all of them."""
        return _resolve(self.stops)

    def holder(self) -> Callable:
        """``holds(reason, leg_result) -> bool``: whether a stop stands given another leg's
        result on the first leg's inputs (always, without ``holds``)."""
        return _resolve(self.holds) if self.holds is not None else (lambda why, r: True)


_FG = "bornbiased_jax.fingerprint.methods"
_EXACT = {"exact": "exact", "gaussian_tail": "Gaussian tail"}

# In the order of a comparison's results.
ENTRIES: tuple[Entry, ...] = (
    Entry("paper", frozenset(), f"{_FG}.algorithm1:from_context", "none",
          "Algorithm 1 as written: Kendall tau on the top-m identity dimensions against a "
          "null of two Gaussian matrices (its null fails on same-data seeds)",
          p_labels={"t_mean": "t, mean of trials", "u_mean": "U, mean of trials",
                    "t_pooled": "t, pooled null", "u_pooled": "U, pooled null"},
          legend_note="The paper's 'mean of trials' is the arithmetic mean of the p-values of "
                      "{trials} Gaussian null draws (Sec. 6.1.2), not itself a p-value.",
          rejection=("paper",)),
    Entry("official", frozenset(), f"{_FG}.official:from_context", "none",
          "the authors' released code: bottom-k dimensions, a softmax at temperature 10, an "
          "analytic z (its null fails on same-data seeds)",
          p_labels={"two_phi_bar": "2 Phi-bar(z) (code)", "one_sided": "Phi-bar(z)"},
          rejection=("official",)),
    Entry("calibrated", frozenset({NULLS}), f"{_FG}.calibrated:from_context",
          "exact when one model is an initialisation",
          "a statistic of (BASE, SUSPECT) ranked among the same for K fresh initialisations "
          "of BASE's architecture: exact when BASE is an initialisation",
          check=f"{_FG}.calibrated:check_settings", p_labels=_EXACT,
          legend="the calibrated statistic ({statistic_name})", null_label="fresh inits",
          rejection=("calibrated",)),
    Entry("aligned", frozenset({INIT, TOKENS, RESIDUAL, NULLS}),
          f"{_FG}.aligned:from_context", "exact",
          "SUSPECT's coordinates matched one-to-one to those of BASE's initialisation, ranked "
          "among K fresh initialisations: sees through a renamed basis",
          auto=UNGATED, check=f"{_FG}.aligned:check_settings", p_labels=_EXACT,
          legend="the mean |Spearman| of SUSPECT's coordinates matched one-to-one to those of "
                 "BASE's initialisation ({base_initialisation}; aligned)",
          rejection=("aligned",), verdict=1),
    Entry("permutation", frozenset({TOKENS, RESIDUAL}), f"{_FG}.permutation:from_context",
          "exact",
          "the mean matched-coordinate correlation ranked among random permutations of BASE's "
          "residual basis: exact for any pair, evaded by a renamed basis",
          auto=ALWAYS, check=f"{_FG}.permutation:check_settings",
          p_labels={"exact": "exact", "normal": "normal tail (Hoeffding)"},
          legend="the mean matched-coordinate correlation ({statistic_name}; permutation)",
          null_label="permutations of BASE",
          rejection=("permutation", "permutation_pearson"), verdict=3),
    Entry("matched", frozenset({TOKENS, GATED}), f"{_FG}.matched:from_context",
          "exact when one model is an initialisation",
          "gated-MLP units matched across the models by their gate and by their up "
          "pre-activations, agreements against the rencontres law: unchanged by renamings "
          "and rotations",
          auto=INIT_UNKNOWN, check=f"{_FG}.matched:check_settings",
          check_pair=f"{_FG}.matched:check_pair",
          p_labels={"fisher": "Fisher over layers"}, localises=True),
    Entry("matched_init", frozenset({INIT, TOKENS, GATED}), f"{_FG}.matched_init:from_context",
          "exact",
          "the matched test of SUSPECT against BASE's initialisation: exact for any suspect, "
          "unchanged by renamings and rotations, no null models",
          auto=ALWAYS, check=f"{_FG}.matched:check_settings",
          check_pair=f"{_FG}.matched:check_pair",
          p_labels={"fisher": "Fisher over layers"}, verdict=0, localises=True),
    Entry("attention", frozenset(), f"{_FG}.attention:from_context", INIT_ONLY,
          "attention heads matched across the models by the spectra of their QK and of their "
          "OV circuits, agreements against the law of re-paired heads: unchanged by "
          "rotations, head maps and head permutations; its level between two trained models "
          "is an assumption (not rejected on unrelated same-data seeds, by a rule of low "
          "power), so it is no leg of any verdict",
          check_pair=f"{_FG}.attention:check_pair",
          p_labels={"head_repairing": "re-paired heads"},
          legend="the doubly matched heads of {heads} (attention)",
          legend_note="The attention test's p is valid when one model is an initialisation; "
                      "between two trained models its level is an assumption (not rejected on "
                      "unrelated same-data seeds, by a rule of low power, though their observed "
                      "rate exceeds alpha at some checkpoints).",
          null_label="draws of the re-pairing law"),
)


# Computed from the results of the tests above, in this order, after them.
COMBINATIONS: tuple[Combination, ...] = (
    Combination("any_pair", ("permutation", "matched"), f"{_FG}.any_pair:any_pair",
                "exact when one model is an initialisation",
                "the any-pair verdict: the permutation and the matched test each at alpha/2 "
                "(Bonferroni), the verdict line naming the leg that decided",
                p_labels={"bonferroni": "Bonferroni of permutation and matched"}, verdict=2,
                first="matched", stops=f"{_FG}.any_pair:stop_reason",
                holds=f"{_FG}.any_pair:stop_holds"),
)


def sequential(tests: Iterable[str]) -> Combination | None:
    """The combination that ``tests`` are exactly the legs of and that has a :attr:`first`
    leg, which then runs first (``compare``'s sequential stop); None otherwise."""
    tests = set(tests)
    return next((c for c in COMBINATIONS if c.first is not None and set(c.legs) == tests),
                None)


def names() -> tuple[str, ...]:
    """Every registered test's name, in the order of a comparison's results."""
    return tuple(e.name for e in ENTRIES)


def entry(name: str) -> Entry:
    for e in ENTRIES:
        if e.name == name:
            return e
    raise KeyError(f"no lineage test {name!r}; the tests are {names()}")


def selected(tests: Iterable[str]) -> list[Entry]:
    """The entries of ``tests``, in the registry's order."""
    tests = set(tests)
    return [e for e in ENTRIES if e.name in tests]


def needs(tests: Iterable[str]) -> set[str]:
    """What ``tests`` need between them."""
    return {n for e in selected(tests) for n in e.needs}


def combined(results: dict) -> dict:
    """{name: result} of every combination whose legs are all in ``results``."""
    return {c.name: c.combiner()(*(results[leg] for leg in c.legs)) for c in COMBINATIONS
            if all(leg in results for leg in c.legs)}


def verdict_order() -> tuple[str, ...]:
    """The tests and combinations a verdict line may use, in order of preference: the verdict
    is the first of them that ran (else the first test that ran)."""
    ranked = [x for x in ENTRIES + COMBINATIONS if x.verdict is not None]
    return tuple(x.name for x in sorted(ranked, key=lambda x: x.verdict))


def localising(results: dict):
    """The result whose per-layer rows say what descends from where (``Entry.localises``):
    the one against BASE's initialisation where it ran, else the other; None when none ran."""
    tests = sorted((e for e in ENTRIES if e.localises and e.name in results),
                   key=lambda e: INIT not in e.needs)
    return results[tests[0].name] if tests else None


def choices() -> list[str]:
    """``--test``'s choices: 'auto', the tests 'auto' may run, the others, 'all'."""
    return (["auto"] + [e.name for e in ENTRIES if e.auto]
            + [e.name for e in ENTRIES if not e.auto] + ["all"])


def chosen(choice: str, init_known: bool, gated: bool = True) -> tuple[str, ...]:
    """The tests ``--test choice`` runs. 'auto': each test whose needs are met (INIT:
    ``init_known``, GATED: ``gated``, BASE's MLP) and whose ``auto`` condition holds
    (:func:`auto_condition`); 'all': every test whose needs are met."""
    if choice == "auto":
        return tuple(e.name for e in ENTRIES if e.applies(init_known, gated) and (
            e.auto == ALWAYS or (e.auto == INIT_UNKNOWN and not init_known)
            or (e.auto == UNGATED and not gated)))
    if choice == "all":
        return tuple(e.name for e in ENTRIES if e.applies(init_known, gated))
    return (entry(choice).name,)


def auto_condition(e: Entry) -> str | None:
    """When ``--test auto`` runs ``e``, in words (None: never), from its ``auto`` and the
    needs a model source decides (INIT, GATED): the one statement of the rule, which the
    command's help and docs/seedprint.md print."""
    if e.auto is None:
        return None
    parts = []
    if INIT in e.needs:
        parts.append("BASE's initialisation is known")
    if e.auto == INIT_UNKNOWN:
        parts.append("BASE's initialisation is unknown")
    if GATED in e.needs:
        parts.append("the MLPs are gated")
    if e.auto == UNGATED:
        parts.append("BASE's MLP is not gated")
    return "always" if not parts else "when " + " and ".join(parts)


def test_help() -> str:
    """``--test``'s help: what 'auto' runs, the verdict's order, 'all'."""
    auto = "; ".join(f"{e.name} {auto_condition(e)}" for e in ENTRIES if e.auto)
    combos = "; ".join(f"{c.name} ({c.description}) where {' and '.join(c.legs)} ran"
                       for c in COMBINATIONS)
    return (f"which test(s): 'auto' runs {auto}; it computes {combos}; the verdict is the "
            f"first of {', '.join(verdict_order())} that ran; 'all' runs every test that "
            f"applies; a name runs that test alone")


def rule_markdown() -> str:
    """docs/seedprint.md's table of the rule: per test and combination, when ``--test auto``
    runs it, its level and its place in the verdict."""
    order = verdict_order()
    rank = {n: f"{order.index(n) + 1}" for n in order}
    lines = ["| test | `--test auto` runs it | level | verdict's choice |", "|---|---|---|---:|"]
    for e in ENTRIES:
        lines.append(f"| `{e.name}` | {auto_condition(e) or 'no (`--test all` or by name)'} "
                     f"| {e.level} | {rank.get(e.name, '-')} |")
    for c in COMBINATIONS:
        legs = " and ".join(f"`{leg}`" for leg in c.legs)
        lines.append(f"| `{c.name}` | computed wherever {legs} ran | {c.level} "
                     f"| {rank.get(c.name, '-')} |")
    return ("\n".join(lines) + f"\n\nThe verdict line uses the first of "
            f"{', '.join(f'`{n}`' for n in order)} that ran (the rightmost column), else the "
            f"first test that ran, and says so.")


def p_labels() -> dict[str, str]:
    """The tables' label of every p-value a registered test or combination reports."""
    out: dict[str, str] = {}
    for e in ENTRIES + COMBINATIONS:
        for key, label in e.p_labels.items():
            if out.setdefault(key, label) != label:
                raise ValueError(f"p-value {key!r} has two labels: {out[key]!r} and {label!r}")
    return out


def rejection_variants(first: Sequence[str] = ()) -> tuple[str, ...]:
    """Every entry's variants in the rejection study (``Entry.rejection``): those named in
    ``first`` (a study's record order) in that order, then the others in the registry's
    order."""
    every = [c for e in ENTRIES for c in e.rejection]
    return tuple([c for c in first if c in every] + [c for c in every if c not in first])
