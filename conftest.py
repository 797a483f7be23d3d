"""Test setup shared by ``tests/`` and ``theory/``: four fake CPU devices (for the sharded sweep
and data-parallel training) and deterministic hypothesis."""

import os


def with_host_device_count(flags: str, n: int) -> str:
    """``flags`` with XLA's fake host device count set to n, unless the flags already set one
    (a user's own XLA_FLAGS are kept, not replaced)."""
    if "--xla_force_host_platform_device_count" in flags:
        return flags
    return f"{flags} --xla_force_host_platform_device_count={n}".strip()


# Must precede the first import of jax anywhere in the test session.
os.environ["XLA_FLAGS"] = with_host_device_count(os.environ.get("XLA_FLAGS", ""), 4)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The tests check float32 identities: no TF32 where a GPU would otherwise use it
# (bornbiased_jax/precision.py).
os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("bornbiased", derandomize=True, deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("bornbiased")
