"""The safetensors files of an HF model folder: one ``model.safetensors`` or shards listed in
``model.safetensors.index.json``; read memory-mapped, one tensor at a time.

``safe_open(framework="numpy")`` maps each file and copies out only the tensor asked for, so
loading a 7B model holds one tensor on the host at a time, not the checkpoint. bfloat16
tensors come back as ``ml_dtypes.bfloat16`` arrays (numpy has no bfloat16 of its own), which
``jax.numpy`` takes as they are.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open

from bornbiased_jax.errors import UserError

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
# safetensors dtype tags that hold real weights; anything else (ints, fp8) is refused.
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")


def _open(path: Path, stack: contextlib.ExitStack):
    try:
        return stack.enter_context(safe_open(str(path), framework="numpy"))
    except SafetensorError as e:
        raise UserError(f"{path}: not a readable safetensors file ({e}); the file is "
                        f"truncated or corrupt, download or export it again") from None
    except OSError as e:
        raise UserError(f"{path}: cannot be read ({e})") from None


class SafetensorsFolder(contextlib.AbstractContextManager):
    """Tensors of a model folder by name, across shards. Use as a context manager."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._stack = contextlib.ExitStack()
        self._file_of: dict[str, Path] = {}
        self._handles: dict[Path, object] = {}
        try:
            self._index()
        except BaseException:
            self._stack.close()
            raise

    def _index(self) -> None:
        index, single = self.folder / INDEX, self.folder / SINGLE
        if index.is_file():
            try:
                weight_map = json.loads(index.read_text())["weight_map"]
                files = sorted(set(weight_map.values()))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
                raise UserError(f"{index}: not a safetensors index (needs a 'weight_map' object "
                                f"of tensor name -> shard file): {e!r}") from None
            missing = [f for f in files if not (self.folder / f).is_file()]
            if missing:
                raise UserError(f"{index} lists shard(s) missing from {self.folder}: "
                                + ", ".join(missing))
            for f in files:
                h = self._handles[self.folder / f] = _open(self.folder / f, self._stack)
                for name in h.keys():
                    self._file_of[name] = self.folder / f
            for name, f in weight_map.items():
                if self._file_of.get(name) != self.folder / f:
                    raise UserError(f"{index} places tensor {name!r} in {f}, which does not "
                                    f"hold it; the index and shards disagree")
        elif single.is_file():
            h = self._handles[single] = _open(single, self._stack)
            self._file_of = {name: single for name in h.keys()}
        else:
            others = sorted(p.name for p in self.folder.glob("*.bin"))
            hint = f" (found {', '.join(others)}: PyTorch pickles are not read; convert them " \
                   f"with save_pretrained(safe_serialization=True))" if others else ""
            raise UserError(f"{self.folder}: neither {SINGLE} nor {INDEX} found{hint}")

    def __exit__(self, *exc):
        self._stack.close()
        return None

    def names(self) -> list[str]:
        return list(self._file_of)

    def _slice(self, name: str):
        return self._handles[self._file_of[name]].get_slice(name)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._slice(name).get_shape())

    def dtype(self, name: str) -> str:
        return self._slice(name).get_dtype()

    def get(self, name: str) -> np.ndarray:
        return self._handles[self._file_of[name]].get_tensor(name)


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """One ``model.safetensors`` file; ``format: pt`` metadata, which ``transformers`` wants."""
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path),
              metadata={"format": "pt"})
