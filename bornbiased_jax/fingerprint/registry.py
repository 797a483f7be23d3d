"""The lineage tests, one :class:`Entry` each: what the test needs, how it runs, its level and
what the tables, the rejection study and the lineage benchmark call it. Every consumer reads
this list and none names the tests itself: ``compare`` (which tests exist, what to prepare for
them, the dispatch), ``bornbiased fingerprint`` (its ``--test`` choices, what 'auto' and 'all'
run), ``tables`` (p-value labels, legends, the figure's panels), ``rejection`` (its variants)
and ``experiments/lineage_bench`` (its columns).

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
RESIDUAL = "residual outputs"  # --output normed or prenorm, not logits
GATED = "gated MLP"  # both models have a gated (SwiGLU) MLP
NULLS = "null models"  # fresh initialisations of BASE's architecture
NEEDS = (INIT, TOKENS, RESIDUAL, GATED, NULLS)

# A test's level: what its false-positive rate at alpha is known to be.
LEVELS = ("exact", "exact when one model is an initialisation", "measured", "none")

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
    rejection: the rejection study's variants of it (``fingerprint.rejection.VARIANTS``).
    bench: the lineage benchmark's columns of it, each with its label there; bench_excluded:
      why the benchmark has none.
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
    bench: dict = dataclasses.field(default_factory=dict)
    bench_excluded: str = ""

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


@dataclasses.dataclass
class Context:
    """What compare prepares for one (BASE, SUSPECT) pair, which a test's ``run`` reads: the
    settings, both models (``LoadedModel``) and their features on the shared inputs ``xs``;
    where its needs ask for them, the features of BASE's initialisation (INIT: ``F_0``, from
    the model ``init_label``), of the null initialisations (NULLS: ``nulls``, seeds
    ``null_seeds``), and both models' MLP pre-activations (GATED: ``pre_A``, ``pre_B``; with
    INIT too, those of BASE's initialisation: ``pre_0``)."""

    settings: Any
    base: Any
    suspect: Any
    xs: Any
    F_A: Any
    F_B: Any
    d_out: int
    null_seeds: list
    F_0: Any = None
    init_label: str | None = None
    nulls: list | None = None
    pre_A: Any = None
    pre_B: Any = None
    pre_0: Any = None
    screen_A: Any = None  # BASE's layer screen (unit_matching.screen_views), computed once


