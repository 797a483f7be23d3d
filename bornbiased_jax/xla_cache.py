"""A persistent XLA compilation cache for the command line: a command run again (another pair
to fingerprint, a resumed sweep, the next seed batch) loads the programs it compiled before
instead of compiling them again. A cached executable is the binary the first compilation
produced, so no result changes.

The cache is ``$XDG_CACHE_HOME/bornbiased-jax/xla`` (``~/.cache/...`` by default). A user's own
``JAX_COMPILATION_CACHE_DIR`` (and ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``) is kept;
``BORNBIASED_XLA_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

OFF = "BORNBIASED_XLA_CACHE"


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bornbiased-jax" / "xla"


def enable() -> str | None:
    """Point JAX at the cache (every compilation cached, however short: most of a small
    model's are), unless the user chose a folder or turned it off; the folder used, or None."""
    if os.environ.get(OFF, "1") == "0":
        return None
    folder = os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(default_dir())
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    if "jax" in sys.modules:  # read at import: tell a JAX already imported, if it differs
        import jax

        min_s = float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"])
        if jax.config.jax_compilation_cache_dir != folder:
            jax.config.update("jax_compilation_cache_dir", folder)
        if jax.config.jax_persistent_cache_min_compile_time_secs != min_s:
            jax.config.update("jax_persistent_cache_min_compile_time_secs", min_s)
    return folder
