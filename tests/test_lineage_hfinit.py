"""The HF-init lineage family: the lineage models' released init, the rest unchanged."""

import dataclasses
import subprocess
import sys

import pytest

from bornbiased_jax.config import apply_overrides
from bornbiased_jax.presets import get_preset
from experiments.lineage import family


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


def test_hf_init_is_refused_a_family_without_its_records():
    """The HF-init family's records and RESULTS.md section exist for the LLaMA-style family
    only: measuring the Qwen-style one with --init hf is refused before anything runs."""
    r = subprocess.run([sys.executable, "-m", "experiments.lineage", "--init", "hf", "--arch",
                        "qwen2"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--init hf --arch qwen2: only --train-only is implemented" \
        in r.stderr
