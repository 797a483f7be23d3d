"""Compare two model sources: features on shared random inputs, then the chosen lineage tests.

This is the library behind ``bornbiased fingerprint BASE SUSPECT``. Every forward pass of a
loaded model goes through the sweep engine (``sweep.run_probe``, one planner and memory plan):
the features by the feature probe (``probes.outputs``), and where the matched test runs, its
MLP views and the features of the first ``matched_seqs`` sequences by the views probe
(``probes.mlp_views``) in the same pass (:func:`model_pass`); a comparison that stops at those
sequences computes the rest's features only when a leg needs them (:func:`features_only`)."""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from bornbiased_jax.config import family
from bornbiased_jax.defaults import (CALIBRATED_NULL_MODELS, FINGERPRINT_FORWARD_BUDGET,
                                     FINGERPRINT_N_MAX, FINGERPRINT_N_MIN, MATCHED_MAX_T,
                                     MATCHED_SEQS, SEED_LIMIT)
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.methods import permutation as P
from bornbiased_jax.fingerprint.runner import context, registry
from bornbiased_jax.fingerprint.methods import unit_matching as U
from bornbiased_jax.fingerprint.runner import vocab as V
from bornbiased_jax.fingerprint.runner.features import init_features
from bornbiased_jax.fingerprint.runner.passes import features_only, model_pass
from bornbiased_jax.fingerprint.methods.result import ALPHA, check_alpha, check_int
from bornbiased_jax.probes.inputs import check_kind, probe_inputs
from bornbiased_jax.probes.outputs import check_output
from bornbiased_jax.sources import LoadedModel

