"""Figure 2's rule (Finding 2.1: the representations of random sequences contract, the more
the deeper), on a record of last-token cosine curves per block: the initialisation study's row
and the Gemma 3 study's per arm (:mod:`experiments.real_model.gemma3_claims`) judge by it."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.stats import jackknife_se, seed_mean, t_quantile
from bornbiased_jax.verdicts import DIFFERS, PARTLY, REPRODUCED, UNDERPOWERED, Claim
from experiments.common.paper_values import PAPER_TABLE2

FIGURE2_BETWEEN_MODELS = 10  # from this many models, Figure 2's SE is the spread between them
# The paper gives its contraction one size: Table 2's average last-token cosine of its nano full
# model, 0.46. A curve that rises by less than this fraction of it (0.046: an order of magnitude
# below) is not the "severe" contraction of Finding 2.1, however significant its steps.
FIGURE2_SIZE_FRACTION = 0.1


def figure2_size_threshold() -> float:
    """The rise (last block minus embeddings) below which a curve is not Finding 2.1's."""
    return FIGURE2_SIZE_FRACTION * PAPER_TABLE2["full model"][0]


def figure2_intervals(per: list, contrasts: np.ndarray) -> tuple:
    """Each contrast's estimate (on the mean curve over the models), standard error, degrees of
    freedom and the source of the standard error (see :func:`figure2_claim`); SE None where no
    standard error can be formed."""
    curves = np.array([p["block_mean_cos"] for p in per], dtype=np.float64)  # (S, L+1)
    S = curves.shape[0]
    est = contrasts @ curves.mean(0)
    loo = [np.asarray(p["block_mean_cos_loo"], dtype=np.float64)
           for p in per if "block_mean_cos_loo" in p]
    if S >= FIGURE2_BETWEEN_MODELS or (S >= 2 and len(loo) < S):
        per_model = curves @ contrasts.T  # (S, C)
        se = np.array([seed_mean(per_model[:, j]).se for j in range(len(contrasts))])
        return est, se, S - 1, (f"the spread between {S} models (which share the probe "
                                "sequences and embeddings)")
    if len(loo) == S and len({x.shape for x in loo}) == 1:
        B = loo[0].shape[0]
        loo_mean = np.mean(loo, axis=0)  # (B, L+1): the networks ran on the same blocks
        se = jackknife_se(loo_mean @ contrasts.T)
        return est, se, B - 1, (f"a delete-one-block jackknife over the {B} blocks of sequences "
                                f"that the {S} network(s) share: these networks, not the "
                                "preset's spread")
    return est, None, None, None


