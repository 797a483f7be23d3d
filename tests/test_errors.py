"""Bad input is a UserError with a message, reported by the CLI as exit status 2; bugs keep their
traceback; outputs are checked before any work; the test setup keeps a user's XLA_FLAGS."""

import os
import subprocess
import sys

import pytest

from bornbiased_jax import cli, files
from bornbiased_jax.commands import sweep
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_list
from conftest import with_host_device_count, with_optimization_level


def test_check_writable(tmp_path):
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    with pytest.raises(UserError, match="is a file, not a folder"):
        files.check_writable(a_file / "out.json")
    with pytest.raises(UserError, match="is a file; give a folder"):
        files.check_writable(a_file, folder=True, flag="--out")
    with pytest.raises(UserError, match="is a folder; give a file"):
        files.check_writable(tmp_path, flag="--json")
    # New nested paths under a writable folder are fine, and the check leaves nothing behind.
    assert files.check_writable(tmp_path / "a/b/c.json") == tmp_path / "a/b/c.json"
    files.check_writable(tmp_path / "new/dir", folder=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_save_figure_writes_a_png_and_closes_the_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = files.save_figure(fig, tmp_path / "sub/f.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(fig.number)  # closed: many figures in one process do not pile up
    kept, _ = plt.subplots()
    files.save_figure(kept, tmp_path / "g.png", close=False)
    assert plt.fignum_exists(kept.number)
    plt.close(kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.png", "sub"]  # no temporary left


def test_write_artifacts_by_suffix_and_figures_without_pyplot(tmp_path):
    """JSON, markdown and a figure drawn outside pyplot (plots.figure) are written atomically
    by their suffix; no pyplot (and so no GUI backend) is imported to draw or save it."""
    code = ("import json, sys; from pathlib import Path; from bornbiased_jax import files, plots\n"
            "fig, ax = plots.figure(1, 2, figsize=(4, 2)); ax[1].plot([0, 1], [1, 0])\n"
            "out = Path(sys.argv[1])\n"
            "paths = files.write_artifacts(out, {'r.json': {'a': [1]}, 'r.md': '# r\\n', "
            "'r.png': fig})\n"
            "print([p.name for p in paths], 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "o")], capture_output=True,
                         text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("]")[1].strip() == "False"  # pyplot never imported
    o = tmp_path / "o"
    assert sorted(p.name for p in o.iterdir()) == ["r.json", "r.md", "r.png"]  # no temporaries
    assert (o / "r.json").read_text().replace(" ", "").replace("\n", "") == '{"a":[1]}'
    assert (o / "r.md").read_text() == "# r\n"
    assert (o / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no writer"):
        files.write_artifacts(tmp_path, {"r.txt": "x"})
    assert not (tmp_path / "r.txt").exists()


def test_unwritable_outputs_fail_before_any_work(tmp_path, capsys, monkeypatch):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    import bornbiased_jax.theory.claims as claims

    def no_work(**kw):
        raise AssertionError("the computation started before the output was checked")

    monkeypatch.setattr(claims, "build_claims", no_work)
    assert cli.main(["theory", "--json", str(a_file / "r.json")]) == 2
    assert "cannot write --json" in capsys.readouterr().err
    assert cli.main(["theory", "--plots", str(a_file)]) == 2
    assert "--plots" in capsys.readouterr().err
    import bornbiased_jax.probes.token_preference as tp

    monkeypatch.setattr(tp.Pass, "run", lambda *a, **kw: no_work())
    monkeypatch.setattr(tp, "open_states", lambda *a, **kw: no_work())  # nor its state
    assert cli.main(["sweep", "--preset", "gpt2-rope-tiny", "--out", str(a_file / "o")]) == 2
    assert "cannot write --out" in capsys.readouterr().err
    rc = cli.main(["train", "--corpus", str(tmp_path), "--out", str(a_file / "run")])
    assert rc == 2 and "cannot write --out" in capsys.readouterr().err
    import bornbiased_jax.sources as sources

    monkeypatch.setattr(sources, "load_source", no_work)  # nothing is loaded or run first
    for argv in (["fingerprint", "preset:gpt2-rope-tiny@0", "preset:gpt2-rope-tiny@1"],
                 ["sinks", "preset:gpt2-rope-tiny@0"]):
        assert cli.main(argv + ["--out", str(a_file / "o")]) == 2
        assert "cannot write --out" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--memory-budget-gib", "--memory-budget-gb"])  # and former
@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "x"])
def test_memory_budget_must_be_positive(value, flag, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["sweep", flag, value])
    assert e.value.code == 2 and flag in capsys.readouterr().err


def test_internal_errors_keep_their_traceback(monkeypatch):
    """Only UserError becomes 'error: ...' and exit 2; a ValueError from a bug propagates."""

    def bug(args):
        raise ValueError("an internal bug")

    monkeypatch.setattr(sweep, "run", bug)
    with pytest.raises(ValueError, match="an internal bug"):
        cli.main(["sweep"])

    def user(args):
        raise UserError("bad input")

    monkeypatch.setattr(sweep, "run", user)
    assert cli.main(["sweep"]) == 2


def test_seed_lists():
    assert seed_list(s for s in (3, 1)) == [3, 1]  # generators are read once
    assert seed_list(range(2)) == [0, 1]
    for bad, msg in [(5, "iterable"), ("0:4", "iterable"), ([], "empty"), ([1.5], "integer"),
                     ([2**32], r"\[0, 2\*\*32\)"), ([True], "integer")]:
        with pytest.raises(UserError, match=msg):
            seed_list(bad)


def test_host_device_count_flag_joins_a_users_xla_flags():
    assert with_host_device_count("", 4) == "--xla_force_host_platform_device_count=4"
    assert with_host_device_count("--xla_dump_hlo_as_text", 4) == (
        "--xla_dump_hlo_as_text --xla_force_host_platform_device_count=4")
    mine = "--xla_force_host_platform_device_count=2"
    assert with_host_device_count(mine, 4) == mine  # a user's own count is kept
    # In a fresh process with a user's own flags, the test setup still gives four devices.
    code = "import conftest, jax, os; print(len(jax.devices()), os.environ['XLA_FLAGS'])"
    env = {**os.environ, "XLA_FLAGS": "--xla_dump_hlo_as_text"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "4" and "--xla_dump_hlo_as_text" in out.stdout
    assert "--xla_backend_optimization_level=0" in out.stdout


def test_optimization_level_flag_keeps_a_users_own():
    assert with_optimization_level("", 0) == "--xla_backend_optimization_level=0"
    mine = "--xla_backend_optimization_level=2 --xla_dump_hlo_as_text"
    assert with_optimization_level(mine, 0) == mine


def test_unknown_probe_input_or_output_is_named_with_the_choices():
    """The probe input kinds and outputs have one check each, used by the probe makers and by
    SeedPrint's settings (which fail before any model is loaded)."""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.fingerprint.runner.compare import Settings
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.outputs import feature_probe

    with pytest.raises(UserError, match=r"unknown input kind 'images'; choose one of \('tokens'"):
        Settings(input="images")
    with pytest.raises(UserError, match=r"unknown output 'hidden'; choose one of \('normed'"):
        Settings(output="hidden")
    with pytest.raises(UserError, match="unknown input kind 'images'"):
        probe_inputs("images", get_preset("gpt2-rope-nano"), 2, 4)
    with pytest.raises(UserError, match="unknown output 'hidden'"):
        feature_probe(get_preset("gpt2-rope-nano"), "hidden")


def test_trained_tokens_read_suffixes_and_refuse_what_is_not_a_count():
    """--trained-tokens (the matched slack's law of training length) reads 2e12, 2T, 4.1M;
    a word, zero or a negative count is refused with what is allowed, before any work; the
    settings refuse what the flag would."""
    import argparse

    from bornbiased_jax.commands.fingerprint import token_count
    from bornbiased_jax.fingerprint.methods import matched as M
    from bornbiased_jax.fingerprint.runner.compare import Settings

    assert token_count("2e12") == token_count("2T") == 2e12
    assert token_count("4.1M") == pytest.approx(4.1e6) and token_count("36t") == 36e12
    for bad in ("many", "0", "-3T", "inf", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="tokens"):
            token_count(bad)
    with pytest.raises(UserError, match="trained_tokens = -1.0 must be a positive number"):
        M.check_settings(Settings(trained_tokens=-1.0))
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", "fingerprint",
                        "preset:llama2-tiny@0", "preset:llama2-tiny@1", "--trained-tokens",
                        "lots"], capture_output=True, text=True)
    assert r.returncode == 2 and "is not a number of tokens (e.g. 2e12, 2T, 4.1M)" in r.stderr