# Null initialisations use seeds from here on (skipping the base's and suspect's own seeds), far
# from the small seeds people usually pick, so a suspect trained from a common seed is not
# accidentally among the null models.
NULL_SEED_START = 1_000_000


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a comparison runs. ``m``/``k`` default to ``identity_dims.default_size(d_out)``.

    The defaults run the permutation test on token inputs: it needs nothing but the two models.
    The verdict's tests where BASE's initialisation is known (``registry.verdict_order``),
    'matched_init' and 'aligned', need the base's initialisation (``compare_many(init=...)``). Algorithm 1 as written uses
    ``input="gaussian"``."""

    tests: tuple[str, ...] = ("permutation",)
    input: str = "tokens"
    n: int = 2000
    seq_len: int = 64
    output: str = "normed"
    m: int | None = None
    k: int | None = None
    null_models: int = CALIBRATED_NULL_MODELS
    statistic: str = C.DEFAULT_STATISTIC
    permutations: int = P.DEFAULT_PERMUTATIONS
    permutation_statistic: str = P.DEFAULT_STATISTIC
    trials: int = 10
    probe_seed: int = 0
    alpha: float = ALPHA
    matched_seqs: int = MATCHED_SEQS
    matched_slack: int | None = None  # None: matched.default_slack (0 with an initialisation)
    matched_eps: float | None = None  # the older spelling: a share of BASE's MLP width
    # the tokens the longer-trained model saw, which set the matched slack of two trained
    # models by the law of training length (None: defaults.MATCHED_TOKENS_ASSUMED)
    trained_tokens: float | None = None
    # Where the tests are a combination's legs with a first leg (the any-pair verdict: the
    # matched test reads the first matched_seqs sequences), run it first and stop the others
    # at those sequences where its result says so and theirs there do not call it off
    # (registry.sequential: it decided alone, or found nothing and the permutation leg's
    # first p is above alpha / 2; any_pair.stop_reason, stop_holds); False: all n always.
    sequential: bool = True

    def __post_init__(self):
        known = registry.names()
        bad = [t for t in self.tests if t not in known]
        if bad or not self.tests:
            raise UserError(f"unknown test(s) {bad}; choose among {known}")
        check_kind(self.input)
        check_output(self.output)
        check_int("n (inputs)", self.n, 3, "the lineage tests need n >= 3")
        check_int("seq_len", self.seq_len, 1)
        for name in ("m", "k"):
            if getattr(self, name) is not None:  # the upper bound d_out is checked in compare()
                check_int(name, getattr(self, name), 1, "and at most d_out")
        check_int("null_models", self.null_models, 1,
                  "the calibrated test needs at least one null model")
        check_int("trials", self.trials, 1, "the paper test needs at least one null trial")
        check_int("probe_seed", self.probe_seed, 0, hi=SEED_LIMIT - 1)
        if self.statistic not in C.STATISTICS:
            raise UserError(f"unknown calibrated statistic {self.statistic!r}; choose one of "
                            f"{C.STATISTICS}")
        check_alpha(self.alpha)
        for entry in registry.selected(self.tests):  # each test's own checks
            check = entry.checker()
            if check is not None:
                check(self)
            else:
                check_needs(entry, self)


def check_needs(entry: registry.Entry, settings: Settings) -> None:
    """A UserError when ``settings`` do not give a test the inputs or outputs it needs: the
    check of a test without checks of its own."""
    if registry.TOKENS in entry.needs and settings.input != "tokens":
        raise UserError(f"the {entry.name} test needs token inputs (--input tokens)")
    if registry.RESIDUAL in entry.needs and settings.output == "logits":
        raise UserError(f"the {entry.name} test needs residual outputs (--feature normed or "
                        f"prenorm)")


def null_seeds(K: int, exclude: Sequence[int | None]) -> list[int]:
    """K seeds for null initialisations, none equal to a seed in ``exclude``."""
    ex = {int(s) for s in exclude if s is not None}
    out, s = [], NULL_SEED_START
    while len(out) < K:
        if s not in ex:
            out.append(s)
        s += 1
    return out


def check_pair(base_cfg, suspect_cfg, settings: Settings, suspect: str = "SUSPECT") -> int:
    """``d_out``, or a UserError naming ``suspect`` when its configuration cannot be compared
    with the base's under ``settings``: another architecture family (a descendant keeps its
    norms, MLP and positions; widths, depths and vocabularies may change), another output
    width, another vocabulary with logits as features, a context shorter than the inputs.
    Vocabularies of token inputs are aligned per pair once the models' tokenizers are read
    (``vocab.align``). Needs configurations only, so every suspect can be checked before any
    model is loaded."""
    s = settings
    fa, fb = family(base_cfg), family(suspect_cfg)
    if fa != fb:
        diff = ", ".join(f"{k} {fa[k]!r} vs {fb[k]!r}" for k in fa if fa[k] != fb.get(k))
        raise UserError(f"{suspect}: BASE ({base_cfg.name}) and the suspect "
                        f"({suspect_cfg.name}) are of different architecture families "
                        f"({diff}): a descendant keeps its base's architecture (its widths, "
                        f"depths and vocabulary may change), so no lineage test compares these")
    d_out = base_cfg.vocab_size if s.output == "logits" else base_cfg.d_model
    d_out_s = suspect_cfg.vocab_size if s.output == "logits" else suspect_cfg.d_model
    if d_out != d_out_s or (s.input == "gaussian" and base_cfg.d_model != suspect_cfg.d_model):
        what = "vocabularies" if d_out != d_out_s and s.output == "logits" else \
            "residual widths (d_model)"
        a, b = (d_out, d_out_s) if d_out != d_out_s else (base_cfg.d_model, suspect_cfg.d_model)
        raise UserError(f"{suspect}: the models' {what} differ ({a} vs {b}): SeedPrint feeds "
                        f"both the same inputs and compares output coordinate j of one model "
                        f"with coordinate j of the other, so both need the same {what}")
    for name, size in (("m", s.m), ("k", s.k)):
        if size is not None:
            D.check_size(name, size, d_out)
    for entry in registry.selected(s.tests):
        check = entry.pair_checker()
        if check is not None:
            check(base_cfg, suspect_cfg, s, suspect)
    if s.seq_len > min(base_cfg.max_seq_len, suspect_cfg.max_seq_len):
        raise UserError(f"{suspect}: sequence length {s.seq_len} exceeds a model's context "
                        f"({base_cfg.max_seq_len}, {suspect_cfg.max_seq_len})")
    return d_out


def default_n(base_cfg, suspect_cfgs, seq_len: int) -> int:
    """The default number of inputs for BASE against the suspects: the most, from
    ``defaults.FINGERPRINT_N_MIN`` up to ``FINGERPRINT_N_MAX``, whose forward passes through
    BASE and the costliest suspect stay under ``FINGERPRINT_FORWARD_BUDGET`` FLOP."""
    from bornbiased_jax.flops import forward_flops

    per_seq = forward_flops(base_cfg, seq_len, last_only=True) + max(
        forward_flops(c, seq_len, last_only=True) for c in suspect_cfgs)
    return int(min(FINGERPRINT_N_MAX, max(FINGERPRINT_N_MIN,
                                          FINGERPRINT_FORWARD_BUDGET // per_seq)))


def probe_set(base: LoadedModel, settings: Settings):
    """The random inputs every model of a comparison sees (token ids drawn once as an array;
    Gaussian embeddings with the base's embedding mean and std)."""
    s = settings
    emb = np.asarray(base.params["embed"]["embedding"]) if s.input == "gaussian" else None
    xs = probe_inputs(s.input, base.cfg, s.n, s.seq_len, s.probe_seed, embedding=emb)
    return np.asarray(xs[:]) if s.input == "tokens" else xs


def compare(base: LoadedModel, suspect: LoadedModel, settings: Settings = Settings(), *,
            progress: bool = False) -> dict:
    """Run the chosen tests of ``suspect`` against ``base``.

    Returns {'results': {test: LineageResult} (in the registry's order),
             'features': (F_base, F_suspect), 'notes': [...]}.
    """
    (out,) = compare_many(base, [lambda: suspect], settings, progress=progress,
                          seeds=[suspect.seed])
    return out


def compare_many(base: LoadedModel, suspects, settings: Settings = Settings(), *,
                 progress: bool = False, seeds: Sequence[int | None] = (),
                 init: LoadedModel | Callable[[], LoadedModel] | None = None):
    """:func:`compare` of several suspects against one base, one at a time: the base's
    features (and the calibrated test's null features) are computed once, each suspect is
    loaded (``suspects`` are callables returning a ``LoadedModel``), run and released before
    the next. ``seeds``: the suspects' seeds where known, kept out of the null seeds. ``init``:
    the base's initialisation, which the aligned test compares with (None: the base itself,
    which must then be one), or a callable that loads it (its features are taken and the model
    released before any suspect is loaded). Yields one :func:`compare` result per suspect."""
    comparison = Comparison(base, settings, progress=progress, seeds=seeds, init=init)
    for load in suspects:
        yield comparison.run(load)


class Comparison:
    """One BASE against its suspects, in named steps: BASE's passes on the comparison's inputs
    (:meth:`side`, once per vocabulary alignment), then per suspect (:meth:`run`) its pass,
    the parts its tests need (one preparer per need, :data:`PREPARERS`), the tests
    (:meth:`run_tests`: the first leg of a sequential combination first) and the result."""

    def __init__(self, base: LoadedModel, settings: Settings, *, progress: bool = False,
                 seeds: Sequence[int | None] = (),
                 init: LoadedModel | Callable[[], LoadedModel] | None = None):
        s = self.s = settings
        self.base, self.progress, self.seeds, self.init = base, progress, seeds, init
        self.entries = registry.selected(s.tests)
        self.needs = registry.needs(s.tests)
        if registry.INIT in self.needs and init is None and not base.is_init:
            name = next(e.name for e in self.entries if registry.INIT in e.needs)
            raise UserError(f"the {name} test compares the suspect with BASE's initialisation, "
                            f"which is not known for {base.label}; give BASE as "
                            f"preset:NAME@SEED or a training run (its step 0 is read), or "
                            f"choose another --test")
        self.xs = probe_set(base, s)
        self.gated = registry.GATED in self.needs
        self.seq = registry.sequential(s.tests) if s.sequential else None
        # the sequences the first leg reads: every other leg stops there where its result
        # says so
        self.n1 = (s.matched_seqs if self.seq is not None and 3 <= s.matched_seqs < s.n
                   else None)
        self.head = slice(None) if self.n1 is None else slice(0, self.n1)
        self.base_strings = V.token_strings(base) if s.input == "tokens" else None
        self.sides: dict = {}  # alignment key -> BASE's side of the comparison on its inputs
        self.null_features: dict = {}  # (null seeds, inputs) -> their features
        self.side(None)  # BASE's pass on the comparison's own inputs, before any suspect

    # ------------------------------------------------------------------ BASE's side
    def side(self, al: V.Alignment | None) -> dict:
        """BASE's (and its initialisation's) passes on the inputs of alignment ``al``: the
        comparison's own inputs when the vocabularies agree id for id, else drawn from the
        shared strings (computed once per alignment; the latest non-identity one is kept)."""
        s, base = self.s, self.base
        key = None if al is None or al.identity else al.key()
        if key in self.sides:
            return self.sides[key]
        if key is None:
            xs_A, idx = self.xs, None
        else:
            for k in [k for k in self.sides if k is not None]:
                del self.sides[k]
            idx = np.asarray(probe_inputs("tokens", dataclasses.replace(
                base.cfg, vocab_size=al.shared), s.n, s.seq_len, s.probe_seed)[:])
            xs_A = al.base_ids[idx].astype(np.int32)
        F_A, pre_A = model_pass(base, xs_A[self.head], s, self.gated, self.progress)
        out = dict(xs=xs_A, idx=idx, F_A=F_A, pre_A=pre_A, init_side=None,
                   init_seed=base.seed,
                   screen_A=(U.screen_views(pre_A, U.screen_rows(len(pre_A[0][0])))
                             if pre_A is not None else None))
        if registry.INIT in self.needs:
            out["init_side"] = self._init_side(xs_A, F_A, pre_A)
            out["init_seed"] = out["init_side"].seed
        self.sides[key] = out
        return out

    def _init_side(self, xs_A, F_A, pre_A) -> context.InitSide:
        """BASE's initialisation on BASE's inputs: BASE itself when it is one."""
        if self.init is None:
            return context.InitSide(F=F_A, views=pre_A, label=self.base.label,
                                     seed=self.base.seed)
        model = self.init() if callable(self.init) else self.init
        check_pair(self.base.cfg, model.cfg, self.s, f"BASE's initialisation {model.label}")
        F_0, pre_0 = model_pass(model, xs_A, self.s, self.gated, self.progress)
        return context.InitSide(F=F_0, views=pre_0, label=model.label, seed=model.seed)

    def base_rest(self, sd: dict) -> np.ndarray:
        """BASE's features on all n inputs of side ``sd``: the first leg's sequences' and,
        computed once when a suspect first needs them, the rest's."""
        if len(sd["F_A"]) < len(sd["xs"]):
            sd["F_A"] = np.concatenate([sd["F_A"], features_only(
                self.base, sd["xs"][self.n1:], self.s, self.progress)])
        return sd["F_A"]

    # ------------------------------------------------------------------ each need's preparer
    def prepare_init(self, sd: dict, al, suspect, pre_B) -> context.InitSide:
        return sd["init_side"]

    def prepare_nulls(self, sd: dict, al, suspect, pre_B) -> context.Nulls:
        ids = null_seeds(self.s.null_models, [self.base.seed, sd["init_seed"], *self.seeds,
                                              suspect.seed])
        key = (tuple(ids), None if sd["idx"] is None else al.key())
        if key not in self.null_features:
            self.null_features[key] = [F for _, F in init_features(
                self.base.cfg, ids, sd["xs"], self.s.output, progress=self.progress)]
        return context.Nulls(seeds=ids, F=self.null_features[key])

    def prepare_views(self, sd: dict, al, suspect, pre_B) -> context.Views:
        return context.Views(A=sd["pre_A"], B=pre_B, screen_A=sd["screen_A"])

    # need -> (the Context field it fills, its preparer)
    PREPARERS = {registry.INIT: ("init", prepare_init), registry.NULLS: ("nulls", prepare_nulls),
                 registry.GATED: ("views", prepare_views)}

    # ------------------------------------------------------------------ one suspect
    def run(self, load) -> dict:
        """Load a suspect, run the tests on it, release it: one :func:`compare` result."""
        s = self.s
        suspect = load()
        d_out = check_pair(self.base.cfg, suspect.cfg, s, suspect.label)
        al = V.align(self.base, suspect, self.base_strings) if s.input == "tokens" else None
        sd = self.side(al)
        xs_B = sd["xs"] if sd["idx"] is None else al.suspect_ids[sd["idx"]].astype(np.int32)
        F_A = sd["F_A"][self.head]
        F_B, pre_B = model_pass(suspect, xs_B[self.head], s, self.gated, self.progress)
        D.check_features(F_A, F_B)
        ctx = context.Context(settings=s, base=self.base, suspect=suspect, xs=sd["xs"],
                               F_A=F_A, F_B=F_B, d_out=d_out)
        for need in self.needs:
            if need in self.PREPARERS:
                field, prepare = self.PREPARERS[need]
                setattr(ctx, field, prepare(self, sd, al, suspect, pre_B))
        results = self.run_tests(ctx, sd, suspect, xs_B)
        notes = []
        if al is not None and (not al.identity or al.suspect_only or (
                al.by == "ids" and "preset" not in (self.base.kind, suspect.kind))):
            notes.append(al.describe())
        return {"results": results, "features": (ctx.F_A, ctx.F_B), "notes": notes,
                "d_out": d_out, "n": len(ctx.F_A), "seq_len": s.seq_len,
                "suspect": suspect.label, "vocab": al.record() if al is not None else None}

    def run_tests(self, ctx: context.Context, sd: dict, suspect, xs_B) -> dict:
        """Every selected test's result on ``ctx``, in the registry's order, and the
        combinations'. With a sequential combination the first leg runs first on its
        sequences, and the others stop there where its result says so and theirs there do
        not call the stop off; else every leg reads all n inputs (both models' features of
        the rest computed here)."""
        s, seq, done = self.s, self.seq, {}
        if self.n1 is not None:
            done[seq.first] = registry.entry(seq.first).runner()(ctx)
            why = seq.stopper()(done[seq.first])
            early = ({e.name: e.runner()(ctx) for e in self.entries if e.name not in done}
                     if why is not None else {})
            if why is not None and all(seq.holder()(why, r) for r in early.values()):
                done.update({k: stopped(r, seq.first, why) for k, r in early.items()})
            else:  # no stop, or one that the other legs' first results call off
                ctx.F_A = self.base_rest(sd)
                ctx.F_B = np.concatenate([ctx.F_B, features_only(suspect, xs_B[self.n1:], s,
                                                                 self.progress)])
                D.check_features(ctx.F_A, ctx.F_B)
        results = {e.name: done[e.name] if e.name in done else e.runner()(ctx)
                   for e in self.entries}
        results.update(registry.combined(results))
        return results


def stopped(result, first: str, why: str = "decided"):
    """``result``, of a leg that stopped at the first leg's inputs (``details['stopped_at']``:
    its n; ``details['stopped_because']``: ``why``, the first leg's stop reason), saying so
    in its note."""
    result.details["stopped_at"] = result.n
    result.details["stopped_because"] = why
    because = {"decided": f"the {first} leg decided the verdict alone",
               "nothing": f"the {first} leg found nothing"}.get(why, why)
    result.note = "; ".join(x for x in (
        f"stopped at the first {result.n} inputs: {because} (--no-sequential runs it on all "
        f"n)", result.note) if x)
    return result