def figure2_claim(d: dict) -> Claim:
    """Figure 2 (Finding 2.1), "as the model deepens, this contraction becomes more pronounced",
    on the mean last-token cosine curve over the record's models (blocks 0 = embeddings, ...,
    L), by t intervals of its steps:

      * the overall steps, embeddings -> block 1 and block 1 -> block L (two-sided 95 %);
      * each of the L consecutive steps k -> k + 1 (two-sided 1 - 0.05 / L, Bonferroni), for
        a fall inside the trend.

    Standard errors: from ``FIGURE2_BETWEEN_MODELS`` models on (or from 2 models when the record
    keeps no leave-one-block-out cosines), the spread of the step between the models (sd /
    sqrt(S), S - 1 df): random networks of the preset on the shared probe set; otherwise the
    delete-one-block jackknife of the mean curve over the blocks of sequences that the networks
    share (``block_mean_cos_loo``; B - 1 df): these networks.

    The size: the rise from the embeddings to the last block against
    :func:`figure2_size_threshold`, a tenth of the paper's only number for the contraction
    (Table 2's 0.46), so that a flat or negligible curve cannot pass.

    Differs when an overall step lies below 0, or when the whole rise's interval lies below the
    size threshold (the row says whether the curve is flat: every step's interval holds 0);
    partly reproduced when both overall steps lie above 0 but a consecutive step lies below 0
    (the cosine falls somewhere); reproduced when both lie above 0, no consecutive step falls
    and the rise's interval lies above the threshold; consistent, underpowered otherwise, or
    with no standard error."""
    per = d["records"]["per_seed"]
    L = len(per[0]["block_mean_cos"]) - 1
    eye = np.eye(L + 1)
    overall = np.stack([eye[1] - eye[0], eye[L] - eye[1], eye[L] - eye[0]])  # + the whole rise
    consecutive = eye[1:] - eye[:-1]  # (L, L+1)
    est, se, df, source = figure2_intervals(per, np.concatenate([overall, consecutive]))
    settings = d.get("run", {}).get("settings", {})
    scale = ", ".join(x for x in (
        settings.get("preset"), settings.get("seq_len") and f"T = {settings['seq_len']:,}",
        settings.get("num_seqs") and f"N = {settings['num_seqs']:,}") if x)
    m = np.mean([p["block_mean_cos"] for p in per], axis=0)
    models = f"{len(per)} model" + ("s" if len(per) != 1 else "")
    ours = ((f"{scale}, {models}: " if scale else "") + "mean over seeds per block: "
            + ", ".join(f"{x:.3f}" for x in m))
    names = ("embeddings -> block 1", f"block 1 -> block {L}")
    claim = ("Figure 2 / Finding 2.1", "last-token cosine grows with depth (nano, T = 1024)", ours)
    if se is None:
        why = (f"no standard error: {len(per)} model(s) and no leave-one-block-out cosines in the "
               "record; steps " + ", ".join(f"{n} {e:+.4f}" for n, e in zip(names, est)))
        return Claim(*claim, UNDERPOWERED, why, section="Sec. 4")
    half = t_quantile(df) * se[:2]
    rise, half_rise = est[2], t_quantile(df) * se[2]
    half_k = t_quantile(df, 1 - 0.025 / L) * se[3:]
    up = all(est[:2] - half > 0)
    down = [n for n, e, h in zip(names, est, half) if e + h < 0]
    falls = [k for k in range(L) if est[3 + k] + half_k[k] < 0]
    rises = sum(est[3 + k] - half_k[k] > 0 for k in range(L))
    text = "; ".join(f"{n} {e:+.4f} ± {h:.4f}" for n, e, h in zip(names, est, half))
    size = figure2_size_threshold()
    why = (f"steps {text} (95 % t intervals, {df} df, from {source}); consecutive steps: "
           f"{rises} of {L} rise, {len(falls)} fall (Bonferroni over {L}); size: the rise "
           f"from the embeddings to block {L} is {rise:+.4f} ± {half_rise:.4f}, against "
           f"{size:.3f} ({FIGURE2_SIZE_FRACTION:g} of the paper's {PAPER_TABLE2['full model'][0]}, "
           f"Table 2's nano last-token cosine)")
    if down:
        return Claim(*claim, DIFFERS, f"the cosine falls from {' and '.join(down)}; {why}",
                     section="Sec. 4")
    if rise + half_rise < size:
        flat = not rises and all(abs(e) <= h for e, h in zip(est[:2], half))
        what = (f"flat: no step rises, the cosine stays within {np.abs(m).max():.4f} of 0 at "
                f"every block" if flat and np.abs(m).max() < size else
                "the curve rises by less than a tenth of the paper's contraction")
        return Claim(*claim, DIFFERS, f"{what}; {why}", section="Sec. 4")
    if up and falls:
        return Claim(*claim, PARTLY, "grows overall but falls from block(s) "
                     + ", ".join(f"{k} -> {k + 1}" for k in falls) + f"; {why}", section="Sec. 4")
    if up and rise - half_rise >= size:
        return Claim(*claim, REPRODUCED, why, section="Sec. 4")
    if up:
        return Claim(*claim, UNDERPOWERED, f"the rise's interval holds the size threshold; {why}",
                     section="Sec. 4")
    return Claim(*claim, UNDERPOWERED, f"an overall step's interval holds 0; {why}",
                 section="Sec. 4")
