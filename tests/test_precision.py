"""The float32 matmul precision: chosen per command, validated, and applied to traced programs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bornbiased_jax import cli, precision
from bornbiased_jax.commands import sweep
from bornbiased_jax.commands import train as train_command
from bornbiased_jax.errors import UserError


@pytest.fixture
def restore_precision():
    before = jax.config.jax_default_matmul_precision
    yield
    jax.config.update("jax_default_matmul_precision", before)


def test_the_suite_runs_in_full_float32():
    # conftest asks for it, so that a GPU run checks float32 identities, not TF32 ones
    assert precision.current() == "highest"


def test_use_sets_jax_and_default_means_the_backends_choice(restore_precision):
    assert precision.use("default") == "default"
    assert jax.config.jax_default_matmul_precision is None
    assert precision.current() == "default"
    precision.use("high")
    assert jax.config.jax_default_matmul_precision == "high"
    # a program traced now carries the requested precision on its dot
    text = jax.jit(lambda a: a @ a).lower(jnp.ones((4, 4))).as_text()
    assert "dot" in text
    precision.use("highest")
    assert "HIGHEST" in jax.jit(lambda a: a @ a).lower(jnp.ones((4, 4))).as_text().upper()


def test_unknown_precision_is_a_clear_error(restore_precision):
    with pytest.raises(UserError, match="unknown matmul precision 'tf32'.*highest"):
        precision.use("tf32")
    assert precision.current() == "highest"  # unchanged


def test_cli_precision_per_command_and_restored_after(monkeypatch, capsys):
    seen = {}

    def record(command):
        def run(args):
            seen[command] = precision.current()  # what the command's programs are traced with
            return 0
        return run

    monkeypatch.setattr(sweep, "run", record("sweep"))
    monkeypatch.setattr(train_command, "run", record("train"))
    monkeypatch.setattr(cli, "_join_processes", lambda a: None)
    train = ["train", "--corpus", "x", "--out", "y"]
    # the suite's JAX_DEFAULT_MATMUL_PRECISION=highest is kept by every command
    assert cli.main(["sweep"]) == 0 and cli.main(train) == 0
    assert seen == {"sweep": "highest", "train": "highest"}
    # without it: full float32 for probes, the backend's choice for training
    monkeypatch.delenv(precision.ENV)
    assert cli.main(["sweep"]) == 0 and cli.main(train) == 0
    assert seen == {"sweep": "highest", "train": "default"}
    assert cli.main(["sweep", "--matmul-precision", "default"]) == 0
    assert seen["sweep"] == "default"
    assert precision.current() == "highest"  # each command restored the caller's setting
    with pytest.raises(SystemExit) as e:
        cli.main(["sweep", "--matmul-precision", "tf32"])
    assert e.value.code == 2
    assert "invalid choice: 'tf32'" in capsys.readouterr().err
    # the environment in JAX's spelling of a dot algorithm: kept, and read by its short name
    monkeypatch.setenv(precision.ENV, precision.env_value("bf16x6"))
    assert precision.env_value("bf16x6") == "BF16_BF16_F32_X6" == precision.env_value(
        "BF16_BF16_F32_X6") and precision.env_value("highest") == "highest"
    with pytest.raises(UserError, match=r"unknown matmul precision 'tf32' for \$JAX_DEFAULT"):
        precision.env_value("tf32")
    assert precision.for_command(None, "highest") == "bf16x6"
    assert cli.main(["sweep"]) == 0 and seen["sweep"] == "bf16x6"
    assert precision.current() == "highest"
    monkeypatch.delenv(precision.ENV)
    if jax.devices()[0].platform == "cpu":  # a dot algorithm the backend lacks: exit 2, no run
        seen.clear()
        assert cli.main(["sweep", "--matmul-precision", "tf32x3"]) == 2
        assert seen == {}
        assert "'tf32x3' (TF32_TF32_F32_X3) is not supported on this backend (cpu)" in \
            capsys.readouterr().err
        monkeypatch.setenv(precision.ENV, "TF32_TF32_F32_X3")  # also when the environment asks
        assert cli.main(["sweep"]) == 2 and seen == {}
        assert "not supported on this backend (cpu)" in capsys.readouterr().err


def test_scoped_restores_after_an_error(restore_precision):
    with pytest.raises(RuntimeError):
        with precision.scoped("default"):
            assert precision.current() == "default"
            raise RuntimeError
    assert precision.current() == "highest"
    with precision.scoped(None):  # None leaves the setting alone
        assert precision.current() == "highest"


def test_results_agree_in_every_precision_on_a_cpu(restore_precision):
    if jax.devices()[0].platform != "cpu":
        pytest.skip("on an accelerator the precisions differ by design")
    a = jax.random.normal(jax.random.key(0), (64, 64))
    outs = []
    for name in precision.PRECISIONS:
        if name in ("bf16x9", "tf32x3"):  # XLA's CPU backend has no such dot algorithm
            with pytest.raises(UserError, match=f"{name}.*not supported on this backend"):
                precision.use(name)
            continue
        precision.use(name)
        outs.append(np.asarray(jax.jit(lambda x: x @ x)(a)))
    assert len(outs) == 5
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_dot_algorithms_reach_every_dot_of_the_model(restore_precision):
    """A multi-pass algorithm is set on the model's dots (projections and attention einsums) by
    the one process-wide setting, and read back by its short name, also from the environment's
    spelling."""
    from bornbiased_jax import model
    from bornbiased_jax.presets import get_preset

    cfg = get_preset("llama2-tiny")
    params = jax.eval_shape(lambda k: model.init(cfg, k), jax.random.key(0))
    x = jax.ShapeDtypeStruct((8,), jnp.int32)
    precision.use("bf16x6")
    assert precision.current() == "bf16x6"
    text = jax.jit(lambda p, t: model.forward(p, cfg, t).logits).lower(params, x).as_text()
    n_dots = text.count("stablehlo.dot_general")
    assert n_dots >= 2 * cfg.n_layers + 1
    # every dot carries the algorithm: bfloat16 operands, six products, float32 accumulation
    assert text.count("lhs_precision_type = bf16, rhs_precision_type = bf16, "
                      "accumulation_type = f32") == n_dots
    assert text.count("num_primitive_operations = 6") == n_dots
    jax.config.update("jax_default_matmul_precision", "BF16_BF16_F32_X3")
    assert precision.current() == "bf16x3"


def test_processes_join_before_the_precision_starts_a_backend(monkeypatch):
    """Checking a dot algorithm compiles a program, which starts the backend; JAX's multi-process
    runtime must be joined before that."""
    order = []
    monkeypatch.setattr(cli, "_join_processes", lambda a: order.append("join"))
    monkeypatch.setattr(precision, "_check_supported", lambda name: order.append("check"))
    monkeypatch.setattr(sweep, "run", lambda args: order.append("run") or 0)
    assert cli.main(["sweep", "--matmul-precision", "bf16x6"]) == 0
    assert order == ["join", "check", "run"]
