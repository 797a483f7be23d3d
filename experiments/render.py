"""The one renderer of RESULTS.md: every section from committed outputs, by the studies' pure
claim functions: the records (``results/records/<study>/<name>.json``), and the GPU runs'
outputs under ``results/gpu/`` (the first window's logs, :mod:`experiments.campaign.gpu_window`;
the campaign's pieces, :mod:`experiments.campaign.plan`).

Each section sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``. A row (or a
section) whose record is missing says so, with the command that measures it; nothing is carried
over from an earlier RESULTS.md, and numbers are never typed into records.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bornbiased_jax import files
from experiments import EXPERIMENTS, STUDY_OF
# where a record lives and its one writer (artifacts'), also named here for the scripts
from experiments.artifacts import RECORDS, legend, record_path, save_record  # noqa: F401
from experiments.campaign import gpu_window
from experiments.common.paper_records import PAPER_RECORDS
from experiments.initialisation import claims as initialisation
from experiments.initialisation import paper_claims as initialisation_paper
from experiments import lineage_bench
from experiments.lineage import claims as lineage
from experiments.lineage import level_claims
from experiments.seedprint import claims as seedprint
from experiments.real_model import claims as real_model
from experiments.gemma3 import claims as gemma3
from experiments.sinks import claims as sinks
from bornbiased_jax.verdicts import UNTESTABLE, Claim, vocabulary_markdown

GPU_ROOT = gpu_window.ROOT
SECTIONS = ["initialisation", "theory", "seedprint", "lineage", "lineage_hfinit", "lineage_qwen2",
            "lineage_qwen2_hfinit", "lineage_bench", "lineage_level", "sinks", "sinks_regime",
            "sinks_arms", "real_model", "gemma3", "gpu",
            "gpu_campaign"]
COMMANDS = {"initialisation": "python -m experiments.run_all",
            "theory": "bornbiased theory --json results/records/theory/theory.json",
            "seedprint": "python -m experiments.seedprint_results --run",
            "lineage": "python -m experiments.lineage",
            "lineage_hfinit": "python -m experiments.lineage --init hf",
            "lineage_qwen2": "python -m experiments.lineage --arch qwen2",
            "lineage_qwen2_hfinit": "python -m experiments.lineage --arch qwen2 --init hf",
            "lineage_bench": "python -m experiments.lineage_bench",
            "lineage_level": "python -m experiments.lineage_level --measure",
            "sinks": "python -m experiments.figure12_table7",
            "sinks_regime": "python -m experiments.sinks_regime",
            "sinks_arms": "python -m experiments.sinks_arms",
            "real_model": "python -m experiments.real_model",
            "gemma3": "python -m experiments.gemma3"}


PAPER_SCALE = PAPER_RECORDS  # paper-scale record name -> its study folder


def load_records(root: Path = RECORDS) -> dict[str, dict]:
    """Every saved record under ``root``: {experiment name: {"run": ..., "records": ...}}, and
    under "paper" (when there are any) the paper-scale records of ``root``/paper/
    (experiments/paper_scale.py): {name: record}."""
    out = {}
    for name in STUDY_OF:
        f = record_path(root, name)
        if f.exists():
            out[name] = json.loads(f.read_text())
    paper = {}
    for name, study in PAPER_SCALE.items():
        f = Path(root) / "paper" / study / f"{name}.json"
        if f.exists():
            paper[name] = json.loads(f.read_text())
    if paper:
        out["paper"] = paper
    return out


def import_records(folder: Path, root: Path = RECORDS) -> list[str]:
    """Copy every known experiment's saved JSON ``folder/<name>/<name>.json`` (an ``--out``
    folder tree such as results/experiments/) into the records under ``root`` with
    :func:`save_record`; return the names copied."""
    done = []
    for name in STUDY_OF:
        f = Path(folder) / name / f"{name}.json"
        if f.exists():
            save_record(root, name, json.loads(f.read_text()))
            done.append(name)
    return done


def sections(text: str) -> dict[str, str]:
    """The bodies (without marker lines) of the ``<!-- NAME:begin/end -->`` sections."""
    return {m.group(1): m.group(2).strip("\n") for m in re.finditer(
        r"<!-- ([\w-]+):begin -->\n?(.*?)\n?<!-- \1:end -->", text, re.S)}


def not_measured(name: str, claim: str) -> Claim:
    """The row of ``claim`` when experiment ``name``'s record is missing: untestable, naming the
    record and the command that measures it."""
    study = STUDY_OF[name]
    return Claim(claim, "-", f"no record (results/records/{study}/{name}.json); "
                 f"`python -m experiments.{name}` measures it", UNTESTABLE, "not measured yet")


def _rows(specs, records: dict) -> list[str]:
    """Table lines of ``specs`` ((experiment, claim prefix, function)): computed from the
    experiment's record, or a not-measured row named by the claim where it is missing."""
    lines = []
    for name, prefix, fn in specs:
        out = fn(records[name]) if name in records else not_measured(name, prefix)
        for c in out if isinstance(out, list) else [out]:
            lines.append("| " + " | ".join(c.cells()) + " |")
    return lines


