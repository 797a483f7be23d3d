"""``bornbiased fingerprint BASE SUSPECT...`` as a library: what runs, decided from the model
sources before anything is loaded, then the comparisons and the files they leave.

:func:`plan` makes every decision once: where BASE's initialisation is (so whether the tests
that need it can run, and whether it is read beside BASE: :func:`base_initialisation`), which
tests ``--test`` names (``registry.chosen``), the settings, every suspect checked, the memory
plan and the notes. :meth:`Audit.comparisons` loads the models and yields ``compare_many``'s
result per suspect; :meth:`Audit.pair_report` and :meth:`Audit.summary_files` are what the
command prints and writes.

Importing this module imports no JAX, SciPy or Matplotlib (the command line's ``--help``
imports it); its functions import what they run.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.runner import registry

# for a choice of --test that may run a test needing BASE's initialisation, when it is unknown
UNKNOWN = ("the initialisation of {base} is not known (it is, or was continued from, an HF "
           "folder or a GGUF file)")


@dataclasses.dataclass(frozen=True)
class BaseInit:
    """Where BASE's initialisation is, for the tests that need it (``registry.INIT``): its
    model source ``spec`` (None: not known, ``note`` says why; or not looked up, when no test
    that ``--test`` may run needs it)."""

    spec: str | None = None
    note: str | None = None

    @property
    def known(self) -> bool:
        return self.spec is not None


def _may_need_init(choice: str) -> list[str]:
    """The tests ``--test choice`` may run that need BASE's initialisation."""
    candidates = registry.ENTRIES if choice in ("auto", "all") else [registry.entry(choice)]
    return [e.name for e in candidates if registry.INIT in e.needs]


def base_initialisation(base, choice: str) -> BaseInit:
    """Where BASE's initialisation is (``sources.Source.initialisation`` of ``base``, a
    ``sources.Source`` or a spec), looked up when
    ``--test choice`` may run a test that needs it: for a test named alone, a source that
    cannot say (a continued run whose origin is missing) is a UserError; for 'auto' and 'all'
    it is a stated fallback (``note``), as is an initialisation that is not known."""
    from bornbiased_jax.sources import parse_source

    base = parse_source(base)
    if not _may_need_init(choice):
        return BaseInit()
    try:
        spec = base.initialisation()
    except UserError as e:
        if choice not in ("auto", "all"):
            raise UserError(f"the {choice} test needs BASE's initialisation: {e}") from None
        return BaseInit(None, str(e))
    return BaseInit(spec, None if spec is not None else UNKNOWN.format(base=base.spec))


def expand_suspects(specs: Sequence[str]) -> list[str]:
    """The suspects' model sources: each spec as given, except a folder that is neither a model
    (config.json) nor a train run (run.json) but holds model folders, which stands for each of
    them (sorted by name). Such a folder without any model is a UserError naming it."""
    from bornbiased_jax.training import run_folder

    out = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir() and not (path / "config.json").is_file() and not run_folder.is_run(path):
            models = sorted(str(d) for d in path.iterdir()
                            if d.is_dir() and ((d / "config.json").is_file()
                                               or run_folder.is_run(d)))
            if not models:
                raise UserError(f"suspect folder {spec!r} holds no model: neither config.json "
                                f"nor run.json, and no sub-folder with one")
            out += models
        else:
            out.append(spec)
    return out


def planned_device(gib: float | None, gb: float | None = None) -> tuple[str, int] | None:
    """The (description, bytes) the memory plan assumes instead of the device's own:
    ``--device-memory-gib`` (GiB, 2**30 bytes) or the former ``--device-memory-gb`` (GB, 10**9
    bytes, still read); None for the device's own. (The device's size, not a budget: the
    commands' ``--memory-budget-gib`` is the share of it that a run may plan for.)"""
    if gib is not None and gb is not None:
        raise UserError("give --device-memory-gib alone (--device-memory-gb is its former "
                        "spelling, in GB)")
    if gib is not None:
        return f"a device of {gib:g} GiB (--device-memory-gib)", int(gib * 2**30)
    if gb is not None:
        return f"a device of {gb:g} GB (--device-memory-gb)", int(gb * 1e9)
    return None


def default_input(tests: Sequence[str]) -> str:
    """``--input``'s default for ``tests``: token ids where a test that needs them runs (the
    aligned, permutation and matched tests), else Gaussian embeddings (Algorithm 1's)."""
    return ("tokens" if any(registry.TOKENS in e.needs for e in registry.selected(tests))
            else "gaussian")


