"""The sweep engine: strategies, chunking and device sharding all give the same per-seed results.

Tolerance: parameters and arg-max token ids must be identical; float outputs may differ by
float32 rounding only, because a matmul batched over seeds (vmap) and one seed at a time may
sum in a different order. We allow rtol = 1e-5 (about 80 ulps) on unit-scale activations.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key
from bornbiased_jax.probes.inputs import GaussianEmbeds, RandomTokens, probe_inputs
from bornbiased_jax.sweep import SplitProbe, param_bytes, plan_sweep, sweep

CFG = get_preset("gpt2-rope-tiny")
SEEDS = [3, 0, 11, 7, 5]


def probe(params, x):
    out = model.forward(params, CFG, x, last_only=True)
    return {"top": jnp.argmax(out.logits[-1]), "h": out.normed[-1]}


@pytest.fixture(scope="module")
def tokens():
    return RandomTokens(jax.random.key(0), 6, 16, CFG.vocab_size)


@pytest.fixture(scope="module")
def reference(tokens):
    """One seed at a time, no engine: init under jit, forward vmapped over sequences."""
    init = model.init  # eager (the samplers compile once per shape); equal to a jitted init
    run = jax.jit(jax.vmap(probe, in_axes=(None, 0)))
    outs = [run(init(CFG, seed_key(s)), tokens[:]) for s in SEEDS]
    return jax.tree.map(lambda *a: np.stack(a), *outs)


def assert_same(got, want):
    np.testing.assert_array_equal(got["top"], want["top"])
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strategy, kw", [
    ("vmap", {}),
    ("map", {"map_batch": 2}),
    ("loop", {}),
    ("map", {"seed_chunk": 2, "seq_chunk": 4, "map_batch": 3}),  # ragged chunks on both axes
    ("vmap", {"seed_chunk": 3, "seq_chunk": 5}),
    ("map", {"seq_chunk": 6, "seq_batch": 4}),  # compiled loop over ragged sequence batches
    ("map", {"seq_chunk": 4, "seq_batch": 2, "seed_chunk": 3}),
])
def test_strategies_and_chunks_agree(tokens, reference, strategy, kw):
    got = sweep(probe, CFG, SEEDS, tokens, strategy=strategy, devices=jax.devices()[:1], **kw)
    assert got["top"].shape == (5, 6) and got["h"].shape == (5, 6, CFG.d_model)
    assert_same(got, reference)


@pytest.mark.parametrize("strategy", ["vmap", "map"])
def test_sharded_over_four_devices_agrees(tokens, reference, strategy):
    devices = jax.devices()
    assert len(devices) == 4, "conftest asks XLA for 4 host devices"
    # 5 seeds over 4 devices: the engine pads the seed axis and drops the padding.
    got = sweep(probe, CFG, SEEDS, tokens, strategy=strategy, devices=devices, map_batch=1)
    assert_same(got, reference)
    got = sweep(probe, CFG, SEEDS, tokens, strategy=strategy, devices=devices[:2],
                seed_chunk=2, seq_chunk=4)
    assert_same(got, reference)


@pytest.mark.slow
def test_split_probe_equals_its_composition(tokens, reference):
    """features per cache-sized batch, head once per chunk: the same result as one probe."""
    split = SplitProbe(
        features=lambda p, x: model.forward(p, CFG, x, last_only=True).normed[-1],
        head=lambda p, h: {"top": jnp.argmax(h @ model.unembedding(p, CFG)), "h": h})
    for kw in ({"seq_batch": 2, "seq_chunk": 4}, {"seq_batch": 6}, {"strategy": "loop"}):
        got = sweep(split, CFG, SEEDS, tokens, devices=jax.devices()[:1], **kw)
        assert_same(got, reference)
    params = model.init(CFG, seed_key(SEEDS[0]))
    x = tokens[:1][0]
    np.testing.assert_array_equal(split(params, x)["top"], probe(params, x)["top"])


def test_plan_cuts_chunks_evenly_and_batches_for_the_cache():
    cfg = get_preset("gpt2-rope-cpu")
    cpu = jax.devices()[:1]
    plan = plan_sweep(cfg, 4, 1000, 64, devices=cpu)
    assert plan.seq_batch == 16  # CPU_TOKENS_PER_BATCH // T
    assert plan.seq_chunk % plan.seq_batch == 0
    n_calls = -(-1000 // plan.seq_chunk)
    assert n_calls * plan.seq_chunk - 1000 < n_calls * plan.seq_batch  # little padding
    plan = plan_sweep(cfg, 30, 7, 64, seed_chunk=4, devices=cpu)
    assert plan.seq_chunk == 7 and plan.seq_batch == 7  # never more than the sequences
    assert plan_sweep(cfg, 2, 10, 1000, devices=cpu).seq_batch == 1
    # fewer sequences than two batches: one batch, not a batch and a ragged rest (a second
    # loop body to trace and compile)
    plan = plan_sweep(cfg, 1, 21, 64, strategy="loop", devices=cpu)
    assert plan.seq_chunk == plan.seq_batch == 21
    assert plan_sweep(cfg, 1, 32, 64, strategy="loop", devices=cpu).seq_batch == 16
    with pytest.raises(ValueError, match="positive"):
        plan_sweep(cfg, 2, 10, 64, seq_batch=0, devices=cpu)


def test_seed_result_does_not_depend_on_its_companions(tokens, reference):
    alone = sweep(probe, CFG, [11], tokens, devices=jax.devices()[:1])
    np.testing.assert_array_equal(alone["top"][0], reference["top"][2])
    np.testing.assert_allclose(alone["h"][0], reference["h"][2], rtol=1e-5, atol=1e-6)


def test_gaussian_inputs_and_lazy_rows():
    x = GaussianEmbeds(jax.random.key(1), 9, 8, CFG.d_model, std=CFG.init_std)
    a = x[:]
    assert a.shape == (9, 8, CFG.d_model)
    np.testing.assert_array_equal(x[3:7], a[3:7])  # rows do not depend on the slice
    assert abs(a.std() - CFG.init_std) < 5 * CFG.init_std / np.sqrt(2 * a.size)
    out = sweep(lambda p, e: model.forward(p, CFG, embeds_Td=e, last_only=True).logits[0, :3],
                CFG, [0, 1], x, seq_chunk=4, devices=jax.devices()[:1])
    assert out.shape == (2, 9, 3) and np.isfinite(out).all()
    t = probe_inputs("tokens", CFG, 5, 7, probe_seed=2)
    assert t[:].shape == (5, 7) and t[:].max() < CFG.vocab_size
    assert not np.array_equal(t[:], probe_inputs("tokens", CFG, 5, 7, probe_seed=3)[:])


def test_plan_respects_budget_and_devices():
    cfg = get_preset("gpt2-rope-cpu")
    pb = param_bytes(cfg)
    assert pb == 4 * (6 * (12 * 512**2 + 13 * 512) + 2 * 512)  # blocks only: embedding shared
    plan = plan_sweep(cfg, 256, 1000, 64, memory_budget=1 << 30, devices=jax.devices()[:1],
                      strategy="map")
    assert plan.seed_chunk * pb <= (1 << 30) // 2
    plan4 = plan_sweep(cfg, 10, 1000, 64, seed_chunk=5, devices=jax.devices())
    assert plan4.seed_chunk % 4 == 0 and plan4.strategy == "map"  # auto on CPU


@pytest.mark.parametrize("bad, message", [
    (dict(seeds=[]), "empty"),
    (dict(seeds=[-1]), r"\[0, 2\*\*32\)"),
    (dict(seeds=[1.5]), "integer"),
    (dict(inputs=np.zeros((0, 4), np.int32)), "N >= 1"),
    (dict(inputs=np.zeros((2, 500), np.int32)), "max_seq_len"),
    (dict(strategy="pmap"), "unknown strategy"),
])
def test_bad_sweep_input(bad, message):
    kw = dict(seeds=[0], inputs=np.zeros((2, 4), np.int32))
    kw.update(bad)
    with pytest.raises(UserError, match=message):  # the only exception the CLI reports
        sweep(probe, CFG, **kw)


def _reference(cfg, probe_fn, seeds, xs):
    """One seed at a time, no engine: the full model from its seed, forward vmapped."""
    init = model.init  # eager (the samplers compile once per shape); equal to a jitted init
    run = jax.jit(jax.vmap(probe_fn, in_axes=(None, 0)))
    return np.stack([np.asarray(run(init(cfg, seed_key(s)), xs)) for s in seeds])


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False])
def test_untied_lm_head_matches_a_per_seed_reference(shared):
    """LLaMA-2 has its own W_U (lm_head); shared or per-seed, the engine must use the right one."""
    cfg = get_preset("llama2-tiny").ablate(shared_embedding=shared)
    assert not cfg.tie_embeddings
    split = SplitProbe(lambda p, x: model.forward(p, cfg, x, last_only=True).normed[-1],
                       lambda p, h: h @ model.unembedding(p, cfg))
    xs = RandomTokens(jax.random.key(4), 5, 8, cfg.vocab_size)[:]
    want = _reference(cfg, split, [0, 9], xs)
    got = sweep(split, cfg, iter([0, 9]), xs, seq_batch=2, devices=jax.devices()[:1])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got[0], got[1], atol=1e-3)  # the two seeds are different models


@pytest.mark.slow
def test_fewer_seeds_than_devices_shard_the_sequences(tokens, reference):
    devices = jax.devices()
    plan = plan_sweep(CFG, 2, 6, 16, devices=devices)
    assert (plan.seq_devices, plan.seed_chunk) == (2, 2)  # 2 x 2 devices, no seed padding
    assert plan.seq_chunk % 2 == 0
    assert plan_sweep(CFG, 1, 6, 16, devices=devices).seq_devices == 4
    p3 = plan_sweep(CFG, 3, 6, 16, devices=devices)  # 3 seeds: 2 x 2 devices, one seed padded
    assert (p3.seq_devices, p3.seed_chunk) == (2, 4)
    for seeds, rows in (([0, 11], [1, 2]), ([7], [3])):
        for strategy in ("map", "vmap"):
            got = sweep(probe, CFG, seeds, tokens, strategy=strategy, devices=devices)
            assert_same(jax.tree.map(lambda a: a, got),
                        jax.tree.map(lambda a: a[rows], reference))


def test_shared_embeddings_are_placed_on_every_device_once():
    from jax.sharding import NamedSharding

    from bornbiased_jax.sweep import _compiled

    plan = plan_sweep(CFG, 4, 8, 16, devices=jax.devices())
    compiled = _compiled(CFG, probe, plan, tuple(jax.devices()))
    leaves = jax.tree.leaves(compiled.shared_params)
    assert leaves
    for leaf in leaves:
        assert isinstance(leaf.sharding, NamedSharding) and leaf.sharding.is_fully_replicated
        assert len(leaf.sharding.device_set) == 4


class StubAccelerator:
    """Enough of a jax.Device for the planner: a GPU with 16 GiB."""

    platform = "gpu"

    def memory_stats(self):
        return {"bytes_limit": 16 << 30}


def test_plan_on_accelerators():
    cfg = get_preset("gpt2-rope-cpu")
    devs = [StubAccelerator(), StubAccelerator()]
    plan = plan_sweep(cfg, 64, 1000, 64, devices=devs)
    budget = int(0.4 * (16 << 30))
    assert plan.strategy == "vmap" and plan.map_batch == 8 and plan.n_devices == 2
    assert plan.seq_batch == plan.seq_chunk  # no cache-sized batches off the CPU
    assert plan.seed_chunk % 2 == 0 and (plan.seed_chunk // 2) * param_bytes(cfg) <= budget // 2
    from bornbiased_jax.sweep import activation_bytes

    # vmap runs a device's seeds together: their activations share the other half.
    assert (plan.seed_chunk // 2) * plan.seq_chunk * activation_bytes(cfg, 64) <= budget // 2
    assert plan_sweep(cfg, 1, 1000, 64, devices=devs).seq_devices == 2


def test_accelerator_plan_measures_the_batch_it_will_run():
    """Off the CPU a call vmaps its whole sequence chunk (seq_batch = seq_chunk), so the working
    set must be measured that way: measured in batches of 8 it saw only the outputs (an int per
    sequence here), and a chunk of 512 sequences needed 1 GiB of logits against a 128 MiB
    half-budget."""
    from bornbiased_jax.sweep_plan import init_seed_fn, run_one_fn, shared_params

    cfg = get_preset("gpt2-rope-tiny").ablate(vocab_size=8192)
    T = 64

    def argmax_of_all_logits(params, x):
        return jnp.argmax(model.forward(params, cfg, x).logits, -1)  # (T,) ids; T x V inside

    budget = 256 << 20
    plan = plan_sweep(cfg, 1, 1000, T, memory_budget=budget, devices=[StubAccelerator()],
                      probe=argmax_of_all_logits, row_shape=(T,), row_dtype=np.int32)
    assert plan.seq_batch == plan.seq_chunk
    run_one = jax.jit(run_one_fn(argmax_of_all_logits, plan.seq_batch))
    m = run_one.lower(jax.eval_shape(init_seed_fn(cfg), jax.random.key(0)),
                      jax.eval_shape(lambda: shared_params(cfg)),
                      jax.ShapeDtypeStruct((plan.seq_chunk, T), np.int32)).compile()
    m = m.memory_analysis()
    assert m.temp_size_in_bytes + m.output_size_in_bytes <= budget // 2
    assert plan.seq_chunk >= 16  # and not needlessly small: 2 MB of logits per sequence


def test_plan_sizes_chunks_from_the_probes_compiled_working_set():
    """A probe that builds all T x V logits needs T V 4 bytes per sequence; the planner learns
    that from XLA's memory analysis and keeps a chunk's working set inside the budget."""
    from bornbiased_jax.sweep import activation_bytes, probe_working_set

    cfg = get_preset("gpt2-rope-tiny").ablate(vocab_size=8192)
    T = 64

    def all_logits(params, x):
        return model.forward(params, cfg, x).logits  # (T, V): 2 MB per sequence

    fixed, per_seq = probe_working_set(cfg, all_logits, (T,), "int32", 8)
    assert per_seq >= T * cfg.vocab_size * 4 > 4 * activation_bytes(cfg, T)
    budget = 64 << 20
    plan = plan_sweep(cfg, 1, 1000, T, memory_budget=budget, devices=jax.devices()[:1],
                      probe=all_logits, row_shape=(T,), row_dtype=np.int32, seq_batch=8)
    assert fixed + plan.seq_chunk * per_seq <= budget // 2
    assert plan.seq_chunk >= 8  # and not needlessly small


def _call_bytes(plan, seeds):
    """Arguments + temporaries + outputs of one compiled sweep call (XLA's analysis)."""
    from bornbiased_jax.keys import seed_keys
    from bornbiased_jax.sweep import _compiled

    c = _compiled(CFG, probe, plan, (jax.devices()[0],))
    xs = jnp.zeros((plan.seq_chunk, 16), jnp.int32)
    m = c.run_many.lower(seed_keys(list(range(seeds))), c.shared_params, xs).compile()
    m = m.memory_analysis()
    return m.argument_size_in_bytes + m.temp_size_in_bytes + m.output_size_in_bytes


def test_map_call_holds_one_seeds_parameters_whatever_the_seed_chunk():
    """With "map", a call builds each seed's parameters inside its loop: its memory must not
    grow with the seeds per call beyond their outputs (a stacked chunk of parameters, and
    XLA's copy of it for the loop, once made the peak grow with the seed count)."""
    cpu = jax.devices()[:1]
    pb = param_bytes(CFG)
    sizes = {}
    for chunk in (2, 8):
        plan = plan_sweep(CFG, chunk, 4, 16, strategy="map", seed_chunk=chunk, seq_chunk=4,
                          map_batch=1, devices=cpu)
        sizes[chunk] = _call_bytes(plan, chunk)
    out_per_seed = 4 * (4 + 4 * CFG.d_model)  # 4 sequences' "top" (int32) and "h" (d floats)
    align = 3 * 64  # XLA aligns each seed-sized buffer (keys, top, h) to 64 bytes
    # 6 more seeds: their keys (8 bytes each) and outputs, nothing of the size of parameters
    assert sizes[8] - sizes[2] <= 6 * (out_per_seed + 8) + align < pb, (sizes, pb)