def _run_line(records: dict, names: list[str]) -> str:
    runs = [records[n]["run"] for n in names if n in records and records[n].get("run")]
    if not runs:
        return "?"
    devices = sorted({f"{r.get('device', '?')} ({r.get('machine', '?')}), jax {r.get('jax', '?')}"
                      for r in runs})
    return "; ".join(devices)


def initialisation_section(records: dict) -> str | None:
    names = EXPERIMENTS["initialisation"]
    if not any(n in records for n in names):
        return None
    paper = records.get("paper", {})
    init_paper = [n for n in paper if PAPER_RECORDS.get(n) == "initialisation"]
    lines = [f"## {TITLES['initialisation']}", "",
             f"Generated from the records in results/records/initialisation/ (written by "
             f"`{COMMANDS['initialisation']} --scale cpu`; run on {_run_line(records, names)}) "
             "and, for the rows marked [paper scale: ...], results/records/paper/initialisation/ "
             "(`python -m experiments.paper_scale PIECE`, resumable forward passes at the paper's "
             "shapes" + (f"; run on {_run_line(paper, init_paper)}" if init_paper else "")
             + "). "
             f"Unmarked rows are CPU scale: the `cpu` presets ({_cpu_shape(records)}) and fewer, "
             "shorter sequences than the paper; each record holds its experiment's settings "
             "(shape, N, T, seeds) and wall time.", "",
             "| claim | paper | ours | verdict |", "|---|---|---|---|"]
    at_paper = initialisation_paper.paper_scale_claims(paper)
    finding2 = {}  # Finding 2's parts: (CPU row, paper-scale row)
    for name, prefix, fn in initialisation.claim_specs(records):
        cpu = fn(records[name]) if name in records else not_measured(name, prefix)
        lines += ["| " + " | ".join(c.cells()) + " |" for c in
                  (cpu if isinstance(cpu, list) else [cpu])]
        at = at_paper.pop(prefix, None)
        if at is not None:
            lines.append("| " + " | ".join(at.cells()) + " |")
        if prefix == "Table 1 / Finding 1":
            for extra in ("Table 1(a) seed spread", "Table 1(c) magnitudes", "Finding 1.1",
                          "Finding 1.2", "Finding 1.3"):
                if extra == "Finding 1.1" and name in records:  # its CPU row first
                    cpu11 = initialisation_paper.finding11_claim(records[name]["records"])
                    lines.append("| " + " | ".join(cpu11.cells()) + " |")
                lines.append("| " + " | ".join(at_paper.pop(extra).cells()) + " |")
        if prefix in initialisation.FINDING2_PARTS:
            finding2[prefix] = (cpu, at)
            if len(finding2) == len(initialisation.FINDING2_PARTS):
                lines.append("| " + " | ".join(
                    initialisation.finding2_claim(finding2).cells()) + " |")
    side = initialisation_paper.table1_side_by_side(paper)
    if side is not None:
        lines += ["", "Table 1 at the paper's shapes, the paper's rows beside ours (the paper's "
                  "p-values are those of N = 2,000 for GPT-2 and N = 10,000 for LLaMA-2, whose "
                  "rows are counts of 6-9; ours at each N we measured, a line per N; our token "
                  "ids differ from the paper's because another random number generator draws "
                  "the weights: ids are not comparable; frequencies are at the paper's N, and so "
                  "are p-values up to the vocabulary: the paper's GPT-2 rows fit |V| = 50,304, "
                  "nanoGPT's padded one, ours use 50,257; '-': not measured yet):", "", side]
        note = initialisation_paper.table1_frequency_note(paper)
        lines += ["", note] if note else []
    lines += ["", "p-values below ~1e-20 only say 'decisively significant'; their magnitude is "
              "not meaningful (the z-test's normal tail is far outside its accuracy there). "
              "Figure 8's Attn0 curve keeps the blocks' pre-LayerNorm, which re-normalises each "
              "position between layers; Prop. 5's exact values (no normalisation) are in "
              "`bornbiased theory`. Closed-form checks of Props. 2, 4, 5 and Eq. 2 are in the "
              "next section (docs/paper-notes.md, *Notes on the paper*)."]
    return "\n".join(lines)


