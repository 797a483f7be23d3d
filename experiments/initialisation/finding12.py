"""Finding 1.2 (paper Sec. 3): "the longer the sequence, the larger the model, the more
extreme the preference", judged from Table 1(a) and (c) at the paper's shapes. Two parts, of two
kinds of evidence:

  * length, within networks: each network's top-1 frequency at its longest T against its
    shortest, on the same network (a paired, within-network comparison);
  * scale, between networks: the paper's claim is about models of two sizes, and each size's
    networks vary from seed to seed (Table 1(a)'s spread piece: 20 nano networks at T = 64), so
    the 1.2B networks' frequencies are ranked among the nano networks' (one-sided exact
    Mann-Whitney). The comparisons of one 1.2B network with one nano network (the pooled
    Mantel-Haenszel test) are reported beside it as what they are: conditional on those
    networks.
"""

from __future__ import annotations

import math

from scipy import stats

from bornbiased_jax.stats import mantel_haenszel_greater
from bornbiased_jax.verdicts import DIFFERS, PARTLY, REPRODUCED, UNDERPOWERED, Claim
from experiments.common.paper_values import PAPER_TABLE1
from experiments.initialisation.levels import ALPHA


def _count(r: dict) -> int:
    """A Table 1 record's top-1 count (older records keep only the frequency)."""
    return int(r["top1_count"]) if "top1_count" in r else round(r["top1_freq"] * r["num_seqs"])


def _proportion_p(k1: int, n1: int, k2: int, n2: int) -> float:
    """One-sided p of "the second proportion is larger" (Fisher's exact test)."""
    return float(stats.fisher_exact([[k2, n2 - k2], [k1, n1 - k1]],
                                    alternative="greater").pvalue)


def finding12_claim(nano: dict, big: dict | None = None, spreads: tuple = ()) -> Claim:
    """Finding 1.2 from Table 1(a) (and (c) when measured), two directional parts:

      * "the longer the sequence, the more extreme", within networks: for every model and
        seed, the top-1 frequency at its longest measured T against that at its shortest (the
        1.2B model's seeds count once (c) is measured at two lengths), judged by one pooled
        test with the comparison-by-comparison tests beside it;
      * "the larger the model, the more extreme", between networks
        (:func:`scale_between_networks`): at every T measured for both, the 1.2B networks
        ranked among the nano networks (Table 1(a)'s seeds and those of the ``spreads``
        pieces measured at that T: today T = 64 only). The
        one-network-against-one comparisons at every T measured for both (pooled as below)
        are reported beside it, conditional on those networks: they cannot say that another
        draw of either size would order the same way.

    The length part *holds* when the one-sided Cochran-Mantel-Haenszel test over its
    comparisons (:func:`~bornbiased_jax.stats.mantel_haenszel_greater`: one 2 x 2 table of
    top-1 count and N per comparison, the strata model and seed) gives p <= 0.01 and no
    comparison goes significantly the other way; *fails* when one does (one-sided Fisher exact
    p <= 0.01 reversed) or the pooled test rejects the other direction; is *undecided*
    otherwise. A comparison not significant on its own at 1 % is evidence in the paper's
    direction, not against it, so the row gives each comparison's one-sided Fisher exact p and
    how many go the paper's way, and does not fail a part for them. The scale part holds in
    full only when the between-network test holds at every nano length ("at the same input
    length"); holding at some, undecided or unmeasured at the others, it holds "at T = ...
    only", which gives partly; it fails when the reverse test rejects at some length. Reproduced when every
    part holds (the scale part needs (c)); differs when one fails; partly when a part holds,
    wholly or in part, and the other does not; consistent, underpowered when none is decided,
    or when every measured part holds and the scale part is not measured."""
    def compare(pairs):
        if not pairs:
            return "undecided (no comparison)", []
        tables, ok, bad, way, text = [], [], [], [], []
        for a, b in pairs:
            k1, n1 = _count(a), a["num_seqs"]
            k2, n2 = _count(b), b["num_seqs"]
            tables.append((k1, n1, k2, n2))
            up, down = _proportion_p(k1, n1, k2, n2), _proportion_p(k2, n2, k1, n1)
            ok.append(up <= ALPHA)
            bad.append(down <= ALPHA)
            way.append(k2 / n2 > k1 / n1)
            text.append(f"{a['top1_freq']:.2%} -> {b['top1_freq']:.2%} (p {up:.2g})")
        pooled = mantel_haenszel_greater(tables)
        against = mantel_haenszel_greater([(k2, n2, k1, n1) for k1, n1, k2, n2 in tables])
        state = ("fails" if any(bad) or against <= ALPHA else
                 "holds" if pooled <= ALPHA else "undecided")
        state += (f" (pooled one-sided Mantel-Haenszel p {pooled:.2g} over {len(pairs)} "
                  f"comparison{'s' if len(pairs) > 1 else ''}; on their own: {sum(ok)} of "
                  f"{len(ok)} significant at {ALPHA:g}, {sum(way)} of {len(way)} in the "
                  f"paper's direction" + (f", {sum(bad)} significantly against it" if any(bad)
                                          else "") + ")")
        return state, text

    def by_seed_and_length(records):
        return {(r["seed"], r["seq_len"]): r for r in records}

    def length_pairs(by):  # each seed's shortest against its longest length
        Ts = sorted({T for _, T in by})
        seeds = sorted({s for s, T in by if (s, Ts[0]) in by and (s, Ts[-1]) in by})
        return Ts, seeds, [(by[(s, Ts[0])], by[(s, Ts[-1])]) for s in seeds]

    recs = nano["records"]
    parts, texts = {}, []
    by = by_seed_and_length(recs)
    Ts = sorted({r["seq_len"] for r in recs})
    pairs, names = [], []
    for model, d in (("", by), ("1.2B ", by_seed_and_length(big["records"]) if big else {})):
        ts, seeds, p = length_pairs(d) if d else ([], [], [])
        if len(ts) > 1 and p:
            pairs += p
            names.append((f"{model}T = {ts[0]} -> {ts[-1]}", seeds))
    if pairs:
        parts["length"], t = compare(pairs)
        i = 0
        for head, seeds in names:
            texts.append(f"{head}: " + "; ".join(
                f"seed {s}: {x}" for s, x in zip(seeds, t[i:i + len(seeds)])))
            i += len(seeds)
    else:
        parts["length"] = "undecided (one length measured)"
    if big is not None:
        bb = by_seed_and_length(big["records"])
        common = sorted((s, T) for (s, T) in bb if (s, T) in by)
        conditional, t = compare([(by[k], bb[k]) for k in common])
        texts.append("nano -> 1.2B: " + "; ".join(
            f"seed {s} T={T}: {x}" for (s, T), x in zip(common, t)))
        both = sorted({T for _, T in common})
        tested = {T: scale_between_networks(recs, big["records"], spreads, T) for T in both}
        between = "; ".join(text for _, text in tested.values()) or "no length measured for both"
        held = [T for T, (st, _) in tested.items() if st == "holds"]
        rest = sorted(set(Ts) - set(held))
        state = ("fails" if any(st == "fails" for st, _ in tested.values()) else
                 "holds" if held and not rest else
                 f"holds at T = {', '.join(f'{T:,}' for T in held)} only (T = "
                 f"{', '.join(f'{T:,}' for T in rest)} undecided between networks or not "
                 "measured for both sizes)" if held else "undecided")
        parts["scale"] = (f"{state} ({between}); conditional on these networks, one 1.2B "
                          f"against one nano network: {conditional}")
    states = [x.split(" (")[0] for x in parts.values()]
    if "fails" in states:
        verdict = DIFFERS
    elif all(x == "holds" for x in states) and "scale" in parts:
        verdict = REPRODUCED
    elif any(x.startswith("holds") for x in states) and not (
            all(x == "holds" for x in states) and "scale" not in parts):
        verdict = PARTLY
    else:  # nothing decided, or every measured part holds and the scale part is missing
        verdict = UNDERPOWERED
    why = "; ".join(f"{k}: {v}" for k, v in parts.items())
    if "scale" not in parts:
        why += "; scale: not measured (Table 1(c) has no record yet)"
    t1 = lambda part, seed, T: f"{100 * PAPER_TABLE1[(part, seed, T)][1]:.2f} %"  # noqa: E731
    return Claim("Finding 1.2 (longer sequences, larger models: more extreme)",
                 f"1.2B seed 43: {t1('c', 43, 64)} -> {t1('c', 43, 1024)} (T 64 -> 1,024; "
                 f"nano seed 42: {t1('a', 42, 64)} -> {t1('a', 42, 1024)}); 1.2B above nano at "
                 f"every T",
                 "; ".join(texts) + " (each comparison's one-sided Fisher exact p)", verdict,
                 why, "Sec. 3")


