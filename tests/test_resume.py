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
from bornbiased_jax.presets import get_preset
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
    from bornbiased_jax.presets import get_preset
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# ------------------------------------------------------------- the sweep command's own state
# 3 seeds x 48 sequences of length 8 in calls of four sequences (12 chunks or more, as the
# plan cuts the seeds over the test session's four devices).
COMMAND = ["sweep", "--preset", "gpt2-rope-tiny", "--seeds", "0:3", "--seq-len", "8",
           "--num-seqs", "48", "--seq-chunk", "4", "--seed-chunk", "1", "--no-progress"]
# A smaller one: 2 seeds x 12 sequences per length.
SMALL = ["sweep", "--preset", "gpt2-rope-tiny", "--seeds", "1,2", "--num-seqs", "12",
         "--seq-chunk", "4", "--seed-chunk", "1", "--no-progress"]


def _total(folder: Path) -> int:
    """The chunks of the sweep or probe whose state is ``folder``, from its saved plan."""
    saved = json.loads((folder / resume.STATE).read_text())
    S = len(saved["identity"].get("seeds", [0]))
    N = saved["identity"]["inputs"]["shape"][0]
    return -(-S // saved["plan"]["seed_chunk"]) * -(-N // saved["plan"]["seq_chunk"])


def _result(out: Path) -> dict:
    return json.loads((out / "token_preference.json").read_text())


def _chunks(folder: Path) -> dict:
    out = {}
    for f in sorted(folder.glob("chunk-*.npz")):
        with np.load(f, allow_pickle=False) as z:
            out[f.name] = {k: z[k] for k in z.files}
    return out


@pytest.mark.slow
def test_a_stopped_sweep_command_resumes_when_the_same_command_runs_again(tmp_path):
    """No --state: the command keeps its state in OUT/state. Killed (SIGKILL) at a random
    moment after its first chunk, the same command computes only the missing chunks and writes
    the records of an uninterrupted run, from bitwise the same chunks."""
    out = tmp_path / "out"
    state = out / "state" / "gpt2-rope-tiny-T8"
    argv = [sys.executable, "-m", "bornbiased_jax.cli", *COMMAND, "--out", str(out)]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    while not list(state.glob("chunk-*.npz")) and proc.poll() is None \
            and time.monotonic() - t0 < 300:
        time.sleep(0.005)
    # a random moment after the first chunk file: after a random number of saved chunks (of
    # at least 12), at a random point of the next chunk's computation or saving
    target = rng.randint(1, 8)
    while _done(state) < target and proc.poll() is None:
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.02))
    assert proc.poll() is None, "the sweep ended before it could be stopped"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    saved = _done(state)
    total = _total(state)
    assert total >= 12 and saved < total and not (out / "token_preference.json").exists()

    again = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    got = _result(out)
    assert got["run"]["state"] == {"folder": str(out / "state"), "kept": True,
                                   "chunks_computed": total - saved, "chunks_read": saved}
    assert (f"state kept in {out / 'state'}: {total - saved} chunks computed, {saved} read "
            f"back") in again.stdout
    assert _done(state) == total

    ref = tmp_path / "ref"  # uninterrupted, in the same environment
    subprocess.run([*argv[:-1], str(ref)], cwd=REPO, env=env, capture_output=True, check=True)
    want = _result(ref)
    assert want["run"]["state"]["chunks_computed"] == total
    assert got["records"] == want["records"]
    a, b = _chunks(state), _chunks(ref / "state" / "gpt2-rope-tiny-T8")
    assert sorted(a) == sorted(b) and len(a) == total
    for name in a:
        for k in a[name]:
            np.testing.assert_array_equal(a[name][k], b[name][k])  # bitwise
    print(f"killed after {saved} of {total} chunks; the resumed run computed "
          f"{total - saved} and read {saved} back")


@pytest.mark.slow
def test_the_same_command_again_reads_everything_back_and_fresh_recomputes_it(tmp_path,
                                                                               monkeypatch):
    from bornbiased_jax import cli
    from bornbiased_jax import sweep as engine

    out = tmp_path / "out"
    assert cli.main([*SMALL, "--seq-len", "8", "16", "--out", str(out)]) == 0
    first = _result(out)
    t8, t16 = (_total(out / "state" / f"gpt2-rope-tiny-T{T}") for T in (8, 16))
    assert first["run"]["state"]["chunks_computed"] == t8 + t16 >= 6
    mine = out / "state" / "notes.txt"
    mine.write_text("not a probe state")

    real = engine._compiled
    monkeypatch.setattr(engine, "_compiled", lambda *a: pytest.fail("recomputed a saved chunk"))
    assert cli.main([*SMALL, "--seq-len", "8", "16", "--out", str(out)]) == 0
    again = _result(out)
    assert (again["run"]["state"]["chunks_computed"],
            again["run"]["state"]["chunks_read"]) == (0, t8 + t16)
    assert again["records"] == first["records"]

    monkeypatch.setattr(engine, "_compiled", real)
    assert cli.main([*SMALL, "--seq-len", "8", "--out", str(out), "--fresh"]) == 0
    fresh = _result(out)
    assert fresh["run"]["state"]["chunks_computed"] == t8
    assert fresh["run"]["state"]["chunks_read"] == 0
    assert fresh["records"] == first["records"][:2]  # the T = 8 records
    assert not (out / "state" / "gpt2-rope-tiny-T16").exists()  # the old state is deleted
    assert mine.read_text() == "not a probe state"  # other files are left alone


