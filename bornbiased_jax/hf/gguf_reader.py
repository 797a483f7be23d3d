"""Opening llama.cpp GGUF files: :func:`is_gguf`, :func:`open_reader` (a readable file's reader, or a
UserError saying why not), :func:`field` (a metadata value), and the faster header parser
they use, gguf's own ``GGUFReader`` with its arrays parsed in one pass each
(:func:`reader_class`); used by :mod:`.gguf` and :mod:`.gguf_tokenizer`."""

from __future__ import annotations

import functools
import os
import struct
import sys
from pathlib import Path

import numpy as np

from bornbiased_jax.errors import UserError

MAGIC = b"GGUF"
# Types dequantized by gguf.quants (llama.cpp's reference code): F32 and F16 are read as they
# are, the others block by block.
SUPPORTED_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                   "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")


def is_gguf(path: str | os.PathLike) -> bool:
    """True for a file whose name ends in .gguf or whose first bytes are the GGUF magic."""
    p = Path(path)
    if p.suffix.lower() == ".gguf":
        return True
    try:
        with open(p, "rb") as f:
            return p.is_file() and f.read(4) == MAGIC
    except OSError:
        return False


def open_reader(path: str | os.PathLike):
    """gguf's reader of ``path``, or a UserError saying why the file is not a readable GGUF.
    A file is parsed once per process while it is unchanged (its metadata -- the tokenizer's
    arrays of 50,000-260,000 strings -- take a second to parse; a command reads it to plan, to
    align vocabularies and to load)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such file; give a llama.cpp .gguf model file")
    st = p.stat()
    return _parsed(str(p.resolve()), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4)
def _parsed(path: str, mtime_ns: int, size: int):
    """:func:`open_reader` of an unchanged file (the key: its path, modification time and size)."""
    p = Path(path)
    with open(p, "rb") as f:
        magic = f.read(4)
    if magic != MAGIC:
        raise UserError(f"{p}: not a GGUF file (it begins {magic!r}, a GGUF begins {MAGIC!r})")
    try:
        import gguf  # noqa: F401  (the package the reader below extends)
    except ImportError:
        raise UserError(f"{p}: reading GGUF files needs llama.cpp's 'gguf' package "
                        f"(pip install gguf)") from None
    try:
        return reader_class()(str(p), "r")
    except Exception as e:  # truncated or corrupt: struct, value, index or mmap errors
        raise UserError(f"{p}: not a readable GGUF file ({type(e).__name__}: {e}); the file is "
                        f"truncated or corrupt, download or convert it again") from None


def field(reader, key: str, default=None):
    """A metadata value of the file (``reader``: :func:`open_reader`'s), or ``default``."""
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def reader_class():
    """gguf's ``GGUFReader`` with arrays of strings and of numbers parsed in one pass each.

    The stock reader parses an array element by element through numpy memmap views (a
    recursive call per element), so the header of a real model's file (SmolLM2: 49,152 tokens,
    48,900 merges, their types) takes seconds. This one gives the same fields (the same
    ``parts``, ``data`` and ``types``, so ``contents()`` answers the same; tested against the
    stock reader) in a fraction of the time."""
    import gguf
    from gguf.constants import GGUFValueType

    class Reader(gguf.GGUFReader):
        def _get_field_parts(self, orig_offs, raw_type):
            if GGUFValueType(raw_type) != GGUFValueType.ARRAY:
                return super()._get_field_parts(orig_offs, raw_type)
            raw_itype = self._get(orig_offs, np.uint32)
            alen = self._get(orig_offs + 4, np.uint64)
            itype, n = GGUFValueType(raw_itype[0]), int(alen[0])
            offs = orig_offs + 12
            parts: list = [raw_itype, alen]
            nptype = self.gguf_scalar_to_np.get(itype)
            if nptype is not None:  # n numbers: one view, one part per element
                values = self._get(offs, nptype, n).view(np.ndarray)
                parts += [values[i:i + 1] for i in range(n)]
                offs += int(values.nbytes)
                data = list(range(2, 2 + n))
            elif itype == GGUFValueType.STRING:  # (length, bytes) per element
                order = "<" if (self.byte_order == "I") == (sys.byteorder == "little") else ">"
                plain = self.data.view(np.ndarray)  # slicing a memmap costs ten times more
                u64 = np.dtype(np.uint64).newbyteorder(self.byte_order)
                buf, data = memoryview(plain), []
                for _ in range(n):
                    (length,) = struct.unpack_from(order + "Q", buf, offs)
                    parts += [plain[offs:offs + 8].view(u64), plain[offs + 8:offs + 8 + length]]
                    data.append(len(parts) - 1)
                    offs += 8 + length
            else:  # arrays of arrays: the stock parser
                return super()._get_field_parts(orig_offs, raw_type)
            types = [GGUFValueType.ARRAY] + ([itype] if n else [])
            return offs - orig_offs, parts, data, types

    return Reader


def dequantized(path, t) -> np.ndarray:
    """float32 numpy array of GGUF tensor ``t`` in torch's (out, in) order."""
    from gguf import quants

    kind = t.tensor_type.name
    if kind not in SUPPORTED_TYPES:
        raise UserError(f"{path}: tensor {t.name} has type {kind}, which is not supported; "
                        f"supported types: {', '.join(SUPPORTED_TYPES)}")
    shape = tuple(int(n) for n in reversed(t.shape))
    try:
        a = (np.asarray(t.data, np.float32) if kind in ("F32", "F16")
             else quants.dequantize(np.asarray(t.data), t.tensor_type))
        return np.asarray(a, np.float32).reshape(shape)
    except (ValueError, TypeError) as e:
        raise UserError(f"{path}: tensor {t.name} ({kind}, shape {shape}) does not decode "
                        f"({e}); the file is truncated or corrupt") from None
