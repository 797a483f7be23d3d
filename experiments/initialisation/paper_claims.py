"""The initialisation study at the paper's own shapes (experiments/paper_scale.py, records under
results/records/paper/): each CPU-scale claim's paper-scale row by the same rule, labelled with
the shape it was measured at, and the rows of the claims that exist only there (Findings 1.1-1.3,
``findings_paper``; Table 1 beside the paper's rows, ``table1_paper``)."""

from __future__ import annotations

from experiments.initialisation.claims import (FIGURE10_PAPER, figure1a_claim, figure3_row,
                                               figure4_from_figure7, figure7_claim,
                                               figure8_claim, figure10_claim, finding22_claim,
                                               table1_claim, table2_claim)
from bornbiased_jax.verdicts import UNTESTABLE, Claim
from experiments.common.contraction import figure2_claim
from experiments.initialisation.finding12 import finding12_claim
from experiments.initialisation.findings_paper import (TABLE1_PARTS, finding11_claim,
                                                       finding13_claim, seed_list_text,
                                                       seed_spread_claim)
from experiments.initialisation.table1_paper import (table1_label, table1_paper_claim,
                                                     table1c_magnitudes_claim)


# The shape a single-row piece measures, so that its row names it before its record exists,
# and the paper's value of such a row (experiments/campaign/paper_pieces.py's runners).
PENDING_SHAPES = {"figure10": {"layers": 12, "heads": 12, "d_model": 768, "num_seqs": 10_000,
                               "seq_len": 1024, "seed": 42}}
PENDING_PAPER = {"Figure 10 / Finding 1 (extended)": FIGURE10_PAPER}


def paper_scale_label(rec: dict) -> str:
    """'paper scale: 12L, 12H, d = 768, N = 2,000, T = 64-1,024, 2 models (seeds 42, 43)' from
    a record's settings."""
    s = rec["run"]["settings"]
    Ts = s.get("seq_lens") or [s.get("seq_len")]
    T = f"{min(Ts):,}-{max(Ts):,}" if len(Ts) > 1 else f"{Ts[0]:,}"
    n = s.get("num_seqs", s.get("n"))
    n = "/".join(f"{x:,}" for x in n) if isinstance(n, list) else f"{n:,}"
    if s.get("target_num_seqs"):  # a record of the blocks finished so far (--so-far)
        n = f"{n} of {s['target_num_seqs']:,} so far"
    seeds = s.get("seeds") or ([s["seed"]] if "seed" in s else [])
    models = ("" if not seeds else f", seed {seeds[0]}" if len(seeds) == 1 else
              f", {len(seeds)} models (seeds {seed_list_text(seeds)})")
    return (f"paper scale: {s['layers']}L, {s['heads']}H, d = {s['d_model']}, N = {n}, "
            f"T = {T}{models}")


def _with_seeds(rec: dict, other: dict) -> dict:
    """``rec`` labelled with its seeds and those of ``other`` (the spread row ranks both)."""
    s = rec["run"]["settings"]
    seeds = sorted(set(s["seeds"]) | set(other["run"]["settings"]["seeds"]))
    return {"run": {"settings": {**s, "seeds": seeds}}}


def _joined(paper: dict, names) -> dict | None:
    """The records of the pieces ``names`` that were measured, as one record (the first
    measured piece's run description), or None when none was: a Table 1 part measured by
    several pieces (another N, another length) is one set of rows."""
    have = [paper[n] for n in names if n in paper]
    if not have:
        return None
    records = [r for d in have for r in d["records"]]
    run = dict(have[0]["run"])
    if "settings" in run:  # the label names every length the pieces measured
        run["settings"] = {**run["settings"], "seq_lens": sorted({r["seq_len"] for r in records})}
    return {"run": run, "records": records}


def _figure3_row(paper: dict):
    """Figure 3's rule with the null simulated through the model's own unembedding
    (``figure3_null``), or saying which command simulates it when its record is missing."""
    return figure3_row(paper.get("figure3_null"),
                       "python -m experiments.initialisation.unembedding_null")