@pytest.mark.slow
def test_a_run_that_adds_lengths_or_models_computes_only_those(tmp_path):
    """Each preset, --model source and length has its own sub-folder: the parts that match
    are resumed, the new ones computed (a loaded model through run_probe, resumable too)."""
    from bornbiased_jax import cli

    out = tmp_path / "out"
    model = ["--model", "preset:llama2-tiny@0"]
    assert cli.main([*SMALL, "--seq-len", "8", *model, "--out", str(out)]) == 0
    first = _result(out)
    folders = sorted((out / "state").iterdir())
    t8 = sum(_total(f) for f in folders)
    assert first["run"]["state"]["chunks_computed"] == t8
    assert _total(folders[1]) == 3  # the model: 12 sequences in chunks of 4
    assert cli.main([*SMALL, "--seq-len", "8", "16", *model, "--out", str(out)]) == 0
    second = _result(out)
    t16 = sum(_total(f) for f in (out / "state").iterdir()) - t8
    assert (second["run"]["state"]["chunks_computed"],
            second["run"]["state"]["chunks_read"]) == (t16, t8)
    key = lambda r: (r["preset"], r["seed"], r["seq_len"])  # noqa: E731
    by = {key(r): r for r in second["records"]}
    assert all(by[key(r)] == r for r in first["records"])
    names = sorted(p.name for p in (out / "state").iterdir())
    assert names[:2] == ["gpt2-rope-tiny-T16", "gpt2-rope-tiny-T8"]
    assert [n.startswith("model-llama2-tiny_0-") for n in names[2:]] == [True, True]


def test_a_changed_setting_is_refused_before_any_work_naming_it_and_fresh(tmp_path, capsys):
    from bornbiased_jax import cli

    out = tmp_path / "out"
    assert cli.main([*SMALL, "--seq-len", "16", "--out", str(out)]) == 0
    before = (out / "token_preference.json").read_bytes()
    capsys.readouterr()
    # T = 8 has no state yet and would be computed first: the refusal comes before it.
    changed = [*SMALL, "--seq-len", "8", "16", "--out", str(out)]
    changed[changed.index("1,2")] = "1,3"
    assert cli.main(changed) == 2
    err = capsys.readouterr().err
    assert "gpt2-rope-tiny-T16: seeds: [1, 2] (saved) vs [1, 3] (now)" in err
    assert "--fresh" in err and str(out / "state") in err
    assert not (out / "state" / "gpt2-rope-tiny-T8").exists()  # nothing computed or created
    assert (out / "token_preference.json").read_bytes() == before

    # other versions: refused unless --resume-across-versions, naming it and --fresh
    f = out / "state" / "gpt2-rope-tiny-T16" / resume.STATE
    saved = json.loads(f.read_text())
    saved["versions"][-1]["jax"] = "0.0.1"
    f.write_text(json.dumps(saved))
    same = [*SMALL, "--seq-len", "16", "--out", str(out)]
    assert cli.main(same) == 2
    err = capsys.readouterr().err
    assert 'gpt2-rope-tiny-T16: jax: "0.0.1" (saved)' in err
    assert "--resume-across-versions" in err and "--fresh" in err
    assert cli.main([*same, "--resume-across-versions"]) == 0
    assert _result(out)["run"]["state"]["chunks_computed"] == 0


def test_the_help_says_where_the_state_is_what_fresh_does_and_that_it_is_kept():
    """The sweep's help describes the behaviour the tests above check."""
    from bornbiased_jax.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    text = " ".join(sub.choices["sweep"].format_help().split())
    assert "(default: OUT/state, inside --out)" in text
    assert "The state is kept when the run ends" in text
    assert "same command run again after a stop resumes" in text
    assert "is refused before any work, naming what differs; --fresh starts over" in text
    assert "a run of several processes keeps none" in text
    assert "--fresh start over: delete the probe states in the state folder" in text


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
