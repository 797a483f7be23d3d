"""The edits of released models (fingerprint/edits/downstream.py), each checked for being
what it claims:

  * LoRA: the merged update W' - W has rank exactly r on every targeted kernel, nothing else
    moves, a fresh adapter (B = 0) is the identity, and the trainable mask freezes the base;
  * quantization round trips: |w - q(w)| <= s/2 with s = max|w| / qmax per channel or group
    (recomputed here in float64), at most 2 qmax + 1 levels per channel or group, codes within
    [-qmax, qmax], and a second round trip changes nothing, bitwise;
  * pruning: exactly floor(n/2) zeros per matrix, the smallest |w|; exactly 2 zeros in every
    run of 4 along the input axis;
  * merges on hand-made dicts;
  * obfuscations keep the logits (four architectures: RMSNorm and LayerNorm, grouped K/V
    heads, Q/K/V biases, tied embeddings, learned positions, the output gate and head-wise
    norm) while changing the weights; negative controls show the checks can fail;
  * every edit returns new dicts, leaves its input alone and names a parameter it does not know.

Tolerances: logits within 1e-4 max|logits| (float32 sums in another order and scaled weights:
observed errors are ~1e-7 of the logit scale); quantization error within s/2 plus 4 float32
ulps of max|w|. Models have random biases and norm gains, so that edits of those are seen.
"""

import copy
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from bornbiased_jax import model
from bornbiased_jax.config_io import apply_overrides
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits import downstream as E
from bornbiased_jax.fingerprint.edits import obfuscation as O
from bornbiased_jax.fingerprint.edits.obfuscation import permute_residual

ARCHS = {
    "llama2-tiny": ("llama2-tiny", []),  # RMSNorm, SwiGLU, untied head
    "qwen2-tiny": ("qwen2-tiny", []),  # grouped K/V heads (4 / 2), Q/K/V biases
    "gpt2-rope-tiny": ("gpt2-rope-tiny", []),  # LayerNorm with biases, tied embeddings
    "gpt2-gated": ("gpt2-rope-tiny", ["position=learned", "attn_output_gate=true",
                                      "attn_output_gate_bias=true",
                                      "attn_output_transform=headwise_rmsnorm"]),
}
U32 = np.finfo(np.float32).eps


@functools.lru_cache(maxsize=None)
def setup(arch):
    """(cfg, params as numpy with random biases and gains, logits function, base logits)."""
    name, overrides = ARCHS[arch]
    cfg = apply_overrides(get_preset(name), overrides)
    params = jax.device_get(jax.jit(model.init, static_argnums=0)(cfg, jax.random.key(3)))
    rng = np.random.default_rng(0)

    def randomise(path, x):
        last = path[-1].key
        if last == "bias":
            return (0.1 * rng.standard_normal(x.shape)).astype(np.float32)
        if last == "scale":
            return (1 + 0.2 * rng.standard_normal(x.shape)).astype(np.float32)
        return np.asarray(x)
    params = jax.tree_util.tree_map_with_path(randomise, params)
    tokens = np.asarray(jax.random.randint(jax.random.key(1), (4, 16), 0, cfg.vocab_size))
    logits = jax.jit(jax.vmap(lambda p, t: model.forward(p, cfg, t).logits, (None, 0)))
    return cfg, params, lambda p: np.asarray(logits(p, tokens)), np.asarray(logits(params, tokens))


def leaves(tree):
    return {jax.tree_util.keystr(k): np.asarray(v)
            for k, v in jax.tree_util.tree_leaves_with_path(tree)}


def kernels(tree):
    return {k: v for k, v in leaves(tree).items() if k.endswith("['kernel']")
            and "lm_head" not in k}


def perm(rng_seed, n):
    return np.random.default_rng(rng_seed).permutation(n)


def perms(seed, shape):
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(shape[-1]) for _ in range(int(np.prod(shape[:-1])))]
                    ).reshape(shape)


