"""A long sweep kept as per-block summaries (bornbiased_jax.blockwise): the summaries are what
the whole sweep gives, an interrupted run resumes bitwise, another run's state is refused, and
the mean pairwise cosine from sums of unit vectors is the one from every pair."""

import json

import numpy as np
import pytest

from bornbiased_jax import sweep as sweep_module
from bornbiased_jax.blockwise import blockwise_sweep
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.probes.contraction import (contraction_direction, last_token_probe,
                                               last_token_sums, mean_similarity_from_sums,
                                               pairwise_similarity)
from bornbiased_jax.probes.inputs import probe_inputs

CFG = get_preset("gpt2-rope-tiny")
SEEDS = [3, 4]
IDENT = {"probe": "last_token_sums"}


@pytest.fixture(scope="module")
def xs():
    return probe_inputs("tokens", CFG, 22, 12)


def _run(xs, state, **kw):
    return blockwise_sweep(last_token_probe(CFG), CFG, SEEDS, xs, summarise=last_token_sums,
                           block=8, state=state, state_identity=IDENT, **kw)


@pytest.mark.slow
def test_summaries_are_the_whole_sweeps(xs, tmp_path):
    parts = _run(xs, tmp_path / "s")
    assert [int(p["n"]) for p in parts] == [8, 8, 6]
    full = sweep_module.sweep(last_token_probe(CFG), CFG, SEEDS, xs)
    np.testing.assert_array_equal(np.concatenate([p["top"] for p in parts], 1), full["top"])
    blocks = mean_similarity_from_sums(sum(p["unit_blocks"] for p in parts), 22)
    for i in range(len(SEEDS)):
        for layer in range(CFG.n_layers + 1):
            # batched and unbatched forward passes round differently: float32 states
            assert blocks[i, layer] == pytest.approx(
                pairwise_similarity(full["hidden"][i][:, layer]).mean, abs=1e-6)
        direction = sum(p["unit_normed"] for p in parts)[i] / 22
        np.testing.assert_allclose(direction, contraction_direction(full["normed"][i]),
                                   atol=1e-6)


def test_mean_similarity_from_sums_is_exact():
    U = np.random.default_rng(0).normal(size=(40, 7)) + 0.3
    u = U / np.linalg.norm(U, axis=1, keepdims=True)
    assert mean_similarity_from_sums(u.sum(0), 40) == pytest.approx(
        pairwise_similarity(U).mean, abs=1e-14)
    with pytest.raises(ValueError):
        mean_similarity_from_sums(u[:1].sum(0), 1)


def test_interrupted_run_resumes_bitwise(xs, tmp_path, monkeypatch):
    whole = _run(xs, tmp_path / "whole")
    calls = []

    def summarise_then_stop(out):
        if len(calls) == 2:
            raise KeyboardInterrupt  # stopped while the third block runs
        calls.append(1)
        return last_token_sums(out)

    with pytest.raises(KeyboardInterrupt):
        blockwise_sweep(last_token_probe(CFG), CFG, SEEDS, xs, summarise=summarise_then_stop,
                        block=8, state=tmp_path / "cut", state_identity=IDENT)
    state = json.loads((tmp_path / "cut" / "state.json").read_text())
    assert state["done"] == ["chunk-s0-n0.npz", "chunk-s0-n8.npz"]
    ran = []
    real = sweep_module.sweep
    monkeypatch.setattr(sweep_module, "sweep", lambda *a, **k: ran.append(1) or real(*a, **k))
    resumed = _run(xs, tmp_path / "cut")
    assert len(ran) == 1  # only the block that was not saved
    for a, b in zip(whole, resumed):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def test_another_runs_state_is_refused(xs, tmp_path):
    _run(xs, tmp_path / "s")
    with pytest.raises(UserError, match="seeds"):
        blockwise_sweep(last_token_probe(CFG), CFG, [3, 5], xs, summarise=last_token_sums,
                        block=8, state=tmp_path / "s", state_identity=IDENT)
    with pytest.raises(UserError, match="block"):
        blockwise_sweep(last_token_probe(CFG), CFG, SEEDS, xs, summarise=last_token_sums,
                        block=4, state=tmp_path / "s", state_identity=IDENT)
    with pytest.raises(UserError, match="positive"):
        blockwise_sweep(last_token_probe(CFG), CFG, SEEDS, xs, summarise=last_token_sums,
                        block=0, state=tmp_path / "t", state_identity=IDENT)


