"""Figure 2's rule (Finding 2.1: the representations of random sequences contract, the more
the deeper), on a record of last-token cosine curves per block: the initialisation study's row
and the Gemma 3 study's per arm (:mod:`experiments.gemma3`) judge by it."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.stats import jackknife_se, seed_mean, t_quantile
from bornbiased_jax.verdicts import DIFFERS, PARTLY, REPRODUCED, UNDERPOWERED, Claim

FIGURE2_BETWEEN_MODELS = 10  # from this many models, Figure 2's SE is the spread between them


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

    Differs when an overall step lies below 0; partly reproduced when both lie above 0 but a
    consecutive step lies below 0 (the cosine falls somewhere); reproduced when both lie above 0
    and no consecutive step falls; consistent, underpowered otherwise, or with no standard
    error. The paper's "severe" contraction has no size to test against."""
    per = d["records"]["per_seed"]
    L = len(per[0]["block_mean_cos"]) - 1
    eye = np.eye(L + 1)
    overall = np.stack([eye[1] - eye[0], eye[L] - eye[1]])
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
    half_k = t_quantile(df, 1 - 0.025 / L) * se[2:]
    up = all(est[:2] - half > 0)
    down = [n for n, e, h in zip(names, est, half) if e + h < 0]
    falls = [k for k in range(L) if est[2 + k] + half_k[k] < 0]
    rises = sum(est[2 + k] - half_k[k] > 0 for k in range(L))
    text = "; ".join(f"{n} {e:+.4f} ± {h:.4f}" for n, e, h in zip(names, est, half))
    why = (f"steps {text} (95 % t intervals, {df} df, from {source}); consecutive steps: "
           f"{rises} of {L} rise, {len(falls)} fall (Bonferroni over {L}); the paper's "
           "\"severe\" has no size to test against")
    if down:
        return Claim(*claim, DIFFERS, f"the cosine falls from {' and '.join(down)}; {why}",
                     section="Sec. 4")
    if up and falls:
        return Claim(*claim, PARTLY, "grows overall but falls from block(s) "
                     + ", ".join(f"{k} -> {k + 1}" for k in falls) + f"; {why}", section="Sec. 4")
    if up:
        return Claim(*claim, REPRODUCED, why, section="Sec. 4")
    return Claim(*claim, UNDERPOWERED, f"an overall step's interval holds 0; {why}",
                 section="Sec. 4")
