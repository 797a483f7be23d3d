"""Long probes that survive being stopped (bornbiased_jax/resume.py through sweep.sweep and
sweep.run_probe): a sweep killed with SIGKILL at a random moment resumes from its saved chunks
and finishes bitwise equal to an uninterrupted run; a resume with other settings, a second
process on the same state, and other versions are refused, naming what differs."""

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from bornbiased_jax import resume
from bornbiased_jax.config import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.probes.contraction import last_token_probe
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sweep import run_probe, sweep

REPO = Path(__file__).resolve().parents[1]
CFG = get_preset("gpt2-rope-tiny")
SEEDS, N, T = [3, 5, 8], 48, 16
IDENT = {"probe": "last_token"}

# A sweep of 3 seeds x 48 sequences in 2 x 24 calls of one seed and two sequences each.
SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from bornbiased_jax.config import get_preset
    from bornbiased_jax.probes.contraction import last_token_probe
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.sweep import sweep
    cfg = get_preset("gpt2-rope-tiny")
    xs = probe_inputs("tokens", cfg, 48, 16)
    out = sweep(last_token_probe(cfg), cfg, [3, 5, 8], xs, seed_chunk=1, seq_chunk=2,
                strategy="map", state=sys.argv[1], state_identity={"probe": "last_token"})
    np.savez(sys.argv[2], **out)