def paper_scale_claims(paper: dict) -> dict[str, Claim]:
    """{CPU claim name: its paper-scale row} from the paper-scale records ({name: record});
    a row whose records are missing is untestable and names the piece that measures it.
    Findings 1.2 and 1.3 exist only at paper scale."""
    def missing(claim, *pieces):
        shape = PENDING_SHAPES.get(pieces[0]) if len(pieces) == 1 else None
        label = paper_scale_label({"run": {"settings": shape}}) if shape else "paper scale"
        return Claim(f"{claim} [{label}]", PENDING_PAPER.get(claim, "-"), "no record yet; "
                     f"`python -m experiments.paper_scale {' '.join(pieces)}` measures it "
                     "(resumable)", UNTESTABLE, "not measured yet")

    def named(c: Claim, rec: dict) -> Claim:
        c.claim = f"{c.claim} [{paper_scale_label(rec)}]"
        return c

    out = {}
    a, b = paper.get("table1a"), paper.get("table1b")
    b10 = _joined(paper, ("table1b_n10k", "table1b_n10k_t1024"))
    c = _joined(paper, TABLE1_PARTS["c"][0])
    llama = [r for t in (b, b10) if t for r in t["records"]]
    if a and llama:
        t1 = table1_claim({"records": a["records"] + llama}, llama_hint=(
            "" if b10 else "`python -m experiments.paper_scale table1b-n10k` measures it"))
        ns = sorted({r["num_seqs"] for r in a["records"] + llama})
        t1 = table1_paper_claim(paper, t1)
        out["Table 1 / Finding 1"] = named(t1, {"run": {"settings": {
            **a["run"]["settings"], "num_seqs": ns if len(ns) > 1 else ns[0]}}})
    else:
        out["Table 1 / Finding 1"] = missing("Table 1 / Finding 1", *(
            [] if a else ["table1a"]) + ([] if llama else ["table1b", "table1b-n10k"]))
    out["Table 1(c) magnitudes"] = (named(table1c_magnitudes_claim(paper), c) if c else
                                    missing("Table 1(c) magnitudes", "table1c"))
    every = [r for names, _, _ in TABLE1_PARTS.values() for n in names if n in paper
             for r in paper[n]["records"]]
    out["Finding 1.1"] = (finding11_claim(every, table1_label(paper)) if every else
                          missing("Finding 1.1 (the preference across architectures, scales "
                                  "and lengths)", "table1a", "table1b-n10k", "table1c"))
    spreads = tuple(x for x in [paper.get("table1a_seeds")] if x)  # nano networks by seed
    out["Finding 1.2"] = (named(finding12_claim(a, c, spreads), a) if a else
                          missing("Finding 1.2", "table1a", "table1c"))
    out["Finding 1.3"] = (named(finding13_claim([r for r in (a, c) if r]), a) if a else
                          missing("Finding 1.3", "table1a", "table1c"))
    spread = paper.get("table1a_seeds")
    out["Table 1(a) seed spread"] = (
        named(seed_spread_claim(a, spread), _with_seeds(spread, a)) if a and spread else
        missing("Table 1(a) against the spread between seeds",
                *[n for n, r in (("table1a", a), ("table1a-seeds", spread)) if not r]))
    sizes = [r for r in a["records"] if r["seq_len"] == 1024] if a else None
    for name, claim, fn, piece in (
            ("figure1", "Figure 1a", lambda d: figure1a_claim(d, sizes), "table1a"),
            ("figure2_finding22", "Finding 2.2", finding22_claim, "table1a"),
            ("figure2_finding22", "Figure 2 / Finding 2.1", figure2_claim, "table1a"),
            ("table2_figure3", "Table 2 / Findings 3.1-3.2", table2_claim, "table2"),
            ("table2_figure3", "Figure 3 / Finding 3.1", _figure3_row(paper), "table2"),
            ("figure7", "Figure 4 / Finding 4", figure4_from_figure7, "table2"),
            ("figure7", "Figure 7 / Finding 3.2a", figure7_claim, "table2"),
            ("figure10", "Figure 10 / Finding 1 (extended)", _so_far(figure10_claim,
                                                                     "figure10"), "figure10")):
        out[claim] = named(fn(paper[name]), paper[name]) if name in paper else \
            missing(claim, piece)
    out["Figure 8 / Finding 5, Prop. 5"] = _figure8_row(paper.get("figure8"))
    return out


def _so_far(rule, piece: str):
    """``rule`` for a record that may hold only the blocks finished so far (``paper_scale
    --so-far``): the same verdict at the N measured, its reason saying how much of the pass is
    done and which command goes on with it."""
    def claim(d: dict) -> Claim:
        c, st = rule(d), d["run"]["settings"]
        if st.get("target_num_seqs"):
            k = st["blocks_finished"]
            c.why = "; ".join(x for x in (c.why, (
                f"judged at the {st['num_seqs']:,} sequences finished so far ({k} "
                f"block{'s' if k > 1 else ''}) of the pass's {st['target_num_seqs']:,}; "
                f"`python -m experiments.paper_scale {piece}` resumes it")) if x)
        return c
    return claim


def _figure8_row(d: dict | None) -> Claim:
    """Figure 8 at the paper's shape (``python -m experiments.figure8 --scale paper``: 12
    stacked attention blocks of the nano model, N = 2,000 Gaussian sequences at each of
    T = 16 and 512) by the CPU row's rule, or saying which command measures it."""
    name = "Figure 8 / Finding 5, Prop. 5"
    if d is None:
        return Claim(f"{name} [paper scale]", "-", "no record yet; `python -m "
                     "experiments.figure8 --scale paper` measures it (about half an hour on 2 CPU "
                     "cores; not resumable)", UNTESTABLE, "not measured yet")
    c, st = figure8_claim(d), d["run"]["settings"]
    c.claim = (f"{name} [paper scale: {st['n_layers']} attention blocks of {st['preset']}, "
               f"N = {'/'.join(f'{n:,}' for n in st['num_seqs'])}, "
               f"T = {'/'.join(f'{t:,}' for t in st['seq_lens'])}, seed {st['seed']}]")
    return c
