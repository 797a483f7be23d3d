"""The lineage study end to end on a tiny family (experiments/common/family.py
``smoke_family``): training through ``family.ensure`` (a second call resumes nothing), the four
experiments, their files, and the RESULTS.md section with one row per claim."""

import dataclasses
import json
import shutil

import pytest

from bornbiased_jax.stats import kendall_null_sd

from bornbiased_jax import data
from bornbiased_jax.errors import UserError
from experiments.lineage import claims as lineage_study
from experiments import render
from experiments.common import family
from experiments.lineage import tables as lineage
from experiments.lineage.measure import PAPER, RUNS, SMOKE, Study, scale_family


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The 8 runs of a tiny family. Their train steps differ only in seeds and schedule
    constants, so the session's compilation cache (conftest.py) compiles each kind once."""
    root = tmp_path_factory.mktemp("lineage")
    fam = family.smoke_family(root / "corpora")
    runs = root / "runs"
    for name in RUNS:
        family.ensure(name, runs, fam=fam)
    return root, runs, fam


@pytest.mark.slow
def test_lineage_pipeline_end_to_end(smoke, monkeypatch):
    root, runs, fam = smoke
    reads, load_corpus = [], data.load_corpus

    def counting_load_corpus(specs, *a, **kw):
        reads.append(list(specs))
        return load_corpus(specs, *a, **kw)

    monkeypatch.setattr(data, "load_corpus", counting_load_corpus)
    assert all(family.finished(n, runs, fam) for n in RUNS)
    before = {n: (runs / n / "metrics.jsonl").read_text() for n in RUNS}
    for name in RUNS:  # finished runs are left as they are
        family.ensure(name, runs, fam=fam)
    assert {n: (runs / n / "metrics.jsonl").read_text() for n in RUNS} == before
    study = Study(runs, dict(SMOKE), root / "cache", fam)
    out = root / "results"
    lineage.run_all(study, out, "cpu", records=root / "records")
    render.save_record(root / "records", "lineage_runs", lineage.runs_record(runs, fam, "cpu"))
    # REEF's windows and ICS's token counts come from one read of the base corpus
    assert reads.count(list(family.corpus("base", fam))) == 1
    for name in lineage.experiment_names("llama2"):
        for ext in ("json", "md", "png"):
            assert (out / name / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    t4b = json.loads((out / "table4b" / "table4b.json").read_text())["records"]
    assert [r["pair"] for r in t4b] == [f"s{s} init vs s{s} base" for s in (42, 123, 1000, 2000)]
    t5 = json.loads((out / "table5" / "table5.json").read_text())["records"]
    assert [(r["shift"], r["seed"], r["same_lineage"]) for r in t5] == [
        ("prose", 1000, True), ("code", 1000, True), ("prose", 123, False), ("code", 123, False)]
    for r in t4b + t5:
        assert set(r["seedprint"]) == {"tokens"}
        assert set(r["baselines"]) == {"intrinsic", "reef", "pcs", "ics"}
        for sp in r["seedprint"].values():
            assert all(0 <= sp[k] <= 1 for k in ("paper/t_mean", "paper/u_mean",
                                                  "official/two_phi_bar", "calibrated/exact"))
    # An init against itself-after-2-steps of a tiny model: PCS near 1 but not 1.
    assert all(0.5 < r["pcs_own_init"] < 1 for r in t4b)
    f11 = json.loads((out / "figure11" / "figure11.json").read_text())["records"]
    curve = f11["inputs"]["tokens"]["curves"]
    assert [r["step"] for r in curve["base-s42"]] == [1, 2]
    assert [r["step"] for r in curve["base-s123"]] == [0, 1, 2]
    assert all(0 <= r[k] <= 1 for rows in curve.values() for r in rows
               for k in ("paper_t", "paper_u"))
    recs = render.load_records(root / "records")
    assert set(recs) == {"figure11", "table4b", "table4c", "table5", "lineage_runs"}
    assert recs["table5"]["records"] == json.loads((out / "table5" / "table5.json").read_text())[
        "records"]  # the committed record is the experiment's JSON, compact
    body = lineage_study.section(recs)
    claims = [line.split(" | ")[0] for line in body.splitlines() if line.startswith("| ")]
    assert sum(c.startswith("| Figure 11") for c in claims) == 1
    assert sum(c.startswith("| Table 4b") for c in claims) == 4
    assert sum(c.startswith("| Table 4c") for c in claims) == 4
    assert sum(c.startswith("| Table 5") for c in claims) == 4
    assert sum(c.startswith(("| base-s", "| cont-")) for c in claims) == len(RUNS)
    # The Qwen-style repeat's experiments (Figure 14, Tables 9-12) are the same measurements
    # with the paper's Qwen pairs and values; run here on the same tiny runs (features cached).
    lineage.run_all(study, out, "cpu", "qwen2", records=root / "records")
    render.save_record(root / "records", "lineage_qwen2_runs",
                       lineage.runs_record(runs, fam, "cpu", "qwen2"))
    t9 = json.loads((out / "table9" / "table9.json").read_text())["records"]
    assert [r["pair"] for r in t9] == ["s123 init vs s1000 init", "s1000 init vs s123 init",
                                       "s42 init vs s2000 init", "s2000 init vs s42 init"]
    t11 = json.loads((out / "table11" / "table11.json").read_text())["records"]
    assert [r["pair"] for r in t11][1] == "s1000 init vs s123 base"
    t12 = json.loads((out / "table12" / "table12.json").read_text())["records"]
    assert t12[0]["paper"]["t"] == 8.49e-214 and t12[0]["paper"]["reef"] == 0.957
    recs = render.load_records(root / "records")
    qwen = lineage_study.section(recs, "qwen2")
    claims = [line.split(" | ")[0] for line in qwen.splitlines() if line.startswith("| ")]
    assert sum(c.startswith("| Figure 14") for c in claims) == 1
    for table in ("9", "10", "11", "12"):
        assert sum(c.startswith(f"| Table {table}:") for c in claims) == 4, table
    results = root / "RESULTS.md"
    results.write_text("# Results\n\n<!-- lineage:begin -->\nstale row\n<!-- lineage:end -->\n")
    text = render.write(results, root / "records")
    assert results.read_text() == text and "stale row" not in text  # nothing carried over
    assert text.count("<!-- lineage:begin -->") == 1
    assert render.sections(text)["lineage"] == body.strip()
    assert render.sections(text)["lineage_qwen2"] == qwen.strip()
    assert "Not measured yet" in render.sections(text)["lineage_hfinit"]
    # The HF-init family's measurements (here the same runs again: the names are the point)
    # go to records of their own and a section of their own; neither overwrites the other.
    lineage.run_all(study, out, "cpu", records=root / "records", suffix="_hfinit")
    render.save_record(root / "records", "lineage_runs_hfinit",
                       lineage.runs_record(runs, fam, "cpu", suffix="_hfinit"))
    recs = render.load_records(root / "records")
    assert {"table4c", "table4c_hfinit", "lineage_runs_hfinit"} <= set(recs)
    assert recs["table4c_hfinit"]["run"]["experiment"] == "table4c_hfinit"
    hf = render.write(results, root / "records")
    hf_body = render.sections(hf)["lineage_hfinit"]
    assert hf_body.startswith("## Lineage with the released code's HF default init")
    assert sum(line.startswith("| Table 4c") and "[HF init]" in line
               for line in hf_body.splitlines()) == 4
    assert "the section below measures the same family with it" in render.sections(hf)["lineage"]


def test_paper_scale_family_follows_the_released_training_code(tmp_path):
    from bornbiased_jax.training.config import model_config
    from bornbiased_jax.training.optimizer import lr_schedule

    fam = family.LINEAGE_PAPER
    pre = fam.pretrain
    cfg = model_config(pre, pre.vocab_size)
    assert (cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_ff, cfg.vocab_size, cfg.max_seq_len,
            cfg.tie_embeddings) == (768, 12, 12, 2048, 32_000, 2048, False)
    assert cfg.residual_std == cfg.init_std == 0.02  # HF's default init: no residual scaling
    assert pre.steps * pre.batch_size * pre.seq_len == pytest.approx(10e9, rel=1e-4)
    assert (pre.lr, pre.warmup, pre.schedule, pre.weight_decay, pre.bf16) == (
        3e-4, 200, "linear", 0.1, True)
    assert (pre.b1, pre.b2, pre.grad_clip) == (0.9, 0.999, 1.0)  # HF Trainer's defaults
    assert fam.corpora == {"base": ["hf:Skylion007/openwebtext:train"],
                           "prose": ["hf:fhswf/TinyStoriesV2_cleaned:train"],
                           "code": ["hf:tyzhu/the-stack-py:train"]}
    assert float(lr_schedule(pre)(pre.steps)) == 0.0  # linear decay to 0
    # a continued run starts from its seed's final base checkpoint, on its own corpus
    tc, docs, _ = family.spec("cont-prose-s1000", tmp_path, fam)
    assert tc.init_from == f"{(tmp_path / 'base-s1000').absolute()}@{pre.steps}"
    assert (tc.lr, tc.warmup, tc.weight_decay, tc.seq_len, tc.schedule, tc.b2) == (
        2e-5, 100, 0.01, 2048, "linear", 0.999)
    assert tc.steps * tc.batch_size * tc.seq_len == pytest.approx(2 * 25e6, rel=0.05)
    assert docs == fam.corpora["prose"]
    # `lineage --scale paper` measures this family, not the CPU one: runs that the CPU family
    # counts as finished (its settings in run.json, a checkpoint at its last step) are
    # refused here with the settings that differ, not measured or trained over
    for run in RUNS:
        cpu_tc = family.spec(run, tmp_path, family.DEFAULT)[0]
        (tmp_path / run / "checkpoints" / str(cpu_tc.steps) / "default").mkdir(parents=True)
        (tmp_path / run / "run.json").write_text(
            json.dumps({"train_config": dataclasses.asdict(cpu_tc)}))
    assert all(family.finished(run, tmp_path, family.DEFAULT) for run in RUNS)
    assert scale_family("paper", None) == fam
    study = Study(tmp_path, dict(PAPER), tmp_path / "cache", fam)
    with pytest.raises(UserError, match="made with other settings than this family's .*"
                                        "'steps': \\(500, 76294\\)"):
        study.require(*RUNS)
    # an unfinished run of the right settings is reported as not finished
    for run in RUNS:
        shutil.rmtree(tmp_path / run)
    with pytest.raises(UserError, match="runs not finished .*base-s42"):
        study.require(*RUNS)
    with pytest.raises(UserError, match="unknown corpus name"):
        scale_family("paper", ["docs=/x"])


# ----------------------------------------------------------- verdict rules, hand-made records --

def _sp(p, tau=0.08):
    """One input kind's SeedPrint results with t and U p-values ``p``."""
    return {"paper/t_mean": p, "paper/u_mean": p, "official/two_phi_bar": p,
            "calibrated/exact": 0.01 if p <= 0.01 else 0.5, "calibrated/z": 2.5,
            "calibrated/exact_valid": True, "paper/mean_tau": tau, "paper/S": 40}


def _own_pair(pcs, p=1e-30, reef=0.3):
    """An init vs its own trained model (one lineage), with Table 8's paper values."""
    rec = {"pair": "s42 init vs s42 base", "same_lineage": True,
           "paper": {"t": 2.2e-8, "u": 6.28e-8, "intrinsic": -0.021, "reef": 0.375,
                     "pcs": 0.580, "ics": 0.196},
           "seedprint": {"tokens": _sp(1e-30), "gaussian": _sp(p)},
           "baselines": {"intrinsic": -0.02, "reef": reef, "pcs": pcs, "ics": 0.37},
           "pcs_no_norms": pcs - 0.07, "pcs_own_init": pcs}
    return {"run": {"settings": {"n": 1000}}, "records": [rec]}


def test_pair_rule_is_partly_when_only_a_baseline_differs():
    """SeedPrint's t and U marks equal the paper's and only PCS's does not: partly reproduced,
    saying which part holds and which baseline differs with its numbers; when a SeedPrint mark
    differs too, differs; when every mark is the paper's, reproduced."""
    from bornbiased_jax import verdicts as V

    c = lineage_study.pair_claims("table4b", _own_pair(pcs=0.964))[0]
    assert c.verdict == V.PARTLY
    assert c.why == ("holds: SeedPrint (t and U give the paper's marks for tokens and gaussian "
                     "inputs); does not hold: the baselines whose mark (similarity >= 0.8 says "
                     "one lineage) is not the paper's: PCS 0.964 vs the paper's 0.580 (without "
                     "the gains 0.894: training moved the weights less than in the paper)")
    # two baselines off: both named, in the table's order
    c = lineage_study.pair_claims("table4b", _own_pair(pcs=0.964, reef=0.85))[0]
    assert c.verdict == V.PARTLY and "REEF 0.850 vs the paper's 0.375; PCS 0.964" in c.why
    # SeedPrint misses the lineage with Gaussian inputs: differs, whatever the baselines
    c = lineage_study.pair_claims("table4b", _own_pair(pcs=0.964, p=0.5))[0]
    assert c.verdict == V.DIFFERS and "; t (gaussian); U (gaussian); missed (gaussian)" in c.why
    assert c.why.startswith("PCS 0.964 vs the paper's 0.580") and "holds" not in c.why
    c = lineage_study.pair_claims("table4b", _own_pair(pcs=0.5, p=0.5))[0]
    assert c.verdict == V.DIFFERS and "vs the paper's" not in c.why
    # every mark the paper's (PCS below 0.8, as the paper's 0.580)
    c = lineage_study.pair_claims("table4b", _own_pair(pcs=0.5))[0]
    assert c.verdict == V.REPRODUCED and c.why == ""


def _fig14(**kinds):
    """A Figure 14 record: per input kind, (p-values of the seed-42 run's checkpoints, those of
    the seed-123 run's), each p given to both t and U, or a (t, U) pair."""
    def curve(ps, first):
        return [{"step": first + 50 * i, "mean": 0.1, "std": 0.02,
                 "paper_t": p[0] if isinstance(p, tuple) else p,
                 "paper_u": p[1] if isinstance(p, tuple) else p} for i, p in enumerate(ps)]
    return {"run": {}, "records": {"inputs": {
        kind: {"curves": {"base-s42": curve(own, 50), "base-s123": curve(other, 0)},
               "shift": [{"step": 50, "diff": 0.1, "p_u": 1e-3}], "kendall_null_sd": 0.02}
        for kind, (own, other) in kinds.items()}}}


def test_figure14_rule_needs_the_other_lineage_not_rejected():
    """Reproduced only when every checkpoint of the lineage is called related (t and U <=
    0.01) and those of the seed-123 run no more often than the level allows (95 %
    Clopper-Pearson interval reaching 0.01: 1 of 11 does, 2 of 11 do not); every input kind
    by the same rule."""
    from bornbiased_jax import verdicts as V

    own = [1e-30] * 10
    rows = lineage_study.figure14_claims(_fig14(tokens=(own, [0.3] * 11),
                                                gaussian=(own, [1e-30] * 11)))
    tok, gau = rows
    assert tok.verdict == V.REPRODUCED and tok.why == ""
    assert "seed-123 run (another lineage, its init counted): t and U p <= 0.01 at 0/11" in tok.ours
    assert gau.verdict == V.DIFFERS
    assert gau.why == ("the test does not separate the lineages here: it also calls 11/11 "
                       "checkpoints of the seed-123 run (another lineage) related, beyond its "
                       "level (95 % Clopper-Pearson interval of that rate from 0.72 > 0.01)")
    assert "t and U p <= 0.01 at 11/11 checkpoints (t or U at 11/11)" in gau.ours
    # one unrelated checkpoint of 11 called related is within the level; two are not
    one = lineage_study.figure14_claims(_fig14(tokens=(own, [1e-5] + [0.3] * 10)))[0]
    assert one.verdict == V.REPRODUCED
    assert "also calls 1/11 checkpoints of the seed-123 run related, within its level" in one.why
    two = lineage_study.figure14_claims(_fig14(tokens=(own, [1e-5] * 2 + [0.3] * 9)))[0]
    assert two.verdict == V.DIFFERS and "also calls 2/11 checkpoints" in two.why
    # a checkpoint the decision does not call related (U > 0.01) does not count against it
    t_only = lineage_study.figure14_claims(_fig14(tokens=(own, [(1e-5, 0.5)] * 11)))[0]
    assert t_only.verdict == V.REPRODUCED and "(t or U at 11/11)" in t_only.ours
    # the lineage missed at a checkpoint and the other one rejected: both reasons
    both = lineage_study.figure14_claims(_fig14(tokens=([1e-30] * 9 + [0.2], [1e-30] * 11)))[0]
    assert both.verdict == V.DIFFERS and both.why.startswith("p > 0.01 at steps [500]; the "
                                                             "test does not separate")
    # without the other lineage's checkpoints the test's level cannot be checked
    none = lineage_study.figure14_claims(_fig14(tokens=(own, [])))[0]
    assert none.verdict == V.UNTESTABLE


def _cross_pair(p_gauss):
    """An init vs another seed's trained model (two lineages), its Gaussian-input t and U p."""
    rec = {"pair": "s123 init vs s1000 base", "same_lineage": False,
           "paper": {"t": 0.385, "u": 0.486},
           "seedprint": {"tokens": _sp(0.5), "gaussian": _sp(p_gauss)},
           "baselines": {"intrinsic": 0.2, "reef": 0.3, "pcs": 0.69, "ics": 0.0},
           "pcs_no_norms": 0.0, "pcs_own_init": 0.96}
    return {"run": {"settings": {"n": 1000}}, "records": [rec]}


def test_each_lineage_row_names_its_init_and_whether_its_gaussian_verdict_survives():
    """Rows of the GPT-2-scaled family and of the HF-init family name their init; a Gaussian-
    input row says whether the paper's test is right or wrong about the pair under both inits:
    a false lineage under one init and none under the other does not survive the change; the
    same marks under both do. Without the other family's record, each Gaussian-input row says
    that it was not measured under the other init."""
    from bornbiased_jax import verdicts as V

    false_gpt2, none_hf, false_hf = _cross_pair(1e-30), _cross_pair(0.4), _cross_pair(1e-20)
    assert lineage_study.pair_claims("table4c", false_gpt2)[0].verdict == V.DIFFERS
    assert lineage_study.pair_claims("table4c", none_hf)[0].verdict == V.REPRODUCED
    said = lineage_study.init_sentence("table4c", false_gpt2, none_hf, "gpt2")
    (label, text), = said.items()
    assert label == "Table 4c: s123 init vs s1000 base"
    assert text == ("Gaussian inputs with the HF init: t 0.4, U 0.4, the paper's test right about "
                    "this pair (wrong with the GPT-2-scaled init): the Gaussian-input verdict "
                    "does not survive the change of init")
    back = lineage_study.init_sentence("table4c", none_hf, false_gpt2, "hf")
    assert "with the GPT-2-scaled init: t 1.00e-30" in next(iter(back.values())) \
        and "does not survive" in next(iter(back.values()))
    same = lineage_study.init_sentence("table4c", false_gpt2, false_hf, "gpt2")
    assert next(iter(same.values())).endswith("wrong about this pair (wrong with the GPT-2-scaled "
                                              "init): the Gaussian-input verdict survives the "
                                              "change of init")
    unknown = ("Not measured with the HF init: whether this Gaussian-input verdict survives the "
               "change of init is not known")
    assert lineage_study.init_sentence("table4c", false_gpt2, None, "gpt2") == {
        "Table 4c: s123 init vs s1000 base": unknown}
    tokens_only = _cross_pair(1e-30)
    del tokens_only["records"][0]["seedprint"]["gaussian"]
    assert lineage_study.init_sentence("table4c", tokens_only, None, "gpt2") == {}
    assert lineage_study.init_sentence("table4c", false_gpt2, _cross_pair(1e-30) | {
        "records": []}, "gpt2") == {"Table 4c: s123 init vs s1000 base": unknown}  # the pair
    # not measured under the other init
    # in the rows: the init in the name, the sentence after the rule's reasons
    names = ["figure11", "table4b", "table4c", "table5"]
    fig11 = {"run": {}, "records": {"inputs": {"gaussian": {
        "shift": [{"step": 50, "diff": 0.1, "p_u": 1e-3}],
        "curves": {"base-s42": [{"step": 500, "mean": 0.1, "std": 0.02}],
                   "base-s123": [{"step": 0, "mean": 0.0, "std": 0.02}]},
        "kendall_null_sd": 0.02}}}}
    recs = {"figure11": fig11, "table4b": _own_pair(pcs=0.5), "table4c": false_gpt2,
            "table5": _own_pair(pcs=0.5)}
    plain = lineage_study.claims(recs)
    assert [c.claim.endswith("[GPT-2-scaled init]") for c in plain] == [True] * 4
    assert all(c.why.endswith(unknown) for c in plain if "(tokens" not in c.claim)
    assert "survives the change of init" not in " ".join(c.why for c in plain).replace(
        unknown, "")
    both = {**recs, **{n + "_hfinit": r for n, r in recs.items()}, "table4c_hfinit": none_hf}
    gpt2 = {c.claim: c for c in lineage_study.claims(both)}
    hf = {c.claim: c for c in lineage_study.claims(both, init="hf")}
    row = gpt2["Table 4c: s123 init vs s1000 base [GPT-2-scaled init]"]
    assert row.verdict == V.DIFFERS and row.why.startswith("t (gaussian); U (gaussian)")
    assert row.why.endswith(". " + text)
    assert hf["Table 4c: s123 init vs s1000 base [HF init]"].why.endswith(
        "(right with the HF init): the Gaussian-input verdict does not survive the change of init")
    assert gpt2["Figure 11 (gaussian inputs): seed-42 init vs checkpoints [GPT-2-scaled init]"
                ].why.endswith("the Gaussian-input verdict survives the change of init")
    assert lineage_study.survival_summary(both) == (
        "Gaussian-input pairs measured under both inits (Tables 4b / 8, 4c, 5): the paper's "
        "test's marks survive the change of init in 2 of 3: 2 true lineages found under both "
        "(GPT-2-scaled init: t 1.00e-30, U 1.00e-30, mean tau on S +3.8 sd; HF init: t "
        "1.00e-30, U 1.00e-30, mean tau on S +3.8 sd). They do not in Table 4c: s123 init vs "
        "s1000 base (each row gives its marks under both).")


def test_survival_summary_gives_the_effect_beside_the_count():
    """A false lineage called related under both inits counts as surviving, but the summary
    says how strongly under each: p from 1e-40 to 0.004 and mean tau from +3.8 to +0.6 sd
    (the committed HF-init family's three Table 4c survivors) reads as a survivor only just."""
    def cross(p, tau):
        rec = _cross_pair(p)
        rec["records"][0]["seedprint"]["gaussian"]["paper/mean_tau"] = tau
        return rec

    sd = kendall_null_sd(1000)
    recs = {"table4b": _own_pair(pcs=0.5), "table4c": cross(1e-40, 3.8 * sd),
            "table5": _own_pair(pcs=0.5)}
    hf = {"table4b_hfinit": _own_pair(pcs=0.5, p=1e-20),
          "table4c_hfinit": cross(0.004, 0.6 * sd), "table5_hfinit": _own_pair(pcs=0.5)}
    text = lineage_study.survival_summary({**recs, **hf})
    assert text.startswith("Gaussian-input pairs measured under both inits (Tables 4b / 8, "
                           "4c, 5): the paper's test's marks survive the change of init in 3 "
                           "of 3: 2 true lineages found under both (GPT-2-scaled init: t "
                           "1.00e-30, U 1.00e-30, mean tau on S +3.8 sd; HF init: t "
                           "1.00e-30..1.00e-20, U 1.00e-30..1.00e-20")
    assert text.endswith("; and 1 unrelated pair called related under both (GPT-2-scaled "
                         "init: t 1.00e-40, U 1.00e-40, mean tau on S +3.8 sd; HF init: t "
                         "0.004, U 0.004, mean tau on S +0.6 sd).")
    hf["table4c_hfinit"] = cross(0.4, 0.0)  # called unrelated with the HF init: not a survivor
    text = lineage_study.survival_summary({**recs, **hf})
    assert "in 2 of 3: 2 true lineages" in text and "unrelated pair called" not in text
    assert text.endswith("They do not in Table 4c: s123 init vs s1000 base (each row gives "
                         "its marks under both).")


def test_qwen_style_rows_say_whether_their_gaussian_verdict_survives_the_hf_init():
    """Once the Qwen-style HF-init records exist (<experiment>_hfinit), the Qwen-style rows stop
    saying 'not measured': Figure 14's Gaussian row gives its verdict under the HF init (its
    record is a checkpoint curve, not pairs), a Table 9-12 pair its marks under both, and the
    HF-init section's summary counts the Qwen tables (9, 10, 11, 12)."""
    own = [1e-30] * 10
    gpt2 = _fig14(tokens=(own, [0.3] * 11), gaussian=(own, [1e-30] * 11))
    hf = _fig14(tokens=(own, [0.3] * 11), gaussian=(own, [0.3] * 11))
    said = lineage_study.init_sentence("figure14", gpt2, hf, "gpt2")
    (label, text), = said.items()
    assert label.startswith("Figure 14 (gaussian inputs)")
    assert text.startswith("with the HF init: reproduced") and text.endswith(
        "does not survive the change of init (differs with the GPT-2-scaled init)")
    t11 = _cross_pair(1e-30)
    t11["records"][0]["pair"] = "s123 init vs s1000 base"
    recs = {"figure14": gpt2, "table9": _cross_pair(1e-30), "table10": _own_pair(pcs=0.5),
            "table11": t11, "table12": _own_pair(pcs=0.5)}
    both = {**recs, **{n + "_hfinit": r for n, r in recs.items()},
            "figure14_hfinit": hf, "table11_hfinit": _cross_pair(0.4)}
    rows = {c.claim: c for c in lineage_study.claims(both, "qwen2")}
    fig = rows["Figure 14 (gaussian inputs): seed-42 init vs checkpoints (Qwen-style) "
               "[GPT-2-scaled init]"]
    assert fig.why.endswith("does not survive the change of init (differs with the "
                            "GPT-2-scaled init)")
    t11_row = rows["Table 11: s123 init vs s1000 base [GPT-2-scaled init]"]
    assert "the paper's test right about this pair (wrong with the GPT-2-scaled init)" in t11_row.why
    assert not any("Not measured with the HF init" in c.why for c in rows.values())
    summary = lineage_study.survival_summary(both, "qwen2")
    assert summary.startswith("Gaussian-input pairs measured under both inits (Tables 9, 10, "
                              "11, 12): the paper's test's marks survive the change of init in "
                              "3 of 4")
    assert summary.endswith("They do not in Table 11: s123 init vs s1000 base (each row gives "
                            "its marks under both).")
