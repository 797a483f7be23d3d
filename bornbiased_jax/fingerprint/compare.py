"""Compare two model sources: features on shared random inputs, then the chosen lineage tests.

This is the library behind ``bornbiased fingerprint BASE SUSPECT``."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

from bornbiased_jax.defaults import CALIBRATED_NULL_MODELS, SEED_LIMIT
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint import calibrated as C
from bornbiased_jax.fingerprint import identity_dims as D
from bornbiased_jax.fingerprint import matched as M
from bornbiased_jax.fingerprint import permutation as P
from bornbiased_jax.fingerprint.algorithm1 import paper_test
from bornbiased_jax.fingerprint.features import init_features, model_features
from bornbiased_jax.fingerprint.official import official_test
from bornbiased_jax.fingerprint.result import ALPHA, LineageResult, check_alpha
from bornbiased_jax.probes.inputs import check_kind, probe_inputs
from bornbiased_jax.probes.outputs import check_output
from bornbiased_jax.sources import LoadedModel

TESTS = ("paper", "official", "calibrated", "aligned", "permutation", "matched")
# The tests a verdict line uses, the first that ran: 'aligned' (the calibrated test with the
# spearman_aligned statistic, from the BASE's *initialisation*): exact, and it sees through a
# renamed basis (the lineage benchmark: it alone held its level and found every weight-lineage
# copy); it needs BASE's initialisation. Else 'permutation': exact for any pair, two forward
# passes, but a renamed copy evades it. The others are there to compare with the paper.
# Between them, 'any_pair' (computed, not chosen: :func:`any_pair`) when both the permutation and
# the matched test ran: each leg at alpha / 2, so the exact leg keeps its level and the matched
# leg (robust to renamings and rotations) adds its power.
RECOMMENDED = ("aligned", "any_pair", "permutation")
# The matched test reads the first MATCHED_SEQS sequences up to position MATCHED_MAX_T (its
# pre-activations of BASE are kept: rows x F x 2L values; capturing them stores every layer's
# attention map too, so long sequences would cost T^2 memory per head for no gain in rows)
MATCHED_SEQS, MATCHED_MAX_T = 128, 68
# Null initialisations use seeds from here on (skipping the base's and suspect's own seeds), far
# from the small seeds people usually pick, so a suspect trained from a common seed is not
# accidentally among the null models.
NULL_SEED_START = 1_000_000


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a comparison runs. ``m``/``k`` default to ``identity_dims.default_size(d_out)``.

    The defaults run the permutation test on token inputs: it needs nothing but the two models.
    The recommended ``tests=RECOMMENDED`` adds the aligned test, which needs the base's
    initialisation (``compare_many(init=...)``). Algorithm 1 as written uses
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
    matched_eps: float = 0.0

    def __post_init__(self):
        bad = [t for t in self.tests if t not in TESTS]
        if bad or not self.tests:
            raise UserError(f"unknown test(s) {bad}; choose among {TESTS}")
        check_kind(self.input)
        check_output(self.output)
        _check_int("n (inputs)", self.n, 3, "the lineage tests need n >= 3")
        _check_int("seq_len", self.seq_len, 1)
        for name in ("m", "k"):
            if getattr(self, name) is not None:  # the upper bound d_out is checked in compare()
                _check_int(name, getattr(self, name), 1, "and at most d_out")
        _check_int("null_models", self.null_models, 1,
                   "the calibrated test needs at least one null model")
        _check_int("trials", self.trials, 1, "the paper test needs at least one null trial")
        _check_int("probe_seed", self.probe_seed, 0, hi=SEED_LIMIT - 1)
        if self.statistic not in C.STATISTICS:
            raise UserError(f"unknown calibrated statistic {self.statistic!r}; choose one of "
                            f"{C.STATISTICS}")
        if ("calibrated" in self.tests and self.statistic == "spearman_aligned"
                and self.output == "logits"):
            raise UserError("the calibrated test's 'spearman_aligned' statistic aligns residual "
                            "coordinates, which a renaming can move; logits are indexed by "
                            "token ids, which it cannot (and a V x V assignment is needlessly "
                            "large): use --output normed or prenorm with it")
        check_alpha(self.alpha)
        if "aligned" in self.tests and (self.input != "tokens" or self.output == "logits"):
            raise UserError("the aligned test needs token inputs (--input tokens) and residual "
                            "outputs (--output normed or prenorm): it aligns residual "
                            "coordinates, which a renaming moves and token ids do not")
        if "aligned" in self.tests:
            need = math.ceil(1 / self.alpha - 1 - 1e-9)
            if self.null_models < need:
                raise UserError(
                    f"{self.null_models} null models are too few for the aligned test at "
                    f"alpha = {self.alpha}: its exact p is at least 1/(K+1) = "
                    f"{1 / (self.null_models + 1):.3g}, so it could never reject; use "
                    f"--null-models >= 1/alpha - 1 = {need} (the default is "
                    f"{CALIBRATED_NULL_MODELS})")
        if "matched" in self.tests:
            if self.input != "tokens":
                raise UserError("the matched test needs token inputs (--input tokens): both "
                                "models must read the same ids for their units to be compared")
            _check_int("matched_seqs", self.matched_seqs, 1)
            if not 0 <= self.matched_eps < 1:
                raise UserError(f"matched_eps = {self.matched_eps!r} must lie in [0, 1)")
        if "permutation" in self.tests:
            P.check_applicable(self.input, self.output)
            P.check_draws(self.permutations, self.alpha)
            if self.permutation_statistic not in P.STATISTICS:
                raise UserError(f"unknown permutation statistic {self.permutation_statistic!r}; "
                                f"choose one of {P.STATISTICS}")


def _check_int(name: str, value, lo: int, why: str = "", hi: int | None = None) -> None:
    """A UserError unless ``value`` is an integer in [lo, hi] (hi None: no upper bound)."""
    ok = (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
          and lo <= value and (hi is None or value <= hi))
    if not ok:
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise UserError(f"{name} = {value!r} must be an integer {rng}"
                        + (f" ({why})" if why else ""))


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
    with the base's under ``settings`` (another output width, another vocabulary with token
    inputs or logits, a context shorter than the inputs). Needs configurations only, so every
    suspect can be checked before any model is loaded."""
    s = settings
    d_out = base_cfg.vocab_size if s.output == "logits" else base_cfg.d_model
    d_out_s = suspect_cfg.vocab_size if s.output == "logits" else suspect_cfg.d_model
    if d_out != d_out_s or (s.input == "gaussian" and base_cfg.d_model != suspect_cfg.d_model):
        what = "vocabularies" if d_out != d_out_s and s.output == "logits" else \
            "residual widths (d_model)"
        a, b = (d_out, d_out_s) if d_out != d_out_s else (base_cfg.d_model, suspect_cfg.d_model)
        raise UserError(f"{suspect}: the models' {what} differ ({a} vs {b}): SeedPrint feeds "
                        f"both the same inputs and compares output coordinate j of one model "
                        f"with coordinate j of the other, so both need the same {what}")
    if s.input == "tokens" and base_cfg.vocab_size != suspect_cfg.vocab_size:
        hint = ("the permutation test needs token inputs; for models with different "
                "vocabularies use --test calibrated --input gaussian (exact only when BASE is "
                "an initialisation)" if "permutation" in s.tests else "use --input gaussian")
        raise UserError(f"{suspect}: the models' vocabularies differ ({base_cfg.vocab_size} vs "
                        f"{suspect_cfg.vocab_size}): random token ids mean different things; "
                        f"{hint}")
    for name, size in (("m", s.m), ("k", s.k)):
        if size is not None:
            D.check_size(name, size, d_out)
    if "matched" in s.tests:
        M.check_applicable(base_cfg, "BASE")
        M.check_applicable(suspect_cfg, suspect)
        if (base_cfg.n_layers, base_cfg.d_ff) != (suspect_cfg.n_layers, suspect_cfg.d_ff):
            raise UserError(f"{suspect}: the matched test compares MLP layer l's units with "
                            f"layer l's, so both models need the same depth and MLP width "
                            f"(BASE {base_cfg.n_layers} x {base_cfg.d_ff}, suspect "
                            f"{suspect_cfg.n_layers} x {suspect_cfg.d_ff}); use --test "
                            f"permutation")
        if s.seq_len <= M.DROP:
            raise UserError(f"the matched test drops the first {M.DROP} positions of every "
                            f"sequence: --seq-len must exceed {M.DROP}")
    if s.seq_len > min(base_cfg.max_seq_len, suspect_cfg.max_seq_len):
        raise UserError(f"{suspect}: sequence length {s.seq_len} exceeds a model's context "
                        f"({base_cfg.max_seq_len}, {suspect_cfg.max_seq_len})")
    return d_out


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

    Returns {'results': {test: LineageResult} (in the order of ``TESTS``),
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
    s = settings
    if "aligned" in s.tests and init is None and not base.is_init:
        raise UserError(f"the aligned test compares the suspect with BASE's initialisation, "
                        f"which is not known for {base.label}; give BASE as preset:NAME@SEED "
                        f"or a training run (its step 0 is read), or choose another --test")
    xs = probe_set(base, s)
    F_A = model_features(base, xs, s.output, progress=progress)
    F_0, init_label, init_seed = None, base.label, base.seed
    if "aligned" in s.tests:
        if init is None:
            F_0 = F_A
        else:
            model = init() if callable(init) else init
            check_pair(base.cfg, model.cfg, s, f"BASE's initialisation {model.label}")
            F_0 = model_features(model, xs, s.output, progress=progress)
            init_label, init_seed = model.label, model.seed
            del model
    matched_xs = xs[:s.matched_seqs, :MATCHED_MAX_T] if "matched" in s.tests else None
    pre_A = (M.preactivations(base.params, base.cfg, matched_xs)
             if "matched" in s.tests else None)
    nulls: dict = {}  # null seeds -> their features (one set, unless a suspect's seed is one)
    for load in suspects:
        suspect = load()
        d_out = check_pair(base.cfg, suspect.cfg, s, suspect.label)
        F_B = model_features(suspect, xs, s.output, progress=progress)
        D.check_features(F_A, F_B)
        results = {}
        if "paper" in s.tests:
            results["paper"] = paper_test(F_A, F_B, s.m, trials=s.trials, alpha=s.alpha,
                                          rng=np.random.default_rng(s.probe_seed))
        if "official" in s.tests:
            results["official"] = official_test(F_A, F_B, s.k, alpha=s.alpha)
        null_ids = null_seeds(s.null_models, [base.seed, init_seed, *seeds, suspect.seed])
        if ({"calibrated", "aligned"} & set(s.tests)) and tuple(null_ids) not in nulls:
            nulls[tuple(null_ids)] = [F for _, F in init_features(
                base.cfg, null_ids, xs, s.output, progress=progress)]
        if "calibrated" in s.tests:
            r = C.calibrated_test(F_A, F_B, iter(nulls[tuple(null_ids)]),
                                  statistic_name=s.statistic, m=s.m, alpha=s.alpha)
            if not base.is_init:
                extra = ("the base is not an initialisation, so the null models (fresh inits of "
                         "its architecture) are not exchangeable with it: the p-value assumes "
                         "an unrelated trained model correlates with the suspect no more than "
                         "a fresh init does")
                r = dataclasses.replace(r, note="; ".join(filter(None, [r.note, extra])))
            r.details["null_seeds"] = f"{null_ids[0]}..{null_ids[-1]} ({len(null_ids)})"
            results["calibrated"] = r
        if "aligned" in s.tests:
            r = C.calibrated_test(F_0, F_B, iter(nulls[tuple(null_ids)]),
                                  statistic_name="spearman_aligned", alpha=s.alpha)
            r.details["base_initialisation"] = init_label
            r.details["null_seeds"] = f"{null_ids[0]}..{null_ids[-1]} ({len(null_ids)})"
            results["aligned"] = dataclasses.replace(r, test="aligned")
        if "permutation" in s.tests:
            results["permutation"] = P.permutation_test(
                F_A, F_B, statistic=s.permutation_statistic, permutations=s.permutations,
                alpha=s.alpha, rng=np.random.default_rng(s.probe_seed))
        if "matched" in s.tests:
            pre_B = M.preactivations(suspect.params, suspect.cfg, matched_xs)
            results["matched"] = M.matched_test(pre_A, pre_B, alpha=s.alpha, eps=s.matched_eps,
                                                exact=base.is_init or suspect.is_init)
            del pre_B
        if "permutation" in results and "matched" in results:
            results["any_pair"] = any_pair(results["permutation"], results["matched"])
        yield {"results": results, "features": (F_A, F_B), "notes": [], "d_out": d_out,
               "n": s.n, "seq_len": s.seq_len, "suspect": suspect.label}
        del suspect, F_B


def any_pair(perm: LineageResult, matched: LineageResult) -> LineageResult:
    """The verdict for a pair whose initialisation is unknown: the permutation test (exact,
    evaded by renamings) and the matched test (robust to renamings and rotations) each at
    alpha / 2, so p = min(1, 2 min(p_perm, p_matched)) (Bonferroni); ``details['decided_by']``
    names the leg with the smaller p."""
    legs = {"permutation": perm.p, "matched": matched.p}
    leg = min(legs, key=legs.get)
    p = min(1.0, 2 * legs[leg])
    return LineageResult(
        "any_pair", {"bonferroni": p}, perm.alpha, perm.n, perm.d_out, np.arange(0),
        np.arange(0.0), "none", p, np.arange(0.0),
        {"decided_by": leg, "p_permutation": perm.p, "p_matched": matched.p},
        "each leg at alpha / 2; " + (matched.note or ""))