_FG = "bornbiased_jax.fingerprint"
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
          rejection=("paper",), bench={"paper": "paper (Algorithm 1's test, token inputs)"}),
    Entry("official", frozenset(), f"{_FG}.official:from_context", "none",
          "the authors' released code: bottom-k dimensions, a softmax at temperature 10, an "
          "analytic z (its null fails on same-data seeds)",
          p_labels={"two_phi_bar": "2 Phi-bar(z) (code)", "one_sided": "Phi-bar(z)"},
          rejection=("official",), bench={"official": "released code"}),
    Entry("calibrated", frozenset({NULLS}), f"{_FG}.calibrated:from_context",
          "exact when one model is an initialisation",
          "a statistic of (BASE, SUSPECT) ranked among the same for K fresh initialisations "
          "of BASE's architecture: exact when BASE is an initialisation",
          check=f"{_FG}.calibrated:check_settings", p_labels=_EXACT,
          legend="the calibrated statistic ({statistic_name})", null_label="fresh inits",
          rejection=("calibrated",), bench={"calibrated": "calibrated (spearman_all)"}),
    Entry("aligned", frozenset({INIT, TOKENS, RESIDUAL, NULLS}),
          f"{_FG}.calibrated:aligned_from_context", "exact",
          "SUSPECT's coordinates matched one-to-one to those of BASE's initialisation, ranked "
          "among K fresh initialisations: sees through a renamed basis",
          auto=UNGATED, check=f"{_FG}.calibrated:check_aligned_settings", p_labels=_EXACT,
          legend="the mean |Spearman| of SUSPECT's coordinates matched one-to-one to those of "
                 "BASE's initialisation ({base_initialisation}; aligned)",
          rejection=("aligned",),
          bench={"aligned": "aligned, trained base",
                 "aligned_init": "aligned, base's init (exact; default, ungated MLPs)"}),
    Entry("permutation", frozenset({TOKENS, RESIDUAL}), f"{_FG}.permutation:from_context",
          "exact",
          "the mean matched-coordinate correlation ranked among random permutations of BASE's "
          "residual basis: exact for any pair, evaded by a renamed basis",
          auto=ALWAYS, check=f"{_FG}.permutation:check_settings",
          p_labels={"exact": "exact", "normal": "normal tail (Hoeffding)"},
          legend="the mean matched-coordinate correlation ({statistic_name}; permutation)",
          null_label="permutations of BASE",
          rejection=("permutation", "permutation_pearson"),
          bench={"permutation": "permutation (exact)"}),
    Entry("matched", frozenset({TOKENS, GATED}), f"{_FG}.matched:from_context",
          "exact when one model is an initialisation",
          "gated-MLP units matched across the models by their gate and by their up "
          "pre-activations, agreements against the rencontres law: unchanged by renamings "
          "and rotations",
          auto=INIT_UNKNOWN, check=f"{_FG}.matched:check_settings",
          check_pair=f"{_FG}.matched:check_pair",
          p_labels={"fisher": "Fisher over layers"},
          bench={"matched": "matched (trained base, default slack)"}),
    Entry("matched_init", frozenset({INIT, TOKENS, GATED}), f"{_FG}.matched:init_from_context",
          "exact",
          "the matched test of SUSPECT against BASE's initialisation: exact for any suspect, "
          "unchanged by renamings and rotations, no null models",
          auto=ALWAYS, check=f"{_FG}.matched:check_settings",
          check_pair=f"{_FG}.matched:check_pair",
          p_labels={"fisher": "Fisher over layers"},
          bench={"matched_init": "matched, base's init (exact, default)"}),
)


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


def choices() -> list[str]:
    """``--test``'s choices: 'auto', the tests 'auto' may run, the others, 'all'."""
    return (["auto"] + [e.name for e in ENTRIES if e.auto]
            + [e.name for e in ENTRIES if not e.auto] + ["all"])


def chosen(choice: str, init_known: bool, gated: bool = True) -> tuple[str, ...]:
    """The tests ``--test choice`` runs. 'auto': the tests with ``auto`` ALWAYS, and where
    BASE's initialisation is unknown those with INIT_UNKNOWN, whose needs are met (the aligned
    and permutation tests where BASE's initialisation is known, else the permutation and, for
    gated MLPs, the matched test); 'all': every test whose needs are met. A needs met: INIT
    (``init_known``) and GATED (``gated``, BASE's MLP)."""
    if choice == "auto":
        return tuple(e.name for e in ENTRIES if e.applies(init_known, gated) and (
            e.auto == ALWAYS or (e.auto == INIT_UNKNOWN and not init_known)
            or (e.auto == UNGATED and not gated)))
    if choice == "all":
        return tuple(e.name for e in ENTRIES if e.applies(init_known, gated))
    return (entry(choice).name,)


def p_labels() -> dict[str, str]:
    """The tables' label of every p-value a registered test reports."""
    out: dict[str, str] = {}
    for e in ENTRIES:
        for key, label in e.p_labels.items():
            if out.setdefault(key, label) != label:
                raise ValueError(f"p-value {key!r} has two labels: {out[key]!r} and {label!r}")
    return out


def columns(field: str, first: Sequence[str] = ()) -> tuple[str, ...]:
    """Every entry's columns in a study (``field``: 'rejection' or 'bench'): those named in
    ``first`` (the order of the study's records so far) in that order, then the others in the
    registry's order."""
    every = [c for e in ENTRIES for c in getattr(e, field)]
    return tuple([c for c in first if c in every] + [c for c in every if c not in first])


def bench_labels() -> dict[str, str]:
    """The lineage benchmark's label of every column of a registered test."""
    return {c: label for e in ENTRIES for c, label in e.bench.items()}
