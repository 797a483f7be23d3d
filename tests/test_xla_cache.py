"""The command line's persistent XLA compilation cache: where it goes, what keeps a user's own
choice, how it is turned off (``bornbiased_jax.xla_cache``)."""

import os

from bornbiased_jax import xla_cache


def test_default_folder_and_the_users_choices(monkeypatch, tmp_path):
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(xla_cache.OFF, "0")
    assert xla_cache.enable() is None and "JAX_COMPILATION_CACHE_DIR" not in os.environ
    monkeypatch.delenv(xla_cache.OFF)
    import jax

    before = jax.config.jax_compilation_cache_dir
    try:
        folder = xla_cache.enable()
        assert folder == str(tmp_path / "bornbiased-jax" / "xla")
        assert os.environ["JAX_COMPILATION_CACHE_DIR"] == folder
        assert jax.config.jax_compilation_cache_dir == folder  # JAX was already imported
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "mine"))
    assert xla_cache.enable() == str(tmp_path / "mine")  # a user's own folder is kept