def test_finished_blocks_are_read_without_computing(xs, tmp_path):
    """``blockwise_finished`` gives the leading run of finished blocks (bitwise what the run
    saved), while a run holds the state's lock, and refuses another measurement's state."""
    from bornbiased_jax import resume
    from bornbiased_jax.blockwise import blockwise_finished

    whole = _run(xs, tmp_path / "whole")
    with pytest.raises(UserError, match="nothing is finished"):
        blockwise_finished(CFG, SEEDS, xs, block=8, state=tmp_path / "none",
                           state_identity=IDENT)
    folder = tmp_path / "whole"
    lock = resume._lock(folder)  # a run still going: the reader takes no lock
    try:
        parts, n, saved = blockwise_finished(CFG, SEEDS, xs, block=8, state=folder,
                                             state_identity=IDENT)
    finally:
        lock.close()
    assert n == 22 and len(parts) == 3 and saved["identity"]["devices"]["platform"] == "cpu"
    for a, b in zip(whole, parts):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    # the middle block missing: only the first is a leading run
    state = json.loads((folder / "state.json").read_text())
    state["done"].remove("chunk-s0-n8.npz")
    (folder / "state.json").write_text(json.dumps(state))
    parts, n, _ = blockwise_finished(CFG, SEEDS, xs, block=8, state=folder,
                                     state_identity=IDENT)
    assert n == 8 and len(parts) == 1
    for kw, what in ((dict(block=4), "block"), (dict(state_identity={"probe": "x"}), "probe")):
        with pytest.raises(UserError, match=what):
            blockwise_finished(CFG, SEEDS, xs, **{"block": 8, "state": folder,
                                                  "state_identity": IDENT, **kw})
    with pytest.raises(UserError, match="seeds"):
        blockwise_finished(CFG, [3, 5], xs, block=8, state=folder, state_identity=IDENT)


def test_a_state_begun_on_other_devices_goes_on_only_when_allowed(xs, tmp_path, monkeypatch):
    """A state whose blocks were saved on other devices (here a GPU's, written into the state
    by hand) is refused naming the devices; with allow_version_change its remaining blocks run
    here with the saved plan, the state lists both device sets, and the summaries are the
    whole run's. Devices and another difference together are still refused."""
    from bornbiased_jax.blockwise import block_provenance, blockwise_finished

    whole = _run(xs, tmp_path / "whole")
    calls = []

    def stop_after_one(out):
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return last_token_sums(out)

    with pytest.raises(KeyboardInterrupt):
        blockwise_sweep(last_token_probe(CFG), CFG, SEEDS, xs, summarise=stop_after_one,
                        block=8, state=tmp_path / "moved", state_identity=IDENT)
    f = tmp_path / "moved" / "state.json"
    state = json.loads(f.read_text())
    state["identity"]["devices"] = {"platform": "gpu", "count": 1}
    here_chunk = state["plan"]["sweep"]["seq_chunk"]
    state["plan"]["sweep"]["seq_chunk"] = 3  # the other devices' plan: not used here
    f.write_text(json.dumps(state))
    with pytest.raises(UserError, match="devices.platform"):
        _run(xs, tmp_path / "moved")
    with pytest.raises(UserError, match="seeds"):
        blockwise_sweep(last_token_probe(CFG), CFG, [3, 5], xs, summarise=last_token_sums,
                        block=8, state=tmp_path / "moved", state_identity=IDENT,
                        allow_version_change=True)
    chunks = []
    real = sweep_module.sweep
    monkeypatch.setattr(sweep_module, "sweep",
                        lambda *a, **k: chunks.append(k["seq_chunk"]) or real(*a, **k))
    went_on = _run(xs, tmp_path / "moved", allow_version_change=True)
    assert chunks == [min(here_chunk, 8), min(here_chunk, 6)]  # planned for these devices
    for a, b in zip(whole, went_on):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    saved = json.loads(f.read_text())
    assert saved["identity"]["devices"]["platform"] == "gpu"
    assert saved["plan"]["sweep"]["seq_chunk"] == 3  # the saved plan stays the first devices'
    assert [d["platform"] for d in saved["devices_used"]] == ["gpu", "cpu"]
    _, n, read = blockwise_finished(CFG, SEEDS, xs, block=8, state=tmp_path / "moved",
                                    state_identity=IDENT)
    prov = block_provenance(read, 3)
    assert n == 22 and prov["blocks_platforms"] == ["gpu", "cpu"]
    assert prov["blocks_matmul_precision"] == "highest"
    assert prov["blocks_seconds"] == pytest.approx(sum(read["seconds"].values()), abs=0.1)


def test_a_state_removed_after_its_devices_were_read_starts_anew_here(xs, tmp_path,
                                                                       monkeypatch):
    """The devices of a saved state are read before the store locks its folder; when the state
    is removed in between (another run starting over), the pass starts anew labelled with the
    devices it runs on, not with the removed state's."""
    from bornbiased_jax import blockwise

    monkeypatch.setattr(blockwise, "_devices_moved",
                        lambda folder, identity: {"platform": "gpu", "count": 1})
    parts = blockwise_sweep(last_token_probe(CFG), CFG, SEEDS, xs[:8], summarise=last_token_sums,
                            block=8, state=tmp_path / "gone", state_identity=IDENT,
                            allow_version_change=True)
    saved = json.loads((tmp_path / "gone" / "state.json").read_text())
    assert saved["identity"]["devices"]["platform"] == "cpu"
    assert "devices_used" not in saved and [int(p["n"]) for p in parts] == [8]