""")


def _uninterrupted():
    xs = probe_inputs("tokens", CFG, N, T)
    return sweep(last_token_probe(CFG), CFG, SEEDS, xs, seed_chunk=1, seq_chunk=2,
                 strategy="map")


def _done(state: Path) -> int:
    try:
        return len(json.loads((state / resume.STATE).read_text())["done"])
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


def test_a_sweep_killed_at_a_random_moment_resumes_bitwise(tmp_path):
    state, out = tmp_path / "state", tmp_path / "out.npz"
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    killed_at = []
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    for _ in range(3):  # kill up to three times, each at a random moment after a first chunk
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(state), str(out)], cwd=REPO,
                                env=env)
        t0 = time.monotonic()
        start = _done(state)
        while _done(state) <= start and proc.poll() is None and time.monotonic() - t0 < 120:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at.append(_done(state))
    plan = json.loads((state / resume.STATE).read_text())["plan"]
    total = -(-len(SEEDS) // plan["seed_chunk"]) * -(-N // plan["seq_chunk"])
    assert killed_at and killed_at[0] < total, "no kill landed mid-sweep"
    out.unlink(missing_ok=True)  # a later attempt may have finished; the result is read again
    subprocess.run([sys.executable, "-c", SCRIPT, str(state), str(out)], cwd=REPO, env=env,
                   check=True)
    assert _done(state) == total
    with np.load(out) as got:
        want = _uninterrupted()
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])  # bitwise, every output


def test_a_finished_state_is_read_back_without_computing(tmp_path, monkeypatch):
    xs = probe_inputs("tokens", CFG, 8, T)
    first = sweep(last_token_probe(CFG), CFG, [1, 2], xs, seq_chunk=4, state=tmp_path,
                  state_identity=IDENT)
    from bornbiased_jax import sweep as engine

    monkeypatch.setattr(engine, "_compiled", lambda *a: pytest.fail("recomputed a saved chunk"))
    again = sweep(last_token_probe(CFG), CFG, [1, 2], xs, seq_chunk=4, state=tmp_path,
                  state_identity=IDENT)
    for k in first:
        np.testing.assert_array_equal(first[k], again[k])


@pytest.mark.parametrize("change, named", [
    (dict(seeds=[1, 3]), "seeds: [1, 2] (saved) vs [1, 3] (now)"),
    (dict(n=9), "inputs.shape: [8, 16] (saved) vs [9, 16] (now)"),
    (dict(probe_seed=1), "inputs.key"),
    (dict(seq_chunk=2), "requested_plan.seq_chunk: 4 (saved) vs 2 (now)"),
    (dict(cfg=get_preset("llama2-tiny")), "model.name"),
    (dict(ident={"probe": "other"}), "probe: \"last_token\" (saved) vs \"other\" (now)"),
])
def test_a_resume_with_other_settings_is_refused_naming_them(tmp_path, change, named):
    def run(seeds=(1, 2), n=8, probe_seed=0, seq_chunk=4, cfg=CFG, ident=IDENT):
        xs = probe_inputs("tokens", cfg, n, T, probe_seed)
        return sweep(last_token_probe(cfg), cfg, list(seeds), xs, seq_chunk=seq_chunk,
                     state=tmp_path, state_identity=ident)

    run()
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UserError, match="belongs to another run") as e:
        run(**change)
    assert named in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_a_second_process_on_the_same_state_is_refused(tmp_path):
    held = resume.ChunkStore(tmp_path, {"probe": "x"})
    code = ("import sys; from bornbiased_jax import resume; "
            "resume.ChunkStore(sys.argv[1], {'probe': 'x'})")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True, cwd=REPO)
    assert r.returncode != 0 and "another process is running the probe state" in r.stderr
    del held


def test_other_versions_are_refused_unless_allowed(tmp_path):
    store = resume.ChunkStore(tmp_path, {"probe": "x"})
    store.save((0, 0), {"a": np.arange(3)}, seconds=1.5)
    store.state["versions"][-1]["jax"] = "0.0.1"
    store._write_state()
    del store
    with pytest.raises(UserError, match=r"jax: \"0.0.1\" \(saved\)"):
        resume.ChunkStore(tmp_path, {"probe": "x"})
    again = resume.ChunkStore(tmp_path, {"probe": "x"}, allow_version_change=True)
    assert len(again.state["versions"]) == 2 and again.done((0, 0))
    np.testing.assert_array_equal(again.load((0, 0))["a"], np.arange(3))
    assert again.seconds == 1.5


def test_chunks_are_data_not_pickles(tmp_path):
    store = resume.ChunkStore(tmp_path, {"probe": "x"})
    store.save((2, 8), {"h": {"x": np.ones((2, 3), np.float32)}, "top": np.arange(2)})
    with np.load(tmp_path / "chunk-s2-n8.npz", allow_pickle=False) as z:
        assert sorted(z.files) == ["h/x", "top"]
    assert json.loads((tmp_path / resume.STATE).read_text())["tree"] == {
        "h": {"x": None}, "top": None}


def test_run_probe_resumes_and_is_tied_to_the_parameters(tmp_path):
    from bornbiased_jax import model
    import jax

    xs = probe_inputs("tokens", CFG, 8, T)
    params = model.init(CFG, jax.random.key(0))
    probe = last_token_probe(CFG)
    plain = run_probe(probe, CFG, params, xs, seq_chunk=2)
    saved = run_probe(probe, CFG, params, xs, seq_chunk=2, state=tmp_path, state_identity=IDENT)
    again = run_probe(probe, CFG, params, xs, seq_chunk=2, state=tmp_path, state_identity=IDENT)
    for k in plain:
        np.testing.assert_array_equal(plain[k], saved[k])
        np.testing.assert_array_equal(plain[k], again[k])
    other = model.init(CFG, jax.random.key(1))
    with pytest.raises(UserError, match="params_sha256"):
        run_probe(probe, CFG, other, xs, seq_chunk=2, state=tmp_path, state_identity=IDENT)


def test_the_sweep_command_resumes_and_refuses_other_settings(tmp_path):
    from bornbiased_jax import cli

    common = ["sweep", "--preset", "gpt2-rope-tiny", "--num-seqs", "12", "--seq-len", "8",
              "--seq-chunk", "4", "--no-progress", "--state", str(tmp_path / "st")]
    assert cli.main(common + ["--seeds", "1,2", "--out", str(tmp_path / "a")]) == 0
    first = json.loads((tmp_path / "a" / "token_preference.json").read_text())["records"]
    assert (tmp_path / "st" / "gpt2-rope-tiny-T8" / resume.STATE).exists()
    assert cli.main(common + ["--seeds", "1,2", "--out", str(tmp_path / "b")]) == 0
    again = json.loads((tmp_path / "b" / "token_preference.json").read_text())["records"]
    assert again == first
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", *common, "--seeds", "1,3",
                        "--out", str(tmp_path / "c")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "seeds: [1, 2] (saved) vs [1, 3] (now)" in r.stderr
    assert not (tmp_path / "c").exists()


def test_removing_states_leaves_other_files_and_waits_for_a_running_one(tmp_path):
    a = resume.ChunkStore(tmp_path / "s" / "a", {"probe": "x"})
    a.save((0, 0), np.arange(2))
    b = resume.ChunkStore(tmp_path / "s" / "b", {"probe": "x"})
    b.save((0, 0), np.arange(2))
    (tmp_path / "s" / "keep.txt").write_text("x")
    with pytest.raises(UserError, match="another process is running"):
        resume.remove(tmp_path / "s")  # a is still open
    assert (tmp_path / "s" / "b" / resume.STATE).exists()  # all or nothing
    a.close()
    b.close()
    assert sorted(p.name for p in resume.remove(tmp_path / "s")) == ["a", "b"]
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["keep.txt"]
    assert resume.remove(tmp_path / "nothing") == []


def test_opening_a_new_state_creates_nothing_until_its_first_write(tmp_path):
    store = resume.ChunkStore(tmp_path / "new", {"probe": "x"})
    assert not (tmp_path / "new").exists()
    store.save((0, 4), np.arange(3))
    assert (tmp_path / "new" / "chunk-s0-n4.npz").exists() and store.computed == 1
    store.close()
    again = resume.ChunkStore(tmp_path / "new", {"probe": "x"})
    np.testing.assert_array_equal(again.load((0, 4)), np.arange(3))
    assert again.read == 1 and again.computed == 0