# --- the tree: new dicts, inputs untouched, unknown paths named ---------------------------------
def all_edits(cfg, params):
    L, N, G = cfg.n_layers, cfg.resolved_n_kv_heads, cfg.n_groups
    return {
        "lora": lambda p: E.lora_merge(p, E.init_lora(p, cfg, 2, jax.random.key(0), b_std=.1)),
        "int8": E.quantize_int8, "int4": lambda p: E.quantize_int4(p, 32),
        "prune": E.prune_magnitude, "prune_2_4": E.prune_2_4,
        "mlp": lambda p: O.permute_mlp_hidden(p, cfg, perms(0, (L, cfg.d_ff))),
        "heads": lambda p: O.permute_heads(p, cfg, perms(1, (L, N)), perms(2, (L, N, G))),
        "rescale": lambda p: O.rescale_norms(p, cfg, {"layers_0/attn_norm": np.full(64, 2.)}),
        "obfuscate": lambda p: O.obfuscate(p, cfg, jax.random.key(0)),
    }


def test_edits_return_new_dicts_and_leave_inputs_alone():
    cfg, params, _, _ = setup("qwen2-tiny")
    for name, edit in all_edits(cfg, params).items():
        before = copy.deepcopy(params)
        out = edit(params)
        assert all(np.array_equal(a, b) for a, b in
                   zip(jax.tree.leaves(before), jax.tree.leaves(params))), name
        assert out is not params and out["layers_0"] is not params["layers_0"], name
        assert out["layers_0"]["attn"] is not params["layers_0"]["attn"], name
        assert all(isinstance(x, jax.Array) for x in jax.tree.leaves(out)), name


def test_unknown_parameter_is_named():
    cfg, params, _, _ = setup("llama2-tiny")
    odd = copy.deepcopy(params)
    odd["layers_1"]["attn"]["rotary"] = {"inv_freq": np.ones(8, np.float32)}
    for name, edit in all_edits(cfg, params).items():
        with pytest.raises(UserError, match="layers_1/attn/rotary/inv_freq"):
            edit(odd)
    with pytest.raises(UserError, match="no schema entry for parameter lm_head/bias"):
        E.parameter_role(("lm_head", "bias"))


# --- LoRA -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch, n_targets", [("llama2-tiny", 7), ("gpt2-rope-tiny", 6)])
def test_lora_update_has_rank_r(arch, n_targets):
    cfg, params, _, _ = setup(arch)
    r = 3
    adapters = E.init_lora(params, cfg, r, jax.random.key(5), b_std=0.5)
    merged = E.lora_merge(params, adapters, scale=2.0)
    before, after = leaves(params), leaves(merged)
    changed = [k for k in before if not np.array_equal(before[k], after[k])]
    assert len(changed) == cfg.n_layers * n_targets  # gpt2 has no MLP gate: q, k, v, o, up, down
    for k in changed:
        assert k.endswith("['kernel']")
        # float32 difference: numpy's default tolerance (s_max max(m, n) eps_f32) is far above
        # the rounding of W + dW (~ eps_f32 |W|), far below the r-th singular value.
        dW = after[k] - before[k]
        assert np.linalg.matrix_rank(dW) == r, k
    fresh = E.init_lora(params, cfg, r, jax.random.key(5))  # B = 0: the identity
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(params),
                                                    jax.tree.leaves(E.lora_merge(params, fresh))))


def test_lora_targets_and_adapters_checked():
    cfg, params, _, _ = setup("gpt2-rope-tiny")
    with pytest.raises(UserError, match="unknown LoRA target 'attn/qkv'"):
        E.init_lora(params, cfg, 2, jax.random.key(0), targets=["attn/qkv"])
    with pytest.raises(UserError, match="'mlp/gate_proj' matches no kernel"):
        E.init_lora(params, cfg, 2, jax.random.key(0), targets=["mlp/gate_proj"])
    with pytest.raises(UserError, match="rank 65 exceeds"):
        E.init_lora(params, cfg, 65, jax.random.key(0))
    ad = E.init_lora(params, cfg, 2, jax.random.key(0), targets=["attn/v_proj"])
    assert list(ad["layers_0"]["attn"]) == ["v_proj"]
    with pytest.raises(UserError, match="layers_0/attn/w_proj matches no targetable"):
        E.lora_merge(params, {"layers_0": {"attn": {"w_proj": ad["layers_0"]["attn"]["v_proj"]}}})
    bad = {"layers_0": {"attn": {"q_proj": {"A": np.ones((64, 2)), "B": np.ones((3, 64))}}}}
    with pytest.raises(UserError, match="do not fit the kernel"):
        E.lora_merge(params, bad)


