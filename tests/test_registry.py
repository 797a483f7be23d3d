"""The registry of lineage tests (``fingerprint/runner/registry.py``) is the one list every consumer
reads: each registered test is a ``--test`` choice, runs through ``compare``'s dispatch on a
prepared pair, has its p-values labelled by the tables, and is a column of the lineage
benchmark (or the benchmark says why not) and of the rejection study where it is one. 'auto',
'all' and the verdict's order keep their meaning, and the command's help and the docs state
the rule the registry holds. A test registered at runtime, with no other change, runs through
``compare_many`` and is a choice of the command line built afterwards."""

import argparse
import types

import numpy as np
import pytest

from bornbiased_jax.fingerprint.runner import context, registry
from bornbiased_jax.fingerprint.methods.result import LineageResult


def _fingerprint_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["fingerprint"]


def _test_choices() -> list[str]:
    from bornbiased_jax.cli import build_parser

    p = _fingerprint_parser(build_parser())
    return list(next(a for a in p._actions if a.dest == "test").choices)


def _context(tests):
    """A prepared pair as ``compare_many`` makes it, from synthetic features: a related
    suspect, K = 99 null initialisations, two gated-MLP layers' pre-activations; the models
    themselves one llama2-tiny initialisation (the tests that read weights read it)."""
    from bornbiased_jax.fingerprint.runner.compare import Settings
    from bornbiased_jax.sources import load_source

    rng = np.random.default_rng(0)
    n, d, units = 60, 8, 16
    F_A = rng.standard_normal((n, d))
    F_B = 0.8 * F_A + 0.2 * rng.standard_normal((n, d))
    pre_A = [(rng.standard_normal((n, units)), rng.standard_normal((n, units)))
             for _ in range(2)]
    pre_B = [(g + 0.1 * rng.standard_normal(g.shape), u + 0.1 * rng.standard_normal(u.shape))
             for g, u in pre_A]
    s = Settings(tests=tests, n=n, seq_len=16, null_models=99, permutations=99, trials=2)
    loaded = load_source("preset:llama2-tiny@0")
    model = types.SimpleNamespace(is_init=True, label="model", seed=0, cfg=loaded.cfg,
                                  params=loaded.params)
    return context.Context(
        settings=s, base=model, suspect=model, xs=None, F_A=F_A, F_B=F_B, d_out=d,
        init=context.InitSide(F=F_A, views=pre_A, label="init"),
        nulls=context.Nulls(seeds=list(range(99)),
                             F=[rng.standard_normal((n, d)) for _ in range(99)]),
        views=context.Views(A=pre_A, B=pre_B))


def test_every_entry_is_well_formed():
    assert len(set(registry.names())) == len(registry.ENTRIES)
    for e in registry.ENTRIES:
        assert e.level in registry.LEVELS, e.name
        assert set(e.needs) <= set(registry.NEEDS), e.name
        assert e.auto in (None, *registry.AUTOS), e.name
        assert e.description and "\n" not in e.description, e.name
        assert e.p_labels, f"{e.name}: the tables need the labels of its p-values"
        for ref in (e.run, e.check, e.check_pair):
            assert ref is None or callable(registry._resolve(ref)), (e.name, ref)
    registry.p_labels()  # one label per p-value name across the tests and combinations
    for c in registry.COMBINATIONS:
        assert set(c.legs) <= set(registry.names()) and c.level in registry.LEVELS, c.name
        assert c.p_labels and callable(c.combiner()), c.name
    ranks = [x.verdict for x in registry.ENTRIES + registry.COMBINATIONS
             if x.verdict is not None]
    assert sorted(ranks) == list(range(len(ranks)))  # one place each in the verdict's order
    assert registry.verdict_order() == ("matched_init", "aligned", "any_pair", "permutation")


@pytest.mark.parametrize("name", registry.names())
def test_every_test_reaches_every_consumer(name):
    from bornbiased_jax.fingerprint.runner import rejection, tables
    from experiments.lineage_bench import claims, metrics

    e = registry.entry(name)
    assert name in _test_choices()  # the command line
    r = e.runner()(_context((name,)))  # compare's dispatch, on a prepared pair
    assert isinstance(r, LineageResult) and r.test == name
    assert list(r.p_values) == list(e.p_labels), "the registry labels what the test reports"
    text = tables.table_text({name: r})  # the tables: each p-value under its label
    for key, label in e.p_labels.items():
        assert label in text and tables.p_labels()[key] == label
    tables.table_markdown({name: r})
    # the lineage benchmark's columns of it, or the reason it has none
    assert (name in metrics.COLUMNS) != (name in metrics.EXCLUDED)
    for column, label in metrics.COLUMNS.get(name, {}).items():
        assert column in metrics.TESTS and claims.LABELS[column] == label
    assert set(e.rejection) <= set(rejection.VARIANTS)


def test_the_studies_list_exactly_the_registered_columns():
    from bornbiased_jax.fingerprint.runner import rejection
    from experiments.lineage_bench import metrics
    from experiments.seedprint import trained

    # every registered test's columns, and the any-pair verdict that combines two of them
    assert set(metrics.COLUMNS) | set(metrics.EXCLUDED) == set(registry.names())
    assert metrics.DEFAULT_UNKNOWN_INIT in [c.name for c in registry.COMBINATIONS]
    assert sorted(rejection.VARIANTS) == sorted(c for e in registry.ENTRIES for c in e.rejection)
    assert sorted(trained.VARIANTS) == sorted(rejection.VARIANTS)
    assert set(trained.TESTS) <= set(trained.VARIANTS)