def _cpu_shape(records: dict) -> str:
    """'6 blocks, d = 512': the shape of Table 1's CPU-scale presets, from its record."""
    from bornbiased_jax.presets import get_preset

    presets = records.get("table1", {}).get("run", {}).get("settings", {}).get("presets", [])
    shapes = sorted({(c.n_layers, c.d_model) for c in map(get_preset, presets)})
    return "; ".join(f"{L} blocks, d = {d}" for L, d in shapes) or "?"


def seedprint_section(records: dict) -> str | None:
    names = EXPERIMENTS["seedprint"]
    if not any(n in records for n in names):
        return None
    lines = [f"## {TITLES['seedprint']}", "",
             "Generated from the records in results/records/seedprint/ (written by "
             f"`{COMMANDS['seedprint']}`: figure13.py, table4a.py, seedprint_calibration.py, "
             f"seedprint_power.py, seedprint_trained.py (after `python -m "
             f"experiments.seed_family --continued`), seedprint_confound.py; run on "
             f"{_run_line(records, names)}). " + seedprint.INTRO, "",
             "| claim | paper | ours | verdict |", "|---|---|---|---|"]
    rows = _rows(seedprint.CLAIMS, records)
    paper = records.get("paper", {})
    at_paper = seedprint.table4a_paper_scale_claims(paper.get("table4a"))
    if "table4a_n10k" in paper:  # the HF-init Gaussian rows again at the paper's n
        at_paper += seedprint.table4a_paper_scale_claims(paper["table4a_n10k"])
    i = next((k + 1 for k, r in enumerate(rows) if r.startswith("| Table 4a:")), len(rows))
    rows[i:i] = ["| " + " | ".join(c.cells()) + " |" for c in at_paper]
    return "\n".join(lines + rows)


def theory_section(records: dict) -> str | None:
    if "theory" not in records:
        return None
    from experiments.theory import claims as theory

    return theory.section(records["theory"], COMMANDS["theory"],
                          _run_line(records, ["theory"]))


def lineage_section(records: dict) -> str | None:
    if not all(n in records for n in lineage.EXPERIMENTS):
        return None
    return lineage.section(records).rstrip("\n")


def lineage_hfinit_section(records: dict) -> str | None:
    if not all(n in records for n in lineage.HFINIT_EXPERIMENTS):
        return None
    return lineage.section(records, init="hf").rstrip("\n")


def lineage_qwen2_hfinit_section(records: dict) -> str | None:
    if not all(n in records for n in lineage.QWEN2_HFINIT_EXPERIMENTS):
        return None
    return lineage.section(records, "qwen2", init="hf").rstrip("\n")