def scale_between_networks(nano: list[dict], big: list[dict], spreads: tuple,
                           T: int) -> tuple[str, str]:
    """The scale part between networks at length ``T``: the 1.2B networks' top-1 frequencies
    (``big``) ranked among the nano networks' (``nano``: Table 1(a)'s seeds, plus the networks
    of every spread piece in ``spreads`` measured at ``T``) by the one-sided exact Mann-Whitney
    test. Holds when p <= :data:`ALPHA`; fails when the reverse test's p is; undecided
    otherwise, saying so when the smallest attainable p, 1 / C(n + m, m), is above
    :data:`ALPHA` (too few networks to decide). Returns (state, text)."""
    nets = [r["top1_freq"] for r in nano if r["seq_len"] == T]
    for spread in spreads:
        if spread["run"]["settings"].get("seq_len") == T:
            nets += [r["top1_freq"] for r in spread["records"]]
    bigs = [r["top1_freq"] for r in big if r["seq_len"] == T]
    if not nets or not bigs:
        return "undecided", f"T = {T:,}: no networks of both sizes"
    up = float(stats.mannwhitneyu(bigs, nets, alternative="greater", method="exact").pvalue)
    down = float(stats.mannwhitneyu(bigs, nets, alternative="less", method="exact").pvalue)
    floor = 1 / math.comb(len(nets) + len(bigs), len(bigs))
    state = "holds" if up <= ALPHA else "fails" if down <= ALPHA else "undecided"
    above = [sum(x < b for x in nets) for b in bigs]
    text = (f"T = {T:,}: the {len(bigs)} 1.2B network(s) ({', '.join(f'{b:.2%}' for b in bigs)})"
            f" above {', '.join(map(str, above))} of {len(nets)} nano networks "
            f"({min(nets):.2%}-{max(nets):.2%}), one-sided exact Mann-Whitney p {up:.2g}")
    if state == "undecided" and floor > ALPHA:
        text += f" (cannot reach {ALPHA:g}: smallest attainable p {floor:.2g})"
    return state, text
