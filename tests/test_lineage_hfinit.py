"""The HF-init lineage family: the lineage models' released init, the rest unchanged."""

import dataclasses
import subprocess
import sys

import pytest

from bornbiased_jax.config_io import apply_overrides
from bornbiased_jax.presets import get_preset
from experiments.common import family


def test_hf_init_family_changes_only_the_residual_scaling():
    fam = family.with_hf_init(family.DEFAULT)
    pre, base = fam.pretrain, family.DEFAULT.pretrain
    assert pre.model_set == base.model_set + ("scale_residual_init=false",)
    assert dataclasses.replace(pre, model_set=base.model_set) == base
    assert fam.cont == family.DEFAULT.cont and fam.corpora == family.DEFAULT.corpora
    cfg = apply_overrides(get_preset(pre.preset), pre.model_set)
    assert cfg.residual_std == cfg.init_std == 0.02
    gpt2 = apply_overrides(get_preset(base.preset), base.model_set)
    assert gpt2.residual_std == pytest.approx(0.02 / (2 * gpt2.n_layers) ** 0.5)


def test_hf_init_runs_for_the_qwen_style_family_too():
    """`--arch qwen2 --init hf` goes through to the family's runs (runs/family-qwen2-hfinit
    unless --runs-dir says otherwise): with none trained and --no-train it stops at the first
    experiment saying which runs are missing, having refused nothing before; its family is the
    Qwen-style one with only the residual scaling changed."""
    import tempfile

    qwen = family.LINEAGE_ARCHS["qwen2"][0]
    fam = family.with_hf_init(qwen)
    assert fam.pretrain.preset == "qwen2-small" and fam.cont == qwen.cont
    assert fam.pretrain.model_set == qwen.pretrain.model_set + ("scale_residual_init=false",)
    cfg = apply_overrides(get_preset(fam.pretrain.preset), fam.pretrain.model_set)
    assert cfg.residual_std == cfg.init_std == 0.02
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-m", "experiments.lineage", "--init", "hf", "--arch",
                            "qwen2", "--no-train", "--runs-dir", f"{tmp}/runs", "--root",
                            f"{tmp}/out", "--records", f"{tmp}/records", "--results",
                            f"{tmp}/RESULTS.md"], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "only --train-only is implemented" not in r.stderr
    assert "runs not finished" in r.stderr and "base-s42" in r.stderr, r.stderr


@pytest.mark.slow
def test_qwen_style_hf_init_family_is_trained_measured_and_rendered(tmp_path):
    """The Qwen-style HF-init path end to end on a smoke family (qwen2-tiny, 2 + 1 steps):
    the family trains with the HF init, Figure 14 and Tables 9-12 are measured into records
    named <experiment>_hfinit (with lineage_qwen2_runs_hfinit), and RESULTS.md gets their
    section, each row naming the HF init; the GPT-2-scaled Qwen section, without records here,
    still says it is not measured."""
    from bornbiased_jax.sources import load_source
    from experiments import render
    from experiments.lineage import claims as lineage_claims
    from experiments.lineage import tables as lineage
    from experiments.lineage.measure import RUNS, SMOKE, Study

    fam = family.with_hf_init(family.smoke_family(tmp_path / "corpora", preset="qwen2-tiny"))
    runs = tmp_path / "runs"
    for name in RUNS:
        family.ensure(name, runs, fam=fam)
    cfg = load_source(f"{runs / 'base-s42'}@0").cfg
    assert cfg.name.startswith("qwen2") and cfg.residual_std == cfg.init_std
    study = Study(runs, dict(SMOKE), tmp_path / "cache", fam)
    records = tmp_path / "records"
    lineage.run_all(study, tmp_path / "out", "cpu", "qwen2", records=records,
                    suffix=lineage_claims.HFINIT)
    render.save_record(records, "lineage_qwen2_runs_hfinit",
                       lineage.runs_record(runs, fam, "cpu", "qwen2",
                                           suffix=lineage_claims.HFINIT))
    assert set(render.load_records(records)) == set(lineage_claims.QWEN2_HFINIT_EXPERIMENTS)
    text = render.write(tmp_path / "RESULTS.md", records)
    body = render.sections(text)["lineage_qwen2_hfinit"]
    assert body.startswith(f"## {lineage_claims.QWEN2_HFINIT_TITLE}")
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    for table in ("9", "10", "11", "12"):
        assert sum(r.startswith(f"| Table {table}:") and "[HF init]" in r for r in rows) == 4
    assert sum(r.startswith("| Figure 14") and "[HF init]" in r for r in rows) == 1
    assert "scale_residual_init=false" in body
    assert "Not measured yet" in render.sections(text)["lineage_qwen2"]
