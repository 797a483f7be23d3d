"""Named presets, each a :class:`ModelConfig`, owned by their family's record
(:mod:`bornbiased_jax.architectures`): the paper's grid of a family crossed with a size
(``gpt2-rope``, ``llama2``, ``qwen2`` x ``tiny`` for tests, ``cpu`` for first runs on a laptop,
``small``, ``nano`` for the paper's 12L/12H/768d models and ``1.2b`` for the paper's large
GPT-2), released models' shapes (``smollm2-135m``, ``gemma3-270m``, ``llama3-1b``,
``qwen3-0.6b``, ``mistral-7b``, ``phi3-mini``, ``olmo2-1b``) and their test sizes
(``gemma3-tiny``, ``llama3-tiny``, ...).
"""

from __future__ import annotations

from bornbiased_jax import architectures
from bornbiased_jax.architectures.sizes import SIZES
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

PRESETS: dict[str, ModelConfig] = architectures.presets()
PRESET_SIZES = tuple(SIZES)
# The grid's families: the name prefixes with a preset at every size of the paper's grid
PRESET_FAMILIES = tuple(dict.fromkeys(
    n[:-len(s) - 1] for n in PRESETS for s in SIZES
    if n.endswith("-" + s) and all(f"{n[:-len(s) - 1]}-{t}" in PRESETS
                                   for t in ("tiny", "cpu", "small", "nano"))))


def get_preset(name: str) -> ModelConfig:
    """The named preset; a ``UserError`` listing the valid names otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UserError(
            f"unknown preset {name!r}; available presets: {', '.join(sorted(PRESETS))}"
        ) from None
