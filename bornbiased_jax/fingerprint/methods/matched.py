"""The matched test: a lineage test for any pair of gated-MLP models that no function-preserving
renaming evades, residual rotations included (beyond the paper).

Why MLP units. In a SwiGLU block, silu(x W_gate) * (x W_up) W_down, the residual stream admits
any rotation once the norm gains are folded (``rotation.rotate_residual``), heads admit per-head
V/O maps, but the hidden units admit only permutations, plus a scale or sign on each unit's up
column that W_down compensates (``rotation.scale_mlp_units``). The pre-activations x_l W_gate and
x_l W_up, on the normed MLP input x_l of layer l, are unchanged by residual permutations,
rotations, sign flips, norm-gain rescaling and head maps; a unit permutation relabels them, and
|Pearson r| absorbs the per-unit scale and sign.

Statistic. Both models read the same random token ids (or, with other vocabularies, the same
token strings: ``vocab``); the first :data:`DROP` positions of every sequence (where sinks carry
stereotyped activations that unrelated models share) are dropped. For a layer pair and view v in
{gate, up}, C^v_ij = |corr(Z^v_A[:, i], Z^v_B[:, j])| over the R remaining positions, and the
units are paired as reciprocal best partners; K = #{i : m_gate(i) = m_up(i)}: the units whose
gate and up views pick the same partner. A copy, renamed or not, has K near its width;
independent models near 0. Widths and depths may differ: ``unit_matching`` matches units across
widths, chooses the layer pairs across depths and gives the null's law.

Null. Re-pair A's up units with its gate units by a uniform permutation: at initialisation gate
and up columns are drawn independently, so the re-pairing leaves A's law unchanged, and K
follows the partial rencontres law of the two matchings' composition (``rencontres``; with
every unit paired in both views, the rencontres law, mean 1). The re-pairing is not
function-preserving, so no renaming absorbs it, and no forward pass is needed for it. Layers
combine by Fisher's method (each p_l is super-uniform given the earlier layers, which MLP l
does not feed). A discrete p is conservative; ``matched_test(randomise=...)`` breaks the ties
with a uniform draw.

Two trained models. Training couples a unit's gate and up columns, so the re-pairing no longer
keeps A's law, and the test rests on an assumption: independent models share at most ``slack``
doubly matched units per layer pair (p = P(K >= K_obs - slack)). Slack 0 fails: seeds trained
on identical data share some units, and more the longer they train. The default for two trained
models is a law of the tokens they were trained on and of the MLP width (``trained_slack``),
fitted on half the seeds of same-data families with checkpoints along training and judged on
the other half: a level not rejected where measured, an extrapolation beyond (every released
model), which the note and the verdict line say. When either model is an initialisation the
default slack is 0, where the test is valid.

Pass. The views are a probe (``probes.mlp_views``: the pre-activations captured with Flax's
``capture_intermediates``) that the sweep engine runs like every other SeedPrint pass
(``sweep.run_probe``: one planner and memory plan, chunks, padding, progress); beside the views
it reads the model's 'normed' SeedPrint feature from the same pass, as the feature probe
defines it (``probes.outputs.feature_of``), so that one forward pass of a sequence gives both
(:func:`features_and_preactivations`).

Cost: one forward pass per model (capturing the MLP pre-activations), the layer screen and about
2L correlation matrices F_A x F_B; no null forward pass. Non-gated MLPs (GPT-2-style presets) are
refused: their single view gives nothing to agree with.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import trained_slack
from bornbiased_jax.fingerprint.methods import unit_matching as U
from bornbiased_jax.fingerprint.runner.features import features_of
from bornbiased_jax.fingerprint.methods.rencontres import (fisher_log_p,  # noqa: F401
                                                         rencontres_log_sf)
from bornbiased_jax.fingerprint.methods.result import ALPHA, LineageResult, check_alpha, check_int
from bornbiased_jax.probes.mlp_views import mlp_views_probe
from bornbiased_jax.sweep import run_probe

DROP = 4  # positions dropped at the start of every sequence



def check_applicable(cfg: ModelConfig, what: str = "the model") -> None:
    if not (cfg.has_mlp and cfg.gated_mlp):
        raise UserError(f"the matched test needs a gated (SwiGLU) MLP, whose gate and up views "
                        f"of each unit it compares; {what} ({cfg.name}) has "
                        + ("no MLP" if not cfg.has_mlp else f"a non-gated {cfg.activation} MLP")
                        + ": use --test permutation")


def _standardise(z_RF: np.ndarray) -> np.ndarray:
    """Each column of ``z_RF`` (float32) centred and scaled to unit variance in place; a dead
    column (constant, or of a standard deviation below ``unit_matching.DEAD_RTOL`` of the
    layer's 90th percentile: a zero weight row's rounding noise) gives zeros, which
    ``unit_matching.live`` reads as dead."""
    const = z_RF.max(0) == z_RF.min(0)
    z_RF -= z_RF.mean(0, dtype=np.float64).astype(np.float32)  # float64 sums: large means
    sd = np.sqrt(np.einsum("rf,rf->f", z_RF, z_RF) / len(z_RF))
    if not np.isfinite(sd).all():
        raise UserError(f"{int((~np.isfinite(sd)).sum())} MLP units have non-finite "
                        f"pre-activations (NaN or inf in the model's weights or activations): "
                        f"the matched test cannot compare them")
    # relative to the layer's 90th percentile: robust to a majority of dead units
    scale = np.quantile(sd[~const], 0.9) if (~const).any() else 0.0
    z_RF /= np.where(const | (sd <= U.DEAD_RTOL * scale), np.inf, sd)
    return z_RF


def features_and_preactivations(params: dict, cfg: ModelConfig, tokens_NT, *,
                                n_views: int | None = None, t_views: int | None = None,
                                drop: int = DROP, seq_batch: int | None = None,
                                progress: bool = False, desc: str = "features"):
    """One forward pass of each sequence of ``tokens_NT`` (N, T) gives both what a comparison
    needs of a model: its 'normed' SeedPrint features (N, d) float32
    (``features.features_of``), and, from the first ``n_views`` sequences (default all) up to
    position ``t_views`` (default T), the per-layer (gate, up) pre-activations of
    :func:`preactivations`. Both go through the sweep engine (``sweep.run_probe``: its plan,
    chunks and padding): the first ``n_views`` sequences through the views probe, which reads
    the features from the views' pass (``probes.mlp_views``), the rest through the feature
    probe alone (so the features of the rest are those ``passes.features_only`` computes;
    the two passes give a sequence's feature to float32 rounding). Attention
    is causal, so positions below ``t_views`` are the same whether or not the sequence goes
    on: the views are those of the truncated sequences (to float rounding). Capturing the views
    runs the whole attention matrix at length T: ``passes.model_pass`` uses this pass only
    where T is at most the views' length (:data:`compare.MATCHED_MAX_T`), and a model whose
    attention sees the whole sequence (``attn0_full``) is refused views shorter than its
    sequences. ``n_views=0``: the features alone (views None)."""
    tokens, n_views, t_views = _check_views(cfg, tokens_NT, n_views, t_views, drop)
    feats, pre = [], None
    if n_views:
        out = _views(params, cfg, tokens[:n_views], drop, t_views, True, seq_batch, progress,
                     desc)
        feats.append(np.asarray(out["features"], np.float32))
        pre = _standardised(out["views"])
    if n_views < len(tokens):
        feats.append(features_of(cfg, params, tokens[n_views:], "normed", seq_batch=seq_batch,
                                 progress=progress, desc=desc))
    return np.concatenate(feats).astype(np.float32, copy=False), pre


def preactivations(params: dict, cfg: ModelConfig, tokens_NT, *, drop: int = DROP,
                   seq_batch: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per layer, (gate, up) pre-activations (R, F), R = N (T - drop), of the model on the
    token ids ``tokens_NT``, standardised per unit (a constant unit gives zeros), float32: the
    views probe without the features (``probes.mlp_views``), run by ``sweep.run_probe``."""
    tokens, n, t = _check_views(cfg, tokens_NT, None, None, drop)
    return _standardised(_views(params, cfg, tokens, drop, t, False, seq_batch, False,
                                "views")["views"])


def _check_views(cfg: ModelConfig, tokens_NT, n_views, t_views, drop):
    """(tokens (N, T), n_views, t_views) checked and resolved (None: all N, T)."""
    check_applicable(cfg)
    tokens = np.asarray(tokens_NT)
    if tokens.ndim != 2 or tokens.shape[1] <= drop:
        raise UserError(f"the matched test needs (N, T) token ids with T > {drop}, got shape "
                        f"{tokens.shape}")
    N, T = tokens.shape
    n_views = N if n_views is None else min(n_views, N)
    t_views = T if t_views is None else min(t_views, T)
    if n_views < 0 or t_views <= drop:
        raise UserError(f"the matched test needs at least one sequence and positions beyond "
                        f"the first {drop}, got {n_views} sequences up to position {t_views}")
    if cfg.attention == "attn0_full" and t_views < T:
        raise UserError(f"{cfg.name}'s attention (attn0_full) averages the whole sequence, so "
                        f"its views at a position depend on later tokens: take its views from "
                        f"the truncated sequences (preactivations)")
    return tokens, n_views, t_views


def _views(params, cfg, tokens, drop, t_views, features, seq_batch, progress, desc):
    """``probes.mlp_views``'s outputs for ``tokens`` (host arrays, leading axis N), by
    ``sweep.run_probe`` on the head-free config, one program per architecture."""
    cfg_h, params_h = model.head_free(cfg, params, "features")
    return run_probe(mlp_views_probe(cfg_h, drop, t_views, features), cfg_h, params_h, tokens,
                     seq_batch=seq_batch, progress=progress, desc=desc)


def _standardised(views) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per layer, the (gate, up) views (N, R, F) as (N R, F) float32 rows (a bfloat16 model's
    views converted), standardised in place."""
    return [tuple(_standardise(np.asarray(z, np.float32).reshape(-1, z.shape[-1]))
                  for z in pair) for pair in views]


def matching(za: np.ndarray, zb: np.ndarray) -> np.ndarray:
    """m[i]: B's unit matched to A's unit i by |Pearson r| of standardised views (R, F_A) and
    (R, F_B), or -1 (``unit_matching.partners``: rectangular, dead units matched to none)."""
    return U.partners(za, zb)


@dataclasses.dataclass(frozen=True)
class Agreement:
    """Per layer l (A's layer l against B's layer l): K_l doubly matched units of F (A's width)."""

    K_L: np.ndarray
    F: int


def agreement(pre_a, pre_b) -> Agreement:
    """K_l for every layer l from two models' :func:`preactivations` (same inputs), layer l
    against layer l (``unit_matching.count_pair``: widths may differ, dead units uncounted);
    the test itself chooses the layer pairs (:func:`matched_test`)."""
    if len(pre_a) != len(pre_b):
        raise UserError(f"the models have {len(pre_a)} and {len(pre_b)} MLP layers; "
                        f"agreement compares layer l with layer l (matched_test chooses the "
                        f"pairs across depths)")
    K = [U.count_pair(a, b).K for a, b in zip(pre_a, pre_b)]
    return Agreement(np.asarray(K), int(pre_a[0][0].shape[1]))


def matched_test(pre_a, pre_b, *, alpha: float = ALPHA, slack: int = 0, exact: bool = False,
                 init: str | None = None, screen_a=None, slack_rule: dict | None = None,
                 randomise: np.random.Generator | None = None) -> LineageResult:
    """The matched test of H0 "B is independent of A" from the two models' pre-activations,
    across widths and depths (``unit_matching.match_layers``: each layer pair chosen by the
    screen, the partial rencontres law, the larger p of re-pairing either model).

    ``slack``: the doubly matched units per layer pair that independent *trained* models may
    share (see the module docstring); ``slack_rule``: how that slack was set, when by the law
    of training length (``trained_slack.rule``: its note and details are the result's);
    ``exact``: say that one model is an initialisation,
    where the p-value is exact (slack must then be 0); ``init``: which one, 'base' or
    'suspect' (its units are the ones re-paired; None: the larger p of either re-pairing).
    ``screen_a``: BASE's layer screen (``unit_matching.screen_views``), when a comparison
    computed it once for several suspects. The p of a discrete K is conservative (with two
    layers of 176 units its size at alpha = 0.01 is 0.0030, ``rencontres.size``);
    ``randomise``, a generator, breaks the ties with a uniform draw per layer,
    p_l = P(K > K_l) + U P(K = K_l) (``rencontres.randomised_log_sf``), exactly uniform where
    the null law holds (so it needs ``init``), at the price of a verdict that depends on the
    draws (kept in the details)."""
    check_alpha(alpha)
    if init not in (None, "base", "suspect"):
        raise UserError(f"init must be 'base', 'suspect' or None, got {init!r}")
    if randomise is not None and init is None:
        raise UserError("the randomised tie-break is exact only where one model is an "
                        "initialisation: say which (init='base' or 'suspect')")
    direction = {"base": "a", "suspect": "b", None: "both"}[init]
    lm = U.match_layers(pre_a, pre_b, slack=slack, direction=direction, screen_a=screen_a)
    rows = lm.suspect_rows()
    log_p = lm.log_p
    draws = None
    if randomise is not None:
        pairs = ([(l, int(lm.to_b[l])) for l in range(len(pre_a))] if direction == "a" else
                 [(int(lm.to_a[l]), l) for l in range(len(pre_b))])
        draws = randomise.uniform(size=len(pairs))
        log_p = fisher_log_p(np.array([lm.counts[k].log_p(slack, direction, u)
                                       for k, u in zip(pairs, draws)]))
    p = math.exp(log_p) if log_p > -745 else 0.0
    F_b = int(pre_b[0][0].shape[1])
    K_b = np.array([r["K"] for r in rows])
    a_L = K_b / F_b
    n_layers = len(rows)
    attributed = [r for r in rows if r["log10_p"] <= math.log10(alpha / n_layers)]
    if slack_rule is not None and (exact or slack_rule["slack"] != slack):
        raise UserError(f"slack_rule is for two trained models at its own slack "
                        f"({slack_rule['slack']}), got slack {slack} (exact: {exact})")
    note = (("exact null law, randomised tie-break (size alpha): one model is an "
             "initialisation" if draws is not None else
             "exact null law, conservative test (a discrete p): one model is an initialisation")
            if exact and slack == 0 else
            trained_slack.note(slack_rule) if slack_rule is not None else
            f"for two trained models the p-value assumes independent models share at most "
            f"{slack} doubly matched units per layer pair (set by the caller; the default is "
            f"a law of training length: docs/seedprint.md)")
    return LineageResult(
        test="matched", p_values={"fisher": p}, alpha=alpha, n=int(len(pre_a[0][0])),
        d_out=F_b, dims=np.arange(n_layers), taus=a_L, corr_kind="unit_agreement",
        statistic=float(a_L.mean()), null=np.array([]),
        details={"K_per_layer": K_b.tolist(), "units": F_b,
                 "base_units": int(pre_a[0][0].shape[1]), "base_layers": len(pre_a),
                 "base_layer_of": [r["base_layer"] for r in rows],
                 "suspect_layer_of": lm.to_b.tolist(),
                 "screen": [r["screen"] for r in rows], "slack": int(slack),
                 **({"slack_rule": slack_rule} if slack_rule is not None else {}),
                 "dead_units": {"base": U.dead_units(pre_a), "suspect": U.dead_units(pre_b)},
                 "attributed_layers": len(attributed),
                 "attributed_units": int(sum(r["K"] for r in attributed)),
                 "log10_p": log_p / math.log(10),
                 "log10_p_base_direction": lm.log_p_fisher_a / math.log(10),
                 "log10_p_suspect_direction": lm.log_p_fisher_b / math.log(10),
                 "log10_p_per_layer": [round(r["log10_p"], 3) for r in rows],
                 **({} if draws is None else {"randomised_u": draws.tolist()})},
        note=note)


def check_settings(s) -> None:
    """A UserError when the matched test cannot run with ``s`` (``compare.Settings``)."""
    if s.input != "tokens":
        raise UserError("the matched test needs token inputs (--input tokens): both "
                        "models must read the same ids for their units to be compared")
    check_int("matched_seqs", s.matched_seqs, 1)
    if s.matched_slack is not None:
        check_int("matched_slack", s.matched_slack, 0, "a whole number of units per layer")
    if s.matched_eps is not None and not 0 <= s.matched_eps < 1:
        raise UserError(f"matched_eps = {s.matched_eps!r} must lie in [0, 1)")
    if s.trained_tokens is not None and not (isinstance(s.trained_tokens, (int, float))
                                             and 0 < s.trained_tokens < math.inf):
        raise UserError(f"trained_tokens = {s.trained_tokens!r} must be a positive number of "
                        f"tokens (the longer-trained model's, e.g. 2e12)")


def check_pair(base_cfg: ModelConfig, suspect_cfg: ModelConfig, s, suspect: str) -> None:
    """A UserError naming ``suspect`` when the matched test cannot compare these two
    configurations under ``s`` (``compare.Settings``): both need gated MLPs; widths and depths
    may differ (units are matched across widths, layers across depths)."""
    check_applicable(base_cfg, "BASE")
    check_applicable(suspect_cfg, suspect)
    if s.seq_len <= DROP:
        raise UserError(f"the matched test drops the first {DROP} positions of every "
                        f"sequence: --seq-len must exceed {DROP}")


def from_context(ctx) -> LineageResult:
    """The matched test of one pair that ``compare`` prepared (``runner.context.Context``): exact
    when either model is an initialisation (slack 0 by default), else at the slack the user
    gave or the law of training length's (``trained_slack.rule`` at ``--trained-tokens``)."""
    s = ctx.settings
    A, B = ctx.views.A, ctx.views.B
    exact = ctx.base.is_init or ctx.suspect.is_init
    rule = None
    if exact or s.matched_slack is not None or s.matched_eps is not None:
        slack = default_slack(s.matched_slack, exact, s.matched_eps, A[0][0].shape[1])
    else:
        rule = trained_rule(A, B, s.trained_tokens)
        slack = rule["slack"]
    init = "base" if ctx.base.is_init else "suspect" if ctx.suspect.is_init else None
    return matched_test(A, B, alpha=s.alpha, slack=slack, exact=exact, init=init,
                        screen_a=ctx.views.screen_A, slack_rule=rule)


def trained_rule(pre_a, pre_b, tokens: float | None = None) -> dict:
    """The slack of two trained models from their :func:`preactivations`: the law of training
    length at ``tokens`` (None: assumed) for their widths and depths (``trained_slack.rule``);
    pass it to :func:`matched_test` as ``slack=rule["slack"], slack_rule=rule``."""
    return trained_slack.rule(tokens, (pre_a[0][0].shape[1], pre_b[0][0].shape[1]),
                              (len(pre_a), len(pre_b)))


def default_slack(slack: int | None, one_is_init: bool, eps: float | None = None,
                  units: int | None = None, tokens: float | None = None) -> int:
    """``slack`` when given (``eps``, a share of ``units``, the older spelling, else); 0 when
    one model is an initialisation (the test is exact); for two trained models the law of
    training length at ``tokens`` (None: the assumed tokens) and width ``units``
    (``trained_slack``)."""
    if slack is not None:
        return int(slack)
    if eps is not None:
        return math.ceil(eps * units - 1e-9)  # eps = u / F gives u, not u + 1 from rounding
    if one_is_init:
        return 0
    if units is None:
        raise UserError("the law of training length needs the MLP width (units)")
    return trained_slack.rule(tokens, (units, units), (1, 1))["slack"]
