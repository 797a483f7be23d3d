"""Vocabularies aligned by token string: the inputs two models of different vocabularies read.

A lineage test feeds both models the same random text. When both carry a tokenizer (an HF
folder's or a training run's ``tokenizer.json``, a GGUF file's ``tokenizer.ggml.tokens``), the
same text is the same token *strings*: the inputs are drawn uniformly from the strings both
vocabularies hold, and each model reads its own id of each (:func:`align`). A vocabulary
extended by new tokens, truncated, or permuted with its tokenizer remapped (the same function
of text under other ids) then reads the same inputs as its base. The overlap, and how many
strings each side holds alone, are reported. Without a tokenizer on either side the ids are
assumed to mean the same thing (a preset, a run folder without ``tokenizer.json``): the inputs
are drawn from the ids both models have, and the alignment says so.

Both models' ids for the inputs are fixed before either model runs, so every test's null stays
what it was: the permutation test permutes BASE's residual basis, the matched test re-pairs
units, and neither depends on which ids were drawn.

Out of scope: a thief who also renames the strings (a vocabulary permuted *without* remapping
the tokenizer is a different function of text, not a renaming; one who ships a tokenizer with
scrambled strings changes what every id means to the world too). Recovering that map needs a
rotation- and permutation-invariant signature of each embedding row matched across the models
(e.g. the row's distances to all others, or its MLP pre-activations at position 0), a search
over V! maps whose level this project has not measured; the aligned inputs refuse too small an
overlap instead (:data:`MIN_SHARED`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from bornbiased_jax.errors import UserError

# The least share of the smaller vocabulary that both must hold for their inputs to be aligned
# by string: below it the two tokenizers are other tokenizers, not one edited.
MIN_SHARED = 0.5


@dataclasses.dataclass(frozen=True)
class Alignment:
    """The token ids each model reads for the shared strings (or ids), in one order: input
    position i is ``base_ids[i]`` for BASE and ``suspect_ids[i]`` for SUSPECT. ``by``:
    'strings' (both tokenizers read) or 'ids' (assumed to mean the same). ``base_only`` /
    ``suspect_only``: how many strings (ids) one side holds that the other lacks."""

    base_ids: np.ndarray
    suspect_ids: np.ndarray
    by: str
    base_only: int
    suspect_only: int
    base_vocab: int = 0  # the models' vocabulary sizes (ids 0..V-1, named by a string or not)
    suspect_vocab: int = 0

    @property
    def shared(self) -> int:
        return len(self.base_ids)

    @property
    def identity(self) -> bool:
        """Both read the same ids for every id of BASE's vocabulary (each id of BASE shared,
        SUSPECT's vocabulary at least as large): the inputs of a comparison without alignment.
        An id of BASE that no string names (a padded embedding) or that repeats a string is not
        shared, so such a vocabulary is aligned."""
        Va = self.base_vocab or len(self.base_ids)
        return (self.shared == Va and Va <= (self.suspect_vocab or Va)
                and np.array_equal(self.base_ids, np.arange(Va))
                and np.array_equal(self.suspect_ids, self.base_ids))

    def key(self) -> tuple:
        return (self.by, self.base_ids.tobytes(), self.suspect_ids.tobytes())

    def describe(self) -> str:
        if self.by == "ids":
            extra = ("" if self.base_only == self.suspect_only == 0 else
                     f" ({self.base_only} ids of BASE's and {self.suspect_only} of SUSPECT's "
                     f"beyond the other's vocabulary are never drawn)")
            return (f"no tokenizer on one side or both: token ids assumed to mean the same in "
                    f"both models; inputs drawn from the {self.shared:,} ids both have{extra}")
        return (f"vocabularies aligned by token string: {self.shared:,} strings shared, "
                f"{self.base_only:,} in BASE's alone, {self.suspect_only:,} in SUSPECT's alone; "
                f"each model reads its own id of each")

    def record(self) -> dict:
        return {"by": self.by, "shared": self.shared, "base_only": self.base_only,
                "suspect_only": self.suspect_only, "identity": self.identity}


def token_strings(m) -> list[str] | None:
    """The token string of each id < ``m.cfg.vocab_size`` of a loaded model (``LoadedModel``)
    from its tokenizer, or None when it carries none (a preset; a folder without
    ``tokenizer.json``). Ids the tokenizer does not name (a padded embedding) are None."""
    return location_strings(m.kind, m.folder, m.cfg.vocab_size)


def source_strings(src, vocab_size: int) -> list[str] | None:
    """:func:`token_strings` of the model a parsed ``sources.Source`` names, read without
    loading its weights."""
    from bornbiased_jax.sources import source_location

    return location_strings(*source_location(src), vocab_size)


def location_strings(kind: str, folder, vocab_size: int) -> list[str] | None:
    """:func:`token_strings` of a model of ``kind`` at ``folder`` (a GGUF file, a run or HF
    folder; None for a preset)."""
    if folder is None or kind == "preset":
        return None
    folder = Path(folder)
    if kind == "gguf":
        from bornbiased_jax.hf.gguf import gguf_token_strings

        strings = gguf_token_strings(folder)
    else:
        f = (folder if folder.is_dir() else folder.parent) / "tokenizer.json"
        strings = _tokenizer_json_strings(f) if f.is_file() else None
    if strings is None:
        return None
    return [strings[i] if i < len(strings) else None for i in range(vocab_size)]


def _tokenizer_json_strings(f: Path) -> list[str | None]:
    """Id -> string of a ``tokenizers`` JSON file: its model's vocabulary and added tokens."""
    try:
        data = json.loads(Path(f).read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{f}: not a readable tokenizer.json ({e})") from None
    raw = data.get("model", {}).get("vocab") or {}
    pairs = (list(enumerate(piece for piece, _ in raw)) if isinstance(raw, list)  # Unigram
             else [(i, s) for s, i in raw.items()])
    pairs += [(t["id"], t["content"]) for t in data.get("added_tokens") or []]
    if not pairs:
        raise UserError(f"{f}: the tokenizer names no token")
    out: list[str | None] = [None] * (max(i for i, _ in pairs) + 1)
    for i, s in pairs:
        if out[i] is None:  # an id's first string (the model vocabulary's) wins
            out[i] = s
    return out


def _index(strings: list[str | None]) -> dict[str, int]:
    """string -> its first id."""
    out: dict[str, int] = {}
    for i, s in enumerate(strings):
        if s is not None and s not in out:
            out[s] = i
    return out


def align(base, suspect, base_strings=None, suspect_strings=None) -> Alignment:
    """The ids each model reads for the strings both vocabularies hold (in BASE's id order),
    or, when either has no tokenizer, for the ids both have (:func:`align_strings` of the
    loaded models' :func:`token_strings`; ``*_strings``: those, when already read)."""
    sa = token_strings(base) if base_strings is None else base_strings
    sb = token_strings(suspect) if suspect_strings is None else suspect_strings
    return align_strings(sa, sb, base.cfg.vocab_size, suspect.cfg.vocab_size, suspect.label)


def align_strings(sa, sb, Va: int, Vb: int, suspect: str = "SUSPECT") -> Alignment:
    """:func:`align` from the two vocabularies' strings by id (None: no tokenizer) and sizes;
    a UserError naming ``suspect`` when the tokenizers share less than :data:`MIN_SHARED` of
    the smaller vocabulary."""
    if sa is None or sb is None:
        n = min(Va, Vb)
        ids = np.arange(n)
        return Alignment(ids, ids, "ids", Va - n, Vb - n, Va, Vb)
    ia, ib = _index(sa), _index(sb)
    pairs = sorted((i, ib[s]) for s, i in ia.items() if s in ib)
    n_a, n_b = len(ia), len(ib)
    small = min(n_a, n_b)
    if len(pairs) < MIN_SHARED * small:
        raise UserError(f"{suspect}: its tokenizer and BASE's share {len(pairs):,} token "
                        f"strings, {len(pairs) / max(1, small):.0%} of the smaller vocabulary "
                        f"({small:,}); a descendant keeps most of its base's tokenizer (at least "
                        f"{MIN_SHARED:.0%} shared is required), so these are other tokenizers, "
                        f"and inputs drawn from so few shared strings would not be the same "
                        f"text to both models")
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    return Alignment(a, b, "strings", n_a - len(pairs), n_b - len(pairs), Va, Vb)


def aligned_tokens(alignment: Alignment, idx_NT: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(BASE's ids, SUSPECT's ids) of the inputs whose positions in the shared list are
    ``idx_NT`` (uniform draws over ``alignment.shared``)."""
    idx = np.asarray(idx_NT)
    return alignment.base_ids[idx].astype(np.int32), alignment.suspect_ids[idx].astype(np.int32)
