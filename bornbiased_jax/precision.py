"""Float32 matrix-product precision, chosen per use and stated, not left to the backend.

On NVIDIA GPUs from Ampere on, XLA computes float32 matrix products in TF32 (a 10-bit mantissa,
relative error ~5e-4) unless full float32 is requested; on CPUs every setting is full float32.
The choices, as ``jax.default_matmul_precision`` names them:

  * ``"highest"``: full float32. The default of every probe (``bornbiased sweep``,
    ``fingerprint``, ``sinks``, ``theory``, the experiment scripts) and of the test suite: the
    probes take arg-maxes over |V| logits whose leaders can be near-tied, compare models by
    rank statistics, and the tests check float32 identities (1e-5 against ``transformers``);
  * ``"high"``: the backend's intermediate setting (JAX: TF32 where available on GPUs,
    three bfloat16 passes on TPUs; not measured here);
  * ``"default"``: the backend's own choice (TF32 on such GPUs). The default of
    ``bornbiased train``, where rounding noise is far below the gradient noise;
  * ``"bf16x3"``, ``"bf16x6"``, ``"bf16x9"``, ``"tf32x3"``: JAX's multi-pass dot algorithms
    (``jax.lax.DotAlgorithmPreset`` BF16_BF16_F32_X3 / _X6 / _X9, TF32_TF32_F32_X3): float32 operands
    split into 3, 6 or 9 bfloat16 products, or 3 TF32 products, accumulated in float32, so that
    tensor cores reach near-float32 accuracy (X6, X9 and TF32 X3) or about 16 mantissa bits (X3).
    Candidates for a fast full-accuracy GPU setting (``benchmarks/precision_timing.py`` times and
    compares them); a backend that cannot run one (a CPU: bf16x9, tf32x3) is refused with a
    clear error when it is chosen.

Measured on an NVIDIA H100 (jax 0.11.2, ``results/gpu/``): with "default", 40 of the test
suite's float32 comparisons failed, by 6e-7 to 1.3e-2 absolute (e.g. the vmap / map / loop
sweep agreement, and the 1e-5 parity with ``transformers`` logits); with "highest" the failures
in the same test files fell from 48 to 13 (in TF32, 9 of those files' failures were tests that
need four devices). How much TF32 changes Table 1's top-1 tokens was not measured there: the
comparison, full float32 first and compilation included, printed no row within 200 s.

Where a command names no precision, a ``JAX_DEFAULT_MATMUL_PRECISION`` in the environment is
kept (the test suite sets it to "highest"); otherwise the command's default applies. The
variable takes JAX's spelling, not the short names: ``BF16_BF16_F32_X6`` for bf16x6 (JAX refuses
"bf16x6" there when it is imported); :func:`env_value` translates. The setting holds for the
command's duration and is restored when it returns (:func:`scoped`).

JAX is imported when a setting is read or made, not with this module, so that argument parsers
can offer ``PRECISIONS`` without importing JAX.
"""

from __future__ import annotations

import contextlib
import os

from bornbiased_jax.errors import UserError

ENV = "JAX_DEFAULT_MATMUL_PRECISION"
# JAX's multi-pass dot algorithms, by the short names the commands take
ALGORITHMS = {"bf16x3": "BF16_BF16_F32_X3", "bf16x6": "BF16_BF16_F32_X6",
              "bf16x9": "BF16_BF16_F32_X9", "tf32x3": "TF32_TF32_F32_X3"}
PRECISIONS = ("highest", "high", "default", *ALGORITHMS)
PROBE_DEFAULT = "highest"
TRAIN_DEFAULT = "default"


def use(name: str) -> str:
    """Set the process's float32 matmul precision to ``name`` (one of ``PRECISIONS``) for every
    program traced from now on; returns it."""
    if name not in PRECISIONS:
        raise UserError(f"unknown matmul precision {name!r}; choose one of {PRECISIONS} "
                        f"(highest: full float32; high: bfloat16x3; default: the backend's "
                        f"choice, TF32 on NVIDIA GPUs; bf16xK / tf32x3: JAX's K-pass dot "
                        f"algorithms)")
    import jax

    if name in ALGORITHMS:
        _check_supported(name)
    jax.config.update("jax_default_matmul_precision",
                      None if name == "default" else ALGORITHMS.get(name, name))
    return name


def _check_supported(name: str) -> None:
    """Refuse a dot algorithm the default backend cannot run, instead of failing later inside a
    command's first compiled program: a tiny dot using it is lowered and compiled (JAX's CPU
    lowering refuses what the CPU lacks; on a GPU, XLA's compiler decides).

    This starts the backend: multi-process commands join their processes first."""
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    try:
        with jax.default_matmul_precision(ALGORITHMS[name]):
            jax.jit(jnp.matmul).lower(x, x).compile()
    except (ValueError, jax.errors.JaxRuntimeError) as e:
        platform = jax.devices()[0].platform
        raise UserError(f"matmul precision {name!r} ({ALGORITHMS[name]}) is not supported on "
                        f"this backend ({platform}): {e}; choose one of "
                        f"{tuple(p for p in PRECISIONS if p not in ALGORITHMS)} or another "
                        f"dot algorithm") from None


def current() -> str:
    """The precision programs are traced with now ("default" when none was requested; a dot
    algorithm by its short name)."""
    import jax

    name = jax.config.jax_default_matmul_precision or "default"
    return {v: k for k, v in ALGORITHMS.items()}.get(name, name)


def env_value(name: str) -> str:
    """``name`` (one of ``PRECISIONS``, or already JAX's spelling) as ``JAX_DEFAULT_MATMUL_PRECISION``
    must spell it."""
    if name in ALGORITHMS.values():
        return name
    if name not in PRECISIONS:
        raise UserError(f"unknown matmul precision {name!r} for ${ENV}; choose one of "
                        f"{PRECISIONS} or JAX's names of the dot algorithms "
                        f"{tuple(ALGORITHMS.values())}")
    return ALGORITHMS.get(name, name)


def for_command(flag: str | None, command_default: str) -> str | None:
    """The precision a command runs with: its flag, else None (keep the environment's
    ``JAX_DEFAULT_MATMUL_PRECISION``) when that is set, else the command's default. A dot
    algorithm named by the environment is returned by its short name, so that :func:`use`
    checks the backend can run it."""
    if flag is not None:
        return flag
    from_env = os.environ.get(ENV)
    if not from_env:
        return command_default
    return {v: k for k, v in ALGORITHMS.items()}.get(from_env)


@contextlib.contextmanager
def scoped(name: str | None):
    """``use(name)`` for the duration of the block (None: leave the setting as it is), then
    restore the previous setting."""
    import jax

    before = jax.config.jax_default_matmul_precision
    try:
        if name is not None:
            use(name)
        yield
    finally:
        jax.config.update("jax_default_matmul_precision", before)