def lineage_bench_section(records: dict) -> str | None:
    if "lineage_bench" not in records:
        return None
    from experiments.lineage_bench import claims as bench

    text = bench.section(records["lineage_bench"], COMMANDS["lineage_bench"],
                         _run_line(records, ["lineage_bench"]))
    shapes = records.get("lineage_bench_shapes")
    if shapes is None:
        return text + ("\n\nShape-changed descendants: not measured yet (`"
                       + COMMANDS["lineage_bench"] + " --shapes`).")
    from experiments.lineage_bench import shapes_claims

    summary = shapes["records"]["summary"]
    return "\n".join([
        text, "", "### Shape-changed descendants", "",
        f"Generated from results/records/lineage_bench/lineage_bench_shapes.json "
        f"(`{COMMANDS['lineage_bench']} --shapes`, run on "
        f"{_run_line(records, ['lineage_bench_shapes'])}). Bases: the first "
        f"{shapes['run']['settings']['bases']} seeds of the 32-seed family, each an HF folder "
        f"with its tokenizer; every edit of fingerprint.derivatives.SHAPES applied to each "
        f"(its tokenizer remapped where the vocabulary changed); `bornbiased fingerprint`'s "
        f"verdicts at its defaults, positives a base's own suspects, negatives every other "
        f"base's.", "", "| claim | paper | ours | verdict |", "|---|---|---|---|",
        *["| " + " | ".join(c.cells()) + " |" for c in shapes_claims.claims(summary)],
        "", shapes_claims.markdown(summary).rstrip("\n")])


def lineage_level_section(records: dict) -> str | None:
    if "lineage_level" not in records:
        return None
    return level_claims.section(records["lineage_level"], COMMANDS["lineage_level"],
                                _run_line(records, ["lineage_level"]))


def lineage_qwen2_section(records: dict) -> str:
    """The Qwen-style repeat from its records; until all of them exist, a line saying that it
    has not been measured (with what is missing and the command), never older numbers."""
    missing = [n for n in lineage.QWEN2_EXPERIMENTS if n not in records]
    if not missing:
        return lineage.section(records, "qwen2").rstrip("\n")
    return "\n".join([f"## {lineage.ARCHS['qwen2'][2]}", "",
                      f"Not measured yet: no records for {', '.join(missing)}. "
                      f"`{COMMANDS['lineage_qwen2']}` trains the Qwen-style family (the "
                      "LLaMA-style family's data, seeds and schedule with the `qwen2-small` "
                      "preset; experiments/common/family.py) and measures it; an "
                      "interrupted run resumes from its checkpoints."])


def sinks_regime_section(records: dict) -> str | None:
    if "sinks_regime" not in records:
        return None
    from experiments.sinks import regime as sinks_regime
    from bornbiased_jax.verdicts import table

    rec = records["sinks_regime"]
    return "\n".join([
        f"## {TITLES['sinks_regime']}", "",
        f"Generated from results/records/sinks/sinks_regime.json (`{COMMANDS['sinks_regime']}`; "
        f"run on {_run_line(records, ['sinks_regime'])}). The section above found no sink in "
        "its baseline; this grid searched for a regime where a baseline grows them "
        f"(docs/sinks.md). Sink rate: eps {sinks_regime.PAPER_EPS} per sample at each length T; "
        "Gu: Gu et al.'s "
        f"setting (eps {sinks_regime.GU_EPS}, T = {sinks_regime.GU_T}, "
        f"{_num_seqs(rec['records']['cells'])} sequences).", "",
        table(sinks_regime.claims(rec)), "",
        "Every cell:", "", sinks_regime.markdown(rec["records"]).rstrip("\n"), "",
        ("The next section trains the five arms in the regime that grew sinks."
         if "sinks_arms" in records else
         "The five arms (baseline, amplification, attenuation, head-wise RMSNorm, output gate) "
         "have not yet been trained in this regime, so the paper's Sec. 6.2 claims are not "
         "tested here yet.")])