def statistic() -> dict:
    """What a pair's verdicts computed besides its settings: the matched statistic's name,
    the layer screen's constants, the law that sets the matched slack of two trained models
    and where the any-pair verdict stops its permutation leg (a pair record keeps them; a
    resumed run reuses only its own)."""
    from bornbiased_jax.defaults import (MATCHED_SLACK_LAW, MATCHED_STATISTIC,
                                         MATCHED_TOKENS_ASSUMED)
    from bornbiased_jax.fingerprint.methods.any_pair import RULES
    from bornbiased_jax.fingerprint.methods.unit_matching import screen_settings

    return {"matched": MATCHED_STATISTIC, "screen": screen_settings(),
            "trained_slack": {**MATCHED_SLACK_LAW, "assumed_tokens": MATCHED_TOKENS_ASSUMED},
            "any_pair_stops": dict(RULES)}


def _pair_folder(k: int, label: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_")[:60] or "model"
    return f"{k:02d}-{safe}"


@dataclasses.dataclass(frozen=True)
class Audit:
    """What :func:`plan` decided: BASE and the suspects' sources, the tests and settings,
    BASE's initialisation (``reads_init``: read apart, in float32, beside BASE), the configs,
    the memory plan (``memory_plan.Plan``), the notes, the dtype, and when planning ended
    (``t0``, the start of the wall time the records give)."""

    base: str
    suspects: list[str]
    sources: Any  # sources.Source of BASE, of each suspect, of BASE's initialisation (or None)
    tests: tuple[str, ...]
    settings: Any  # compare.Settings
    init: BaseInit
    reads_init: bool
    memory: Any
    notes: list[str]
    dtype: str
    t0: float

    def finished(self, out_dir: Path) -> tuple[dict[int, dict], str | None]:
        """({k: summary row}, BASE's label) of the suspects whose pair record in ``out_dir``
        (from an earlier run of the same command, stopped before the end) was made from the
        same BASE, suspect source, settings, dtype and statistic (:func:`statistic`: a
        record of another version's matched statistic or screen is computed again): a pair's
        results depend on that pair alone (its inputs, permutations and null seeds are the
        pair's own), so they are not computed again."""
        import json

        if len(self.suspects) < 2:
            return {}, None
        done, label = {}, None
        want = dataclasses.asdict(self.settings)
        for k, spec in enumerate(self.suspects):
            found = sorted((Path(out_dir) / "pairs").glob(f"{k:02d}-*/fingerprint.json"))
            if len(found) != 1:
                continue
            try:
                saved = json.loads(found[0].read_text())
            except (OSError, ValueError):
                continue
            run, row = saved.get("run", {}), saved.get("row")
            if (row and row.get("spec") == spec and run.get("base_spec") == self.base
                    and run.get("dtype") == self.dtype
                    and json.loads(json.dumps(want)) == run.get("settings")
                    and run.get("statistic") == statistic()):
                done[k], label = row, run.get("base")
        return done, label

    def comparisons(self, *, shared_embedding: bool = False, progress: bool = True,
                    only: Sequence[int] | None = None) -> Iterator[tuple[int, dict]]:
        """Loads BASE (and, where read apart, its initialisation, whose features are taken
        and which is released before the first suspect is loaded), then yields (k,
        ``compare_many``'s result) for each suspect k (those in ``only``, default all), loaded
        in turn, the result with 'base': BASE's label."""
        import jax.numpy as jnp

        from bornbiased_jax import sources
        from bornbiased_jax.fingerprint.runner.compare import compare_many

        dtype = jnp.bfloat16 if self.dtype == "bfloat16" else jnp.float32
        base_src, suspect_srcs, init_src = self.sources
        base = sources.load_source(base_src, shared_embedding=shared_embedding, dtype=dtype)
        ks = list(range(len(self.suspects))) if only is None else list(only)
        loaders = [lambda src=suspect_srcs[k]: sources.load_source(
            src, shared_embedding=shared_embedding, dtype=dtype) for k in ks]
        init = None
        if self.reads_init:
            init = lambda: sources.load_source(init_src, shared_embedding=shared_embedding,
                                               dtype=jnp.float32)
        for k, out in zip(ks, compare_many(base, loaders, self.settings, init=init,
                                           progress=progress)):
            yield k, {**out, "base": base.label}

    def pair_report(self, k: int, out: dict, out_dir: Path, command_line: str) -> dict:
        """The record of the k-th suspect's comparison ``out`` (from :meth:`comparisons`):
        'folder' (``out_dir``, or its pairs/<k>-<name>/ with several suspects), 'files'
        (fingerprint.json, .md and .png), 'text' (what the command prints) and 'row' (its
        line of the summary)."""
        from bornbiased_jax import files
        from bornbiased_jax.fingerprint.runner import tables

        s, results, label, base = self.settings, out["results"], out["suspect"], out["base"]
        several = len(self.suspects) > 1
        wall = time.time() - self.t0
        notes = [*self.notes, *out.get("notes", [])]
        run_info = files.run_record(command_line, wall, base=base, base_spec=self.base,
                                    suspect=label,
                                    settings=dataclasses.asdict(s), statistic=statistic(),
                                    d_out=out["d_out"],
                                    dtype=self.dtype, plan=dataclasses.asdict(self.memory),
                                    notes=notes)
        title = (f"{label} vs base {base}: n = {s.n}, T = {s.seq_len}, {s.input} inputs, "
                 f"{s.output} outputs")
        verdict = tables.verdict_line(results, registry.verdict_order(), base, label)
        folder = out_dir / "pairs" / _pair_folder(k, label) if several else out_dir
        units = registry.localising(results)
        local = ("\n" + f"Where SUSPECT descends from ({units.test} test):\n\n"
                 + tables.localised_markdown(units)) if units is not None else ""
        row = {"suspect": label, "spec": self.suspects[k], "verdict": verdict,
               "vocab": out.get("vocab"),
               "verdict_test": tables.deciding_test(results, registry.verdict_order()),
               "folder": str(folder.relative_to(out_dir)) if several else ".",
               "p": {t: r.p for t, r in results.items()},
               "n": {t: r.n for t, r in results.items()},  # the inputs each test read
               "related": {t: bool(r.same_lineage) for t, r in results.items()}}
        outputs = {"fingerprint.json": {"run": run_info, "verdict": verdict, "row": row,
                                        "results": {t: r.to_json() for t, r in results.items()}},
                   "fingerprint.md": f"# SeedPrint: {title}\n\n{tables.table_markdown(results)}\n"
                                     f"{verdict}\n{local}\n"
                                     + "".join(f"Note: {x}\n\n" for x in notes)
                                     + f"{wall:.0f} s on {run_info['devices'][0]}.\n",
                   "fingerprint.png": tables.figure(results, title)}
        text = "\n".join([title, tables.table_text(results)]
                         + [f"note ({name}): {r.note}" for name, r in results.items() if r.note]
                         + [f"note: {x}" for x in out.get("notes", [])]
                         + ([local.strip()] if local else []) + [verdict])
        return {"folder": folder, "files": outputs, "text": text, "row": row}

    def summary_files(self, base: str, rows: list[dict]) -> dict:
        """summary.json and summary.md of several suspects' :meth:`pair_report` rows."""
        from bornbiased_jax.fingerprint.runner import tables

        wall = time.time() - self.t0
        return {"summary.json": {"base": base, "settings": dataclasses.asdict(self.settings),
                                 "recommended": registry.verdict_order(), "wall_seconds": round(wall, 1),
                                 "suspects": rows},
                "summary.md": tables.summary_markdown(rows, base, registry.verdict_order())}


def plan(base: str, suspects: Sequence[str], choice: str = "auto", *, input: str | None = None,
         dtype: str = "float32", device_memory_gib: float | None = None,
         device_memory_gb: float | None = None, **settings) -> Audit:
    """Everything ``bornbiased fingerprint`` decides before it loads a model, each once, and
    every refusal it can make from the sources alone (a UserError): BASE's initialisation
    (:func:`base_initialisation`), the tests ``--test choice`` runs on this BASE, the
    ``compare.Settings`` (``input`` None: :func:`default_input`; ``settings``: the other
    fields), the suspects (:func:`expand_suspects`, each checked against BASE), the memory
    plan (``memory_plan.make_plan`` for the device of :func:`planned_device`) and the notes
    saying why a recommended test cannot run. The steps: :func:`_settings`,
    :func:`_init_source`, :func:`_checked_suspects`, :func:`_memory`, :func:`_notes`."""
    from bornbiased_jax.sources import check_source, parse_source, source_config

    base_src = parse_source(base)  # each source parsed once, here
    base = base_src.spec
    init = base_initialisation(base_src, choice)
    base_cfg = source_config(base_src)
    tests = registry.chosen(choice, init.known, base_cfg.gated_mlp)
    suspects = expand_suspects(suspects)
    suspect_srcs = [_of_suspect(parse_source, spec) for spec in suspects]
    s = _settings(tests, base_cfg, suspect_srcs, input, settings)
    t0 = time.time()
    device = planned_device(device_memory_gib, device_memory_gb)
    base_cfg = check_source(base_src)
    init_tests = [e.name for e in registry.selected(tests) if registry.INIT in e.needs]
    init_src = _init_source(init, init_tests, base)
    configs = _checked_suspects(base_src, base_cfg, suspects, suspect_srcs, s)
    # BASE's initialisation is read apart (in float32, like the null initialisations, so that
    # it is exchangeable with them) unless BASE is that very initialisation in float32.
    reads_init = bool(init_tests) and (init.spec != base or dtype != "float32")
    if reads_init and init_src is None:
        init_src = base_src
    memory = _memory(base_cfg, configs, s, dtype, device, reads_init,
                     matched_init_apart="matched_init" in tests and init.spec != base)
    return Audit(base, suspects, (base_src, suspect_srcs, init_src), tests, s, init, reads_init,
                 memory, _notes(choice, init, tests), dtype, t0)


def _of_suspect(read, spec, src=None):
    """``read(src or spec)``, its UserError prefixed with the suspect it is about."""
    try:
        return read(spec if src is None else src)
    except UserError as e:
        raise UserError(f"suspect {spec!r}: {e}") from None


def _settings(tests, base_cfg, suspect_srcs, input, settings: dict):
    """The comparison's ``compare.Settings``: n by the models' forward cost where not given."""
    from bornbiased_jax.fingerprint.runner.compare import Settings, default_n
    from bornbiased_jax.sources import source_config

    if settings.get("n", 0) is None:  # the default: by the models' forward cost
        cfgs = [_of_suspect(source_config, src.spec, src) for src in suspect_srcs]
        settings = {**settings, "n": default_n(base_cfg, cfgs,
                                               settings.get("seq_len") or Settings().seq_len)}
    return Settings(tests=tests, input=input or default_input(tests), **settings)


def _init_source(init: BaseInit, init_tests: list[str], base: str):
    """The parsed and checked source of BASE's initialisation where a test needs it and it is
    not BASE itself (else None); a UserError where it is needed and unknown or unreadable."""
    from bornbiased_jax.sources import check_source, parse_source

    if init_tests and not init.known:
        raise UserError(f"the {init_tests[0]} test compares SUSPECT with BASE's initialisation: "
                        f"{init.note}; give BASE as preset:NAME@SEED or a train run, or use "
                        f"--test permutation")
    if not init_tests or init.spec == base:
        return None
    try:
        src = parse_source(init.spec)
        check_source(src)
    except UserError as e:
        raise UserError(f"BASE's initialisation {init.spec!r} (the {init_tests[0]} test's): "
                        f"{e}") from None
    return src


def _checked_suspects(base_src, base_cfg, suspects, suspect_srcs, s) -> list:
    """Each suspect's config, checked against BASE (and, for token inputs, its tokenizer's
    strings against BASE's) before anything is loaded, so a bad pair stops before work."""
    from bornbiased_jax.fingerprint.runner import vocab
    from bornbiased_jax.fingerprint.runner.compare import check_pair
    from bornbiased_jax.sources import check_source

    base_strings = (vocab.source_strings(base_src, base_cfg.vocab_size) if s.input == "tokens"
                    else None)
    configs = []
    for spec, src in zip(suspects, suspect_srcs):
        cfg = _of_suspect(check_source, spec, src)
        check_pair(base_cfg, cfg, s, f"suspect {spec!r}")
        if s.input == "tokens":
            vocab.align_strings(base_strings, vocab.source_strings(src, cfg.vocab_size),
                                base_cfg.vocab_size, cfg.vocab_size, f"suspect {spec!r}")
        configs.append(cfg)
    return configs


def _memory(base_cfg, configs, s, dtype, device, reads_init: bool, matched_init_apart: bool):
    """The memory plan of the comparison (``memory_plan.make_plan``) on ``device``."""
    from bornbiased_jax.fingerprint.methods.matched import DROP
    from bornbiased_jax.fingerprint.runner import memory_plan
    from bornbiased_jax.fingerprint.runner.compare import MATCHED_MAX_T

    needs = registry.needs(s.tests)
    matched_models = 2 + matched_init_apart if registry.GATED in needs else 0
    return memory_plan.make_plan(
        base_cfg, max(configs, key=memory_plan.param_count), s.n, s.seq_len, dtype, device,
        reads_init=reads_init, null_models=s.null_models if registry.NULLS in needs else 0,
        matched_models=matched_models,
        matched_rows=min(s.n, s.matched_seqs) * max(0, min(s.seq_len, MATCHED_MAX_T) - DROP))


def _notes(choice: str, init: BaseInit, tests) -> list[str]:
    """Why a recommended test cannot run on this BASE, and which verdict follows."""
    if not (choice in ("auto", "all") and not init.known and _may_need_init(choice)):
        return []
    return [f"{init.note}: the {' and '.join(_may_need_init(choice))} test cannot run, and the "
            f"verdict is " + (
                "the any-pair verdict: the permutation test (exact; a renamed or rotated copy "
                "evades it) and the matched test (robust to renamings and rotations; exact "
                "when one model is an initialisation, else resting on an assumption, "
                "docs/seedprint.md), each at alpha/2"
                if "matched" in tests else
                "the permutation test's, which a copy with a renamed residual basis evades "
                "(the matched test needs a gated MLP)")]