def test_lora_trains_adapters_with_base_frozen():
    cfg, params, _, _ = setup("llama2-tiny")
    adapters = E.init_lora(params, cfg, 2, jax.random.key(1))
    joint = {"params": params, "lora": adapters}
    labels = jax.tree.map(lambda m: "lora" if m else "frozen",
                          E.lora_trainable_mask(params, adapters))
    tx = optax.multi_transform({"lora": optax.adam(1e-2), "frozen": optax.set_to_zero()}, labels)
    tokens = np.arange(16) % cfg.vocab_size

    def loss(j):
        lg = model.forward(E.lora_merge(j["params"], j["lora"], 2.0), cfg, tokens[:-1]).logits
        return -jnp.mean(jax.nn.log_softmax(lg)[jnp.arange(15), tokens[1:]])
    grads = jax.jit(jax.grad(loss))(joint)
    updates, _ = tx.update(grads, tx.init(joint), joint)
    new = optax.apply_updates(joint, updates)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(params),
                                                    jax.tree.leaves(new["params"])))
    # B = 0 at the start, so the first step moves every B (A's gradient, G B^T, is still 0)
    old_B = {k: v for k, v in leaves(adapters).items() if k.endswith("['B']")}
    new_B = {k: v for k, v in leaves(new["lora"]).items() if k.endswith("['B']")}
    assert len(old_B) == 14 and all(np.abs(new_B[k]).min() > 0 for k in old_B)


# --- quantization ---------------------------------------------------------------------------------
def _groups(w_io, g):
    """(in, out) -> list of (rows, out) blocks of g consecutive input rows (last one shorter)."""
    return [w_io[i:i + g] for i in range(0, w_io.shape[0], g)]


@pytest.mark.parametrize("qmax, group", [(127, None), (7, 32), (7, 128)])
def test_quantization_round_trip(qmax, group):
    cfg, params, _, _ = setup("llama2-tiny")  # inputs 64 and 176: groups of 32 end short at 176
    edit = E.quantize_int8 if qmax == 127 else functools.partial(E.quantize_int4, group_size=group)
    q = edit(params)
    before, after, quantized = leaves(params), leaves(q), kernels(params)
    assert all(v.dtype == np.float32 for v in after.values())
    for k in before:
        if k not in quantized:  # norms, embeddings, the LM head: untouched
            assert np.array_equal(before[k], after[k]), k
            continue
        w, wq = before[k].astype(np.float64), after[k].astype(np.float64)
        for blk, blk_q in zip(_groups(w, group or w.shape[0]), _groups(wq, group or w.shape[0])):
            absmax = np.abs(blk).max(0)  # (out,): one scale per channel of the block
            s = absmax / qmax
            assert np.all(np.abs(blk - blk_q) <= s / 2 + 4 * U32 * absmax), k
            codes = blk_q / s
            assert np.allclose(codes, np.rint(codes), atol=1e-4)  # on the grid k s,
            assert np.abs(codes).max() <= qmax + 1e-4  # |k| <= qmax
            assert max(len(np.unique(c)) for c in blk_q.T) <= 2 * qmax + 1
            assert np.array_equal(np.abs(blk_q).max(0), absmax)  # the extreme maps back exactly
        assert not np.array_equal(w, wq), k
    assert all(np.array_equal(after[k], v) for k, v in leaves(edit(q)).items())  # idempotent


def test_quantization_flags_and_edge_cases():
    cfg, params, _, _ = setup("llama2-tiny")
    q = leaves(E.quantize_int4(params, 32, embeddings=True))
    base = leaves(params)
    for k in ("['embed']['embedding']", "['lm_head']['kernel']"):
        assert not np.array_equal(q[k], base[k])
        # embedding rows are channels (tokens), grouped along d: <= 15 levels per 32 entries
        rows = q[k] if "embed" in k else q[k].T
        assert max(len(np.unique(r[i:i + 32])) for r in rows[:50] for i in (0, 32)) <= 15
    zero = {"layers_0": {"mlp": {"up_proj": {"kernel": np.zeros((8, 3), np.float32)}}}}
    assert np.array_equal(E.quantize_int8(zero)["layers_0"]["mlp"]["up_proj"]["kernel"],
                          np.zeros((8, 3)))
    with pytest.raises(UserError, match="group_size must be a positive integer"):
        E.quantize_int4(params, 0)


