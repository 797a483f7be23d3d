"""A model record: everything the real-model study needs to know of one pretrained model, as
data (a JSON file; the shipped ones are ``experiments/real_model/models/<name>.json``), so that
another model of the registry, or a user's own GGUF file or HF folder, is another record and no
new code:

  ``name``          its records are ``<name>_sinks``, ``<name>_token_preference``,
                    ``<name>_init`` and ``<name>_lineage``;
  ``study``         the folder of its records under results/records/ (and its study's name
                    when RESULTS.md has a section for it); ``title`` that section's heading;
  ``label``         how its rows name it ('SmolLM2-135M-Instruct (Q4_1 GGUF)'), ``short`` how
                    their sentences do ('SmolLM2');
  ``released_as``   its model card's name, whose pretraining tokens the rows state
                    (``common.pretrained.PRETRAINING_TOKENS``), or null;
  ``file``, ``sha256``, ``fetch``, ``source``: the model file's name, its sha256 (a file
                    whose sha256 differs is refused; null: not checked), the command that
                    fetches it and the section's words for where it comes from;
  ``preset``        the registry preset of its shape, or null;
  ``steps``         which steps apply, in order (``sinks``, ``init``, ``sweep``,
                    ``suspects``, ``cousins``, ``lineage``: :mod:`experiments.real_model.
                    measure`);
  ``out``, ``suspects``: where the commands' outputs and the built suspects go;
  ``sinks``         the sinks runs, {key: the command's extra flags} ("" alone: one run whose
                    record is flat; else one run per key, e.g. with and without ``<bos>``);
  ``sweep``         Table 1's protocol on it: ``num_seqs`` and ``seq_lens`` (one command per
                    length);
  ``init``          fresh initialisations of a preset and its ablations (``preset``, ``arms``:
                    {arm: config changes}, ``seeds``, ``num_seqs``, ``seq_len``, ``block``),
                    or null;
  ``tune``          the fine-tunes' settings (``steps``, ``batch``, ``seq_len``, ``corpus_mb``
                    of Vim's help, ``data_seed``, ``bos_id``: a token put before each document,
                    or null);
  ``descendants``   {name: spec}: each suspect made from it, ``kind`` 'honest' (fine-tunes,
                    quantization, pruning: a lineage test must find it), 'renamed' (renamings
                    and rotations) or 'shaped' (width, depth or vocabulary changed); ``tune``
                    'lora' or 'full' (with ``lr``, ``rank``, ``steps``) for a fine-tune, else a
                    one-model edit of ``fingerprint.edits.derivatives.DERIVATIVES``;
  ``trained_negatives``  {name: spec}: unrelated models trained here (``tune`` 'scratch',
                    ``lr``, ``seed``: a fresh init of its shape trained on the fine-tunes'
                    text);
  ``unrelated``     model sources of unrelated fresh initialisations (or any model) to test;
  ``refused``       edits the toolkit refuses for this model (rotations of a model with
                    post-norms or sandwich norms): asked for, their refusals recorded;
  ``suspect_tokenizer``: whether each suspect gets the file's tokenizer beside it;
  ``cousins``       shallower cousins trained from scratch (:mod:`experiments.real_model.
                    cousins`), or null;
  ``fingerprint``   ``tests`` (one ``bornbiased fingerprint --test`` each) and ``flags``
                    ({flag: value} of that command);
  ``rules``         the module of its rows' rules and section (default the real-model rules,
                    :mod:`experiments.real_model.claims`).

Keys. A suspect built from it with a random key (a rotation, a renaming) derives that key from
its name by ``bornbiased_jax.keys.fold_in_name``; the manifest of built suspects says so per
suspect (``key_rule``: :data:`KEY_RULE`). Suspects built before carry no ``key_rule``: they
were made by the earlier name hash (:data:`LEGACY_KEY_RULE`), and the rows say so.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from bornbiased_jax.errors import UserError

MODELS = Path(__file__).resolve().parent / "models"
STEPS = ("sinks", "init", "sweep", "suspects", "cousins", "lineage")
KINDS = ("honest", "renamed", "shaped")
# how a suspect's random key is derived from its name: today's rule, and the one a manifest
# entry without ``key_rule`` was built by: fold_in(key, len(name) * 1000 + sum of the name's
# character codes), under which anagrams of equal length share a key
KEY_RULE = "fold_in_name"
LEGACY_KEY_RULE = "name-hash"
LEGACY_KEY_TEXT = ("the earlier name hash (len(name) * 1000 + the sum of the name's character "
                   "codes, shared by anagrams); suspects built since take keys.fold_in_name")


@dataclasses.dataclass(frozen=True)
class ModelRecord:
    """One pretrained model's record (the module docstring says each field)."""

    name: str
    study: str
    label: str
    file: str
    steps: tuple
    out: str
    suspects: str
    title: str | None = None
    short: str | None = None
    released_as: str | None = None
    sha256: str | None = None
    fetch: str | None = None
    source: str | None = None
    preset: str | None = None
    sinks: dict = dataclasses.field(default_factory=lambda: {"": []})
    sweep: dict = dataclasses.field(default_factory=lambda: {"num_seqs": 2000,
                                                             "seq_lens": [64]})
    init: dict | None = None
    tune: dict = dataclasses.field(default_factory=lambda: {
        "steps": 30, "batch": 8, "seq_len": 64, "corpus_mb": 2.0, "data_seed": 0,
        "bos_id": None})
    descendants: dict = dataclasses.field(default_factory=dict)
    trained_negatives: dict = dataclasses.field(default_factory=dict)
    unrelated: tuple = ()
    refused: tuple = ()
    suspect_tokenizer: bool = True
    cousins: dict | None = None
    fingerprint: dict = dataclasses.field(default_factory=lambda: {"tests": ["auto"],
                                                                   "flags": {}})
    rules: str = "experiments.real_model.claims"

    def __post_init__(self):
        bad = [s for s in self.steps if s not in STEPS]
        if bad:
            raise UserError(f"model record {self.name}: unknown steps {bad} (steps: "
                            f"{', '.join(STEPS)})")
        kinds = {n: d.get("kind") for n, d in self.descendants.items()}
        if any(k not in KINDS for k in kinds.values()):
            raise UserError(f"model record {self.name}: each descendant's kind is one of "
                            f"{', '.join(KINDS)}: {kinds}")
        if "init" in self.steps and not self.init:
            raise UserError(f"model record {self.name}: the init step needs 'init' settings")
        if "cousins" in self.steps and not self.cousins:
            raise UserError(f"model record {self.name}: the cousins step needs 'cousins'")

    def of_kind(self, kind: str) -> tuple[str, ...]:
        """Its descendants of ``kind`` ('honest', 'renamed', 'shaped'), in the record's order."""
        return tuple(n for n, d in self.descendants.items() if d["kind"] == kind)

    @property
    def honest(self) -> tuple[str, ...]:
        return self.of_kind("honest")

    @property
    def renamed(self) -> tuple[str, ...]:
        return self.of_kind("renamed")

    @property
    def shaped(self) -> tuple[str, ...]:
        return self.of_kind("shaped")

    def experiment(self, step: str) -> str:
        """The record a step writes: ``<name>_sinks``, ``<name>_token_preference`` (the sweep),
        ``<name>_init``, ``<name>_lineage``; None for a step that writes none."""
        return {"sinks": f"{self.name}_sinks", "sweep": f"{self.name}_token_preference",
                "init": f"{self.name}_init", "lineage": f"{self.name}_lineage"}.get(step)

    @property
    def experiments(self) -> tuple[str, ...]:
        """The records its steps write, in the order the section lists them (sinks, the
        sweep's, the initialisations', the lineage)."""
        order = ("sinks", "sweep", "init", "lineage")
        return tuple(self.experiment(s) for s in order if s in self.steps)

    def command(self, path: str | None = None) -> str:
        """The command that measures it (``path``: the record's file when it is not one of
        the shipped records)."""
        return (f"python -m experiments real_model {path or self.name} --model "
                f"{self.file}")

    @classmethod
    def from_dict(cls, d: dict) -> "ModelRecord":
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - fields)
        missing = sorted(f.name for f in dataclasses.fields(cls)
                         if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING and f.name not in d)
        if unknown or missing:
            raise UserError(f"model record {d.get('name', '?')}: "
                            + (f"unknown fields {unknown}" if unknown else "")
                            + ("; " if unknown and missing else "")
                            + (f"missing fields {missing}" if missing else "")
                            + " (experiments/real_model/record.py names each field)")
        d = dict(d)
        for k in ("steps", "unrelated", "refused"):
            if k in d:
                d[k] = tuple(d[k])
        return cls(**d)


def shipped() -> list[str]:
    """The names of the shipped records (experiments/real_model/models/<name>.json)."""
    return sorted(p.stem for p in MODELS.glob("*.json"))


def load(name_or_path: str | Path) -> ModelRecord:
    """A shipped record by its name ('smollm2', 'gemma3') or a record's JSON file."""
    path = Path(name_or_path)
    if not path.suffix and (MODELS / f"{name_or_path}.json").is_file():
        path = MODELS / f"{name_or_path}.json"
    if not path.is_file():
        raise UserError(f"no model record {name_or_path!r}: give a shipped record's name "
                        f"({', '.join(shipped())}) or a record's JSON file")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"model record {path}: not JSON ({e})") from None
    return ModelRecord.from_dict(data)


def key_rules(manifest: dict) -> dict[str, list[str]]:
    """{key rule: the suspects of a built-suspects manifest it made} (refused edits left out;
    an entry without ``key_rule`` was made by :data:`LEGACY_KEY_RULE`)."""
    out: dict[str, list[str]] = {}
    for name, entry in manifest.items():
        if "refused" not in entry:
            out.setdefault(entry.get("key_rule", LEGACY_KEY_RULE), []).append(name)
    return out