def _num_seqs(cells) -> str:
    """The cells' evaluation sequences per length (one number, or each distinct one)."""
    cells = cells.values() if isinstance(cells, dict) else cells
    return " or ".join(map(str, sorted({c["num_seqs"] for c in cells}))) or "?"


def sinks_arms_section(records: dict) -> str | None:
    if "sinks_arms" not in records:
        return None
    from experiments.sinks import arms as sinks_arms
    from experiments.sinks.regime import COPY_T
    from bornbiased_jax.verdicts import table

    rec = records["sinks_arms"]
    arms = rec["records"]["arms"]
    base = arms["baseline"]
    shown = sinks_arms.shown_command(base["command"])
    where = legend(shown)
    return "\n".join([
        f"## {TITLES['sinks_arms']}", "",
        f"Generated from results/records/sinks/sinks_arms.json (`{COMMANDS['sinks_arms']}`; "
        f"run on {_run_line(records, ['sinks_arms'])}). The baseline trains seeds "
        f"{', '.join(str(s['seed']) for s in base['seeds'])} in "
        f"{len(base.get('groups', [1]))} `train --seeds` run(s), all on the same batches in "
        f"the same order: `{shown}` (a later group differs only in `--seeds`"
        + (f"; {where}" if where else "") + "); each arm adds its `--model-set` "
        "(experiments/sinks/arms.py). Sink rates per "
        f"sample on {base['num_seqs']} evaluation draws per length; held-out NLL on "
        f"{base['num_seqs']} draws of {min(COPY_T, base['settings']['seq_len']) + 1} "
        "characters. Every number is a "
        "mean over seeds ± its standard error [95 % t interval on n - 1 degrees of freedom]; "
        "differences from the baseline are paired seed by seed; window-level standard errors "
        "decide nothing here, and alone they confirm nothing in the one-run-per-arm sink "
        "study above either (there an arm that agrees with the paper by them is consistent, "
        "underpowered).", "",
        table(sinks_arms.claims(rec)), "",
        "Every arm (final checkpoint):", "",
        sinks_arms.markdown(rec["records"]).rstrip("\n")])


def sinks_section(records: dict) -> str | None:
    if "figure12_table7" not in records:
        return None
    return sinks.section(records["figure12_table7"], records.get("sinks_init"))


def real_model_section(records: dict) -> str | None:
    return real_model.section(records, real_model.COMMAND)


def gemma3_section(records: dict) -> str | None:
    return gemma3.section(records, gemma3.COMMAND)


TITLES = {"initialisation": "The initialisation study (paper Sec. 3-4)",
          "theory": "The paper's propositions: closed forms beside simulations (Secs. 3-5, "
                    "App. A)",
          "seedprint": "SeedPrint (paper Sec. 5-6.1)",
          "lineage": lineage.ARCHS["llama2"][2], "lineage_hfinit": lineage.HFINIT_TITLE,
          "lineage_qwen2": lineage.ARCHS["qwen2"][2],
          "lineage_qwen2_hfinit": lineage.QWEN2_HFINIT_TITLE,
          "lineage_bench": lineage_bench.TITLE,
          "lineage_level": level_claims.TITLE,
          "sinks": "Attention sinks after training (paper Sec. 6.2, Figure 12, Table 7)",
          "sinks_regime": "Where attention sinks form at CPU scale (Sec. 6.2's precondition)",
          "sinks_arms": "Sec. 6.2's arms where the baseline grows sinks (Bigram-Backcopy, "
                        "several seeds)",
          "real_model": real_model.TITLE, "gemma3": gemma3.TITLE,
          "gpu": "On a GPU: the first window",
          "gpu_campaign": "The GPU campaign (paper scale, piece by piece)"}


def missing_section(name: str, gpu_root: Path = GPU_ROOT) -> str:
    """A section whose records (or GPU outputs) are absent: its title, and how to make them."""
    how = (f"`{COMMANDS[name]}` measures it (its records go to results/records/)"
           if name in COMMANDS else f"its outputs under {gpu_root}/ are absent")
    return f"## {TITLES[name]}\n\nNot measured yet: {how}."