# --- pruning --------------------------------------------------------------------------------------
def test_magnitude_pruning_exact_sparsity():
    cfg, params, _, _ = setup("qwen2-tiny")
    pruned, prunable = leaves(E.prune_magnitude(params)), kernels(params)
    for k, w in leaves(params).items():
        if k not in prunable:
            assert np.array_equal(pruned[k], w), k
            continue
        zero = pruned[k] == 0
        assert zero.sum() == w.size // 2, k
        assert np.abs(w[zero]).max() <= np.abs(w[~zero]).min()
        assert np.array_equal(pruned[k][~zero], w[~zero])
    odd = {"layers_0": {"attn": {"o_proj": {"kernel": np.arange(1, 16, dtype=np.float32
                                                               ).reshape(5, 3)}}}}
    out = np.asarray(E.prune_magnitude(odd, 0.5)["layers_0"]["attn"]["o_proj"]["kernel"])
    assert np.array_equal(out.ravel(), [0] * 7 + list(range(8, 16)))  # floor(15 / 2) = 7


def test_2_4_pruning_exact():
    cfg, params, _, _ = setup("llama2-tiny")
    pruned = leaves(E.prune_2_4(params))
    for k, w in kernels(params).items():
        p4 = pruned[k].reshape(-1, 4, w.shape[1])
        w4 = w.reshape(-1, 4, w.shape[1])
        assert np.all((p4 == 0).sum(1) == 2), k
        kept, dropped = np.where(p4 != 0, np.abs(w4), np.inf), np.where(p4 == 0, np.abs(w4), 0)
        assert np.all(dropped.max(1) <= kept.min(1)) and np.array_equal(p4[p4 != 0], w4[p4 != 0])
    bad = {"layers_0": {"mlp": {"down_proj": {"kernel": np.ones((6, 4), np.float32)}}}}
    with pytest.raises(UserError, match="layers_0/mlp/down_proj/kernel has 6"):
        E.prune_2_4(bad)


# --- merging --------------------------------------------------------------------------------------
def test_merges_on_hand_made_dicts():
    base = {"a": np.array([1.0, 2.0]), "b": {"c": np.array([[0.0, 4.0]])}}
    ft1 = {"a": np.array([3.0, 2.0]), "b": {"c": np.array([[1.0, 4.0]])}}
    ft2 = {"a": np.array([1.0, 6.0]), "b": {"c": np.array([[0.0, 0.0]])}}
    avg = E.average([ft1, ft2])
    assert np.array_equal(avg["a"], [2.0, 4.0]) and np.array_equal(avg["b"]["c"], [[0.5, 2.0]])
    ta = E.task_arithmetic(base, [ft1, ft2], [1.0, 0.5])
    assert np.array_equal(ta["a"], [3.0, 4.0]) and np.array_equal(ta["b"]["c"], [[1.0, 2.0]])
    half = E.task_arithmetic(base, [ft1, ft2], [0.5, 0.5])
    assert all(np.allclose(x, y) for x, y in zip(jax.tree.leaves(half), jax.tree.leaves(avg)))
    assert base["a"][0] == 1.0 and ft1["a"][0] == 3.0
    with pytest.raises(UserError, match="at b: keys"):
        E.average([base, {"a": base["a"], "b": {"d": base["b"]["c"]}}])
    with pytest.raises(UserError, match=r"shape of b/c: \[\(1, 2\), \(2,\)\]"):
        E.average([base, {"a": base["a"], "b": {"c": np.zeros(2)}}])
    with pytest.raises(UserError, match="one weight per fine-tune"):
        E.task_arithmetic(base, [ft1, ft2], [1.0])