def test_auto_and_all_keep_their_meaning():
    from bornbiased_jax.commands.fingerprint import chosen_tests

    # a known initialisation: the matched test against it for a gated MLP (exact, no nulls),
    # the aligned test (its nulls) otherwise
    assert chosen_tests("auto", True, True) == ("permutation", "matched_init")
    assert chosen_tests("auto", True, False) == ("aligned", "permutation")
    assert chosen_tests("auto", False, True) == ("permutation", "matched")
    assert chosen_tests("auto", False, False) == ("permutation",)
    assert chosen_tests("all", True, True) == registry.names()
    assert chosen_tests("all", False, True) == tuple(n for n in registry.names()
                                                     if n not in ("aligned", "matched_init"))
    assert chosen_tests("all", False, False) == ("paper", "official", "calibrated",
                                                 "permutation", "attention")
    assert chosen_tests("paper", False, False) == ("paper",)
    assert _test_choices() == ["auto", "aligned", "permutation", "matched", "matched_init",
                               "paper", "official", "calibrated", "attention", "all"]


def test_the_help_and_the_docs_state_the_registrys_rule():
    from bornbiased_jax.cli import build_parser

    help_text = next(a for a in _fingerprint_parser(build_parser())._actions
                     if a.dest == "test").help
    assert help_text.startswith(registry.test_help())
    for e in registry.ENTRIES:
        condition = registry.auto_condition(e)
        assert (f"{e.name} {condition}" in help_text) == (condition is not None), e.name
    assert "the verdict is the first of matched_init, aligned, any_pair, permutation" in \
        help_text
    assert registry.auto_condition(registry.entry("matched")) == (
        "when BASE's initialisation is unknown and the MLPs are gated")
    table = registry.rule_markdown()
    assert "| `any_pair` | computed wherever `permutation` and `matched` ran |" in table
    assert "| `paper` | no (`--test all` or by name) | none | - |" in table
    # docs/seedprint.md holds the table as generated (tests/test_studies.py re-renders the
    # page's blocks and compares)
    from pathlib import Path

    from experiments import render

    page = (Path(__file__).parents[1] / "docs" / "seedprint.md").read_text()
    assert "test-rule" in render.DOC_BLOCKS and table in page


def test_a_combination_is_computed_where_its_legs_ran():
    ctx = _context(("permutation", "matched"))
    results = {n: registry.entry(n).runner()(ctx) for n in ("permutation", "matched")}
    (name, r), = registry.combined(results).items()
    assert name == "any_pair" and r.details["decided_by"] in ("permutation", "matched")
    assert r.p == min(1.0, 2 * min(results["permutation"].p, results["matched"].p))
    assert registry.combined({"permutation": results["permutation"]}) == {}


def _dummy(**kw) -> registry.Entry:
    def run(ctx):
        n, d = ctx.F_A.shape
        assert ctx.F_B.shape == (n, d) and ctx.nulls is None and ctx.views is None
        return LineageResult("dummy", {"exact": 0.5}, ctx.settings.alpha, n, d, np.arange(d),
                             np.zeros(d), "none", 0.0, np.zeros(0), {"seen": ctx.suspect.label})

    return registry.Entry("dummy", frozenset(kw.pop("needs", ())), run, "measured",
                          "a test that registers itself at runtime", p_labels={"exact": "exact"},
                          **kw)


def test_a_test_without_checks_of_its_own_is_checked_by_its_needs(monkeypatch):
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.fingerprint.runner.compare import Settings

    monkeypatch.setattr(registry, "ENTRIES", registry.ENTRIES + (
        _dummy(needs={registry.TOKENS, registry.RESIDUAL}),))
    Settings(tests=("dummy",))
    with pytest.raises(UserError, match="the dummy test needs token inputs"):
        Settings(tests=("dummy",), input="gaussian")
    with pytest.raises(UserError, match="the dummy test needs residual outputs"):
        Settings(tests=("dummy",), output="logits")


def test_a_test_registered_at_runtime_runs_and_is_a_choice(monkeypatch, tmp_path):
    from bornbiased_jax.cli import build_parser
    from bornbiased_jax.fingerprint.runner import tables
    from bornbiased_jax.fingerprint.runner.compare import Settings, compare_many
    from bornbiased_jax.sources import load_source

    monkeypatch.setattr(registry, "ENTRIES", registry.ENTRIES + (_dummy(),))
    base = load_source("preset:llama2-tiny@1")
    suspects = [lambda: load_source("preset:llama2-tiny@2")]
    s = Settings(tests=("dummy", "permutation"), n=12, seq_len=8, permutations=99)
    (out,) = compare_many(base, suspects, s)
    assert list(out["results"]) == ["permutation", "dummy"]  # the registry's order
    assert out["results"]["dummy"].details == {"seen": "llama2-tiny@2"}
    assert "| dummy | exact |" in tables.table_markdown(out["results"])
    assert "dummy" in _test_choices()
    args = build_parser().parse_args(["fingerprint", "preset:llama2-tiny@1",
                                      "preset:llama2-tiny@2", "--test", "dummy"])
    assert args.test == "dummy"
    assert registry.chosen("all", False, False)[-1] == "dummy"
    assert "dummy" not in registry.chosen("auto", True, True)