HEADER = ("# Results", "",
          "What this project measured of the paper's claims, study by study: for each claim the "
          "paper's value, ours, and a verdict. Every row is computed from a saved record "
          "(results/records/<study>/<name>.json, committed) or, for the GPU sections, from the "
          "outputs the GPU runs left in results/gpu/, by a pure function in "
          "experiments/ whose rule is stated in its docstring and unit-tested; "
          "`python -m experiments.run_all --no-run` rewrites this file from them.", "",
          "Verdicts, one vocabulary for every table:", "")


def render(records: dict, gpu_root: Path = GPU_ROOT, campaign_root: Path | None = None) -> str:
    """RESULTS.md from ``records`` ({name: saved JSON}) and the GPU outputs under ``gpu_root``;
    a section without its records says so (:func:`missing_section`)."""
    from experiments.campaign import plan as campaign

    campaign_root = campaign.ROOT if campaign_root is None else campaign_root
    make = {"initialisation": initialisation_section, "theory": theory_section,
            "seedprint": seedprint_section, "lineage": lineage_section,
            "lineage_hfinit": lineage_hfinit_section,
            "lineage_qwen2": lineage_qwen2_section,
            "lineage_qwen2_hfinit": lineage_qwen2_hfinit_section,
            "lineage_bench": lineage_bench_section,
            "lineage_level": lineage_level_section,
            "sinks": sinks_section,
            "sinks_regime": sinks_regime_section, "sinks_arms": sinks_arms_section,
            "real_model": real_model_section, "gemma3": gemma3_section,
            "gpu": lambda _: gpu_window.section(gpu_root),
            "gpu_campaign": lambda _: campaign.section(campaign_root)}
    parts = ["\n".join(HEADER) + "\n" + vocabulary_markdown()]
    for name in SECTIONS:
        body = make[name](records) or missing_section(name, gpu_root)
        parts.append(f"<!-- {name}:begin -->\n{body.strip()}\n<!-- {name}:end -->")
    return "\n\n".join(parts) + "\n"


def write(results: Path = Path("RESULTS.md"), root: Path = RECORDS,
          gpu_root: Path = GPU_ROOT) -> str:
    """Rewrite ``results`` from the records under ``root`` and the GPU outputs under
    ``gpu_root``, and the measured blocks of docs/seedprint.md beside ``results`` where that
    page exists (:mod:`experiments.seedprint.docs`, and :data:`DOC_BLOCKS` from other
    studies' records); every text is made before any is written. Return RESULTS.md's new
    text."""
    from experiments.seedprint import docs as seedprint_docs

    records = load_records(root)
    text = render(records, gpu_root)
    pages = {}  # path -> (old text, new text), all made before anything is written
    for rel, blocks in ((seedprint_docs.DOCS, {**seedprint_docs.BLOCKS, **DOC_BLOCKS}),):
        path = Path(results).parent / rel
        if path.exists():
            old = path.read_text()
            pages[path] = (old, seedprint_docs.render(old, records, blocks, rel))
    files.write_text(Path(results), text)
    for path, (old, new) in pages.items():
        if new != old:
            files.write_text(path, new)
    return text


def _bench_summary(record: dict) -> str:
    from experiments.lineage_bench import claims as bench

    return bench.summary_table(record)


def _table4a_paper(records: dict) -> str:
    from experiments.seedprint import docs as seedprint_docs

    return seedprint_docs.table4a_paper_scale_block(records.get("paper", {}))


def _test_rule(records: dict) -> str:
    from bornbiased_jax.fingerprint import registry

    return registry.rule_markdown()


# docs/seedprint.md's generated blocks made from other studies' records (its own are
# experiments.seedprint.docs.BLOCKS): name -> (experiment, block from its record), or (None,
# block from every record) for a block that says itself what is missing; and the rule of
# `--test auto` and the verdict, from the lineage tests' registry
DOC_BLOCKS = {"lineage-bench": ("lineage_bench", _bench_summary),
              "table4a-paper": (None, _table4a_paper), "test-rule": (None, _test_rule)}