# --- obfuscations ---------------------------------------------------------------------------------
def obfuscations(cfg, params):
    L, N, G, d = cfg.n_layers, cfg.resolved_n_kv_heads, cfg.n_groups, cfg.d_model
    rng = np.random.default_rng(7)
    scales = {n: np.exp(0.5 * rng.standard_normal(d)) for n in O.norm_names(params, cfg)}
    return {
        "residual": lambda p: permute_residual(p, perm(0, d)),
        "mlp": lambda p: O.permute_mlp_hidden(p, cfg, perms(1, (L, cfg.d_ff))),
        "heads": lambda p: O.permute_heads(p, cfg, perms(2, (L, N)), perms(3, (L, N, G))),
        "rescale": lambda p: O.rescale_norms(p, cfg, scales),
        "obfuscate": lambda p: O.obfuscate(p, cfg, jax.random.key(4)),
    }


@pytest.mark.parametrize("arch", list(ARCHS))
def test_obfuscations_preserve_the_function(arch):
    cfg, params, logits, base = setup(arch)
    tol = 1e-4 * np.abs(base).max()
    for name, edit in obfuscations(cfg, params).items():
        out = edit(params)
        assert np.abs(logits(out) - base).max() <= tol, name
        moved = [k for k, v in leaves(out).items() if not np.array_equal(v, leaves(params)[k])]
        assert moved, name  # and the weights did change
    # obfuscate rescales the final norm (then permutes it) only when the head is untied
    g, g_ob = (leaves(p)["['final_norm']['scale']"]
               for p in (params, O.obfuscate(params, cfg, jax.random.key(4))))
    assert np.array_equal(np.sort(g), np.sort(g_ob)) == cfg.tie_embeddings
    if cfg.tie_embeddings:  # the final norm is left alone: its reader is W_E^T
        assert "final_norm" not in O.norm_names(params, cfg)
        with pytest.raises(UserError, match="tied embeddings"):
            O.rescale_norms(params, cfg, {"final_norm": np.ones(cfg.d_model)})


def test_negative_controls_change_the_logits():
    """What the obfuscations avoid does change the function, so the checks above can fail."""
    cfg, params, logits, base = setup("qwen2-tiny")
    big = 10 * 1e-4 * np.abs(base).max()  # 10x the tolerance, ~1e4x the errors seen above
    H, K = cfg.n_heads, cfg.resolved_head_dim
    # query heads swapped across K/V groups (q columns and o rows only): the grouping breaks
    swap = np.concatenate([np.arange(K) + h * K for h in (2, 1, 0, 3)])
    p = copy.deepcopy(params)
    att = p["layers_0"]["attn"]
    att["q_proj"] = {k: v[..., swap] for k, v in att["q_proj"].items()}
    att["o_proj"] = {"kernel": att["o_proj"]["kernel"][swap]}
    assert np.abs(logits(p) - base).max() > big
    # one permutation inside every head of q and k alike: q.k is kept, RoPE's pairs are not
    inner = perm(8, K)
    p = copy.deepcopy(params)
    att = p["layers_0"]["attn"]
    for name, n in (("q_proj", H), ("k_proj", cfg.resolved_n_kv_heads)):
        cols = (np.arange(n)[:, None] * K + inner).ravel()
        att[name] = {k: v[..., cols] for k, v in att[name].items()}
    assert np.abs(logits(p) - base).max() > big
    # a norm gain scaled without dividing the readers
    p = copy.deepcopy(params)
    p["layers_0"]["mlp_norm"]["scale"] = p["layers_0"]["mlp_norm"]["scale"] * 1.5
    assert np.abs(logits(p) - base).max() > big


def test_obfuscation_inputs_checked():
    cfg, params, _, _ = setup("qwen2-tiny")
    with pytest.raises(UserError, match=r"kv_perm_LN must be integer permutations of shape"):
        O.permute_heads(params, cfg, np.zeros((2, 2), int))
    with pytest.raises(UserError, match="perm_LF must be integer permutations"):
        O.permute_mlp_hidden(params, cfg, perms(0, (2, 255)))
    with pytest.raises(UserError, match="no norm 'layers_5/attn_norm'"):
        O.rescale_norms(params, cfg, {"layers_5/attn_norm": np.ones(64)})
    with pytest.raises(UserError, match="finite and non-zero"):
        O.rescale_norms(params, cfg, {"final_norm": np.r_[np.ones(63), 0.0]})
