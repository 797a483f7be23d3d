"""What the real-model studies share (SmolLM2-135M-Instruct and Gemma 3 270M, each a model record
of :mod:`experiments.real_model`): the steps' plumbing, each step a ``bornbiased``
command run as a user types it (:func:`run_cli`, :func:`shown`) on a model file (a GGUF file or an
HF folder: :func:`load`, :func:`config`, :func:`tokenizer`), its record naming the model by
file name and sha256, never by a path (:func:`sha256`, :func:`scrubbed`), and the rules their
RESULTS.md rows share.

Rules:
  * sinks: a layer-and-head sink rate (alpha^1 > eps, per sequence) whose 95 % lower bound
    (mean - :data:`Z95` SE over sequences) exceeds :data:`SIGNIFICANT_RATE` at every length
    measured reproduces Figure 12's "consistently significant" baseline;
  * Table 6 on a real model (:func:`lineage_verdict`): every honest edit (fine-tunes, weight
    quantization, pruning) found at alpha, no negative flagged, and the trained negatives
    enough to bound the false-positive rate below :data:`FPR_BOUND` (95 % Clopper-Pearson upper
    bound over them; 0 of :func:`negatives_needed` flagged) with at least one on the
    descendants' data: reproduced; every honest edit found and no negative flagged but the
    negatives too few or too weak to bound the rate: consistent, underpowered; some found, or
    a negative flagged: partly; none: differs. The rule weighs the negatives' number, kind
    (trained or an initialisation) and data, not their depth or how long they were trained,
    so each row states every kind's depth and training tokens where the record holds them,
    and a reproduced row says that its bound is for unrelated models like its negatives.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

from bornbiased_jax.fingerprint.methods.result import ALPHA
from bornbiased_jax.stats import clopper_pearson
from bornbiased_jax.verdicts import DIFFERS, PARTLY, REPRODUCED, UNDERPOWERED

SIGNIFICANT_RATE = 0.10  # a tenth of the model's L x H heads
Z95 = 1.959964


# The false-positive rate the negatives must be able to exclude: the paper's released code
# calls 0.32-0.36 of unrelated same-data trained pairs related at alpha = 0.01 (RESULTS.md, the
# SeedPrint section's trained-pair rows), so negatives that cannot bound the rate below 0.3
# cannot show a test free of that failure.
FPR_BOUND = 0.30
# the order of the tests' rows
ORDER = ("any_pair", "permutation", "matched", "paper", "official")
# The released models' pretraining tokens, each from its model card, which rows state beside the
# tokens of the small models a rule was measured on (e.g. the level table's default slack:
# common.level_range.extrapolation): SmolLM2-135M "was trained on 2 trillion tokens"
# (huggingface.co/HuggingFaceTB/SmolLM2-135M, Model Summary); Gemma 3 270M on 6 trillion tokens
# (huggingface.co/google/gemma-3-270m, Training Dataset).
PRETRAINING_TOKENS = {"SmolLM2-135M": 2e12, "Gemma 3 270M": 6e12}
# Their MLP widths (intermediate sizes, their config.json files), which the matched leg's slack
# between two trained models depends on (fingerprint.methods.trained_slack.law_units)
MLP_WIDTH = {"SmolLM2-135M": 1536, "Gemma 3 270M": 2048}


def index_ranges(xs: list[int]) -> str:
    """'0-1, 5' for [0, 1, 5]."""
    out, start = [], None
    for i, x in enumerate(xs):
        if start is None:
            start = x
        if i + 1 == len(xs) or xs[i + 1] != x + 1:
            out.append(f"{start}" if start == x else f"{start}-{x}")
            start = None
    return ", ".join(out)


def negatives_needed(bound: float = FPR_BOUND) -> int:
    """The fewest negatives, none flagged, whose 95 % Clopper-Pearson upper bound of the
    false-positive rate is at most ``bound`` (11 for 0.30)."""
    n = 1
    while clopper_pearson(0, n)[1] > bound:
        n += 1
    return n


def _negatives_alike(neg: list[dict]) -> list[list[dict]]:
    """``neg`` grouped by what the verdict's text says of each (depth, training steps, tokens,
    data), in the order of their first member."""
    groups: dict = {}
    for n in neg:
        key = (n.get("layers"), n["trained_steps"], n.get("tokens"), n["same_data"])
        groups.setdefault(key, []).append(n)
    return list(groups.values())


def _trained_text(group: list[dict]) -> str:
    """'scratch: 30 layers, 30 steps, 15,360 tokens, the descendants' data' of one group of
    alike trained negatives (several named by the first and the last, and how many)."""
    n = group[0]
    names = (n["name"] if len(group) == 1
             else f"{n['name']} .. {group[-1]['name']} ({len(group)})")
    each = " each" if len(group) > 1 else ""
    return (f"{names}: " + (f"{n['layers']} layers, " if n.get("layers") else "")
            + f"{n['trained_steps']} steps, "
            + (f"{n['tokens']:,} tokens{each}" if n.get("tokens") else "tokens not recorded")
            + ", " + ("the descendants' data" if n["same_data"] else "other data"))


def _scope_text(neg: list[dict], trained: list[dict], base: str) -> str:
    """What a bound from the negatives ``neg`` (``trained``: the trained ones) covers: unrelated
    models like them, at their depths and training tokens (the rule weighs neither)."""
    layers = sorted({n["layers"] for n in neg if n.get("layers")})
    tokens = [n.get("tokens") for n in trained]
    like = ", ".join(x for x in (
        " or ".join(map(str, layers)) + " layers" if layers else "",
        (f"trained at most {max(t for t in tokens if t):,} tokens"
         + (" where recorded" if not all(tokens) else "")) if any(tokens) else "") if x)
    return ("the rule weighs the negatives' number, kind and data, not their depth or "
            "training length, so the bound is for unrelated models like these negatives"
            + (f" ({like})" if like else "")
            + ", not for unrelated models trained longer"
            + (f", as the base was ({base})" if base else ""))


def lineage_verdict(found: int, honest: int, neg: list[dict], flagged: list[str],
                    base: str = "") -> tuple[str, str]:
    """(verdict, why) of one test's Table 6 row from the honest edits found of ``honest``,
    the negatives ``neg`` (each {"name", "kind", "trained_steps", "same_data"}, and where the
    record holds them "layers" (depth) and "tokens" (training tokens); those this test
    measured) and the names among them it flagged (module docstring). The why states every
    kind's depth and training tokens and the 95 % upper bounds of the false-positive rate;
    a reproduced one says the bound is for unrelated models like the negatives, not for ones
    trained longer (``base``: how the base was trained, said there)."""
    trained = [n for n in neg if n["kind"] == "trained" and n["trained_steps"] > 0]
    same = [n for n in trained if n["same_data"]]
    untrained = [n for n in neg if n not in trained]
    k_t = sum(n["name"] in flagged for n in trained)
    hi_all = clopper_pearson(len(flagged), len(neg))[1] if neg else 1.0
    hi_t = clopper_pearson(k_t, len(trained))[1] if trained else 1.0
    depths = sorted({n["layers"] for n in untrained if n.get("layers")})
    kinds = (f"{len(neg)} negatives: {len(trained)} trained from scratch ("
             + ("; ".join(map(_trained_text, _negatives_alike(trained))) or "none")
             + f"), {len(untrained)} untrained initialisations"
             + (f" ({' or '.join(map(str, depths))} layers, 0 tokens)" if depths else "")
             + f"; flagged {len(flagged)} of {len(neg)}, the false-positive rate below "
             f"{hi_all:.2f} over all and below {hi_t:.2f} over the trained ones (95 % "
             f"Clopper-Pearson)")
    if not found:
        return DIFFERS, f"no honest edit found; {kinds}"
    if found < honest or flagged:
        return PARTLY, kinds
    short = []
    if hi_t > FPR_BOUND:
        short.append(f"that is not below {FPR_BOUND:g} ({negatives_needed()} trained "
                     f"negatives, none flagged, would bound it there)")
    if not same:
        short.append("no trained negative shares the descendants' data")
    if short:
        return UNDERPOWERED, (f"every honest edit found and no negative flagged, but {kinds}: "
                              + "; ".join(short))
    return REPRODUCED, (f"every honest edit found, no negative flagged, and {len(trained)} "
                        f"trained negatives ({len(same)} on the descendants' data) bound the "
                        f"false-positive rate below {FPR_BOUND:g}: {kinds}; "
                        + _scope_text(neg, trained, base))


def found_by(pairs: list[dict], names, test: str) -> list[str]:
    by = {p["suspect"]: p for p in pairs}
    return [n for n in names if n in by and by[n]["p"].get(test, 1.0) < ALPHA]


def tested_by(pairs: list[dict], names, test: str) -> list[str]:
    by = {p["suspect"]: p for p in pairs}
    return [n for n in names if n in by and test in by[n]["p"]]


def runs_by_test(r: dict) -> list[tuple[str, dict]]:
    """(test, the fingerprint run that measured it) for every test with p-values, in
    :data:`ORDER` (one run may measure several tests: auto gives permutation, matched and their
    any-pair verdict)."""
    found = {}
    for run in r["tests"].values():
        for t in dict.fromkeys(k for p in run["pairs"] for k in p["p"]):
            found.setdefault(t, run)
    return sorted(found.items(), key=lambda kv: ORDER.index(kv[0]) if kv[0] in ORDER else 99)


# --- the steps' plumbing ------------------------------------------------------------------------
def inputs_text(run: dict, test: str) -> str:
    """'n = N' of one fingerprint run's test: the inputs its p-values were read from. Where a
    leg stopped at the matched leg's sequences (that leg decided the any-pair verdict alone,
    or found nothing, p_matched = 1: the pair's ``n`` of the test below the command's), it says
    for how many pairs and why; where every pair stopped, the n read leads, not the command's.
    The matched test reads the first ``matched_seqs`` sequences only, whatever n."""
    n = run["settings"]["n"]
    seqs = run["settings"].get("matched_seqs")
    if test == "matched" and seqs is not None and seqs < n:
        return f"n = {seqs} (the matched leg reads the first {seqs} of the command's {n})"
    short = [p for p in run["pairs"] if p.get("n", {}).get(test, n) < n]
    if not short:
        return f"n = {n}"
    nothing = sum(p["p"].get("matched", 0.0) >= 1.0 for p in short)
    why = " and ".join(x for x in (
        f"{len(short) - nothing} whose matched leg decided the any-pair verdict alone"
        if len(short) > nothing else "",
        f"{nothing} whose matched leg found nothing (p = 1)" if nothing else "") if x)
    sizes = "/".join(map(str, sorted({p["n"][test] for p in short})))
    if len(short) == len(run["pairs"]):
        return (f"n = {sizes} for every one of the {len(short)} pairs, not the command's "
                f"{n}: the permutation leg stopped at the matched leg's sequences (for the "
                f"{why})")
    return (f"n = {n} ({sizes} for the {why}, of {len(run['pairs'])} pairs, where the "
            f"permutation leg stopped)")


def pairs_table(rec: dict, kind, describe) -> str:
    """Every suspect's p-value under every test of a lineage record, one row per suspect
    (``kind(name)``, ``describe(name)``: its kind and what it is). A p of a leg that stopped at
    the first inputs because another leg decided or found nothing (the pair's ``n`` of that
    test below the command's) is marked, with a footnote."""
    runs = runs_by_test(rec["records"])
    names = list(dict.fromkeys(p["suspect"] for _, run in runs for p in run["pairs"]))
    lines = ["| suspect | kind | " + " | ".join(t for t, _ in runs) + " |",
             "|---|---|" + "---:|" * len(runs)]
    stopped = set()
    for n in names:
        cells = []
        for t, run in runs:
            p = next((x for x in run["pairs"] if x["suspect"] == n), None)
            v = None if p is None else p["p"].get(t)
            read = (p or {}).get("n", {}).get(t)
            short = read is not None and read < run.get("settings", {}).get("n", read)
            if short:
                stopped.add(read)
            cells.append("-" if v is None else f"{v:.2g}" + (" *" if v < ALPHA else "")
                         + (f" (n = {read})" if short else ""))
        desc = describe(n)
        lines.append(f"| {n} | {kind(n)}" + (f": {desc}" if desc else "") + " | "
                     + " | ".join(cells) + " |")
    if stopped:
        lines += ["", "(n = " + ", ".join(map(str, sorted(stopped))) + "): the test read only "
                  "the matched leg's sequences: the matched leg decided the any-pair verdict "
                  "alone, or found nothing (p = 1), so the permutation leg stopped there (its "
                  "p shown, not combined into the verdict's; `--no-sequential` reads all n)."]
    return "\n".join(lines)


def inputs_read(folder: Path, row: dict) -> dict:
    """{test: the inputs it read} of one pair of a ``bornbiased fingerprint`` summary (its row;
    ``folder``: the command's output folder), from the pair's fingerprint.json."""
    import json

    if "n" in row:
        return row["n"]
    pair = json.loads((folder / row["folder"] / "fingerprint.json").read_text())
    return {t: r["n"] for t, r in pair["results"].items()}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_cli(args: list[str], log: Path) -> float:
    """Run ``bornbiased ARGS`` (this interpreter's CLI) with its output in ``log``; its wall
    seconds, or a RuntimeError quoting the log's tail if it failed."""
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", *args], stdout=f,
                            stderr=subprocess.STDOUT).returncode
    if rc:
        raise RuntimeError(f"bornbiased {' '.join(args)} failed ({rc}): "
                           f"{log.read_text()[-2000:]}")
    return time.time() - t0


def load(model: Path):
    """(config, parameters) of a model file: a GGUF file or an HF folder."""
    if model.suffix == ".gguf":
        from bornbiased_jax.hf.gguf import load_gguf

        return load_gguf(model)
    from bornbiased_jax.hf import load_hf

    return load_hf(model)


def config(model: Path):
    """The model's config, read without decoding a weight."""
    if model.suffix == ".gguf":
        from bornbiased_jax.hf.gguf import check_gguf

        return check_gguf(model)
    from bornbiased_jax.hf.configs import config_from_hf

    return config_from_hf(model)


def tokenizer(model: Path):
    """The model's own tokenizer (a GGUF file's, an HF folder's tokenizer.json), or None."""
    if model.suffix == ".gguf":
        from bornbiased_jax.hf.gguf import load_gguf_tokenizer

        return load_gguf_tokenizer(model)
    if (model / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(model / "tokenizer.json"))
    return None


def scrubbed(obj, model: Path):
    """``obj`` (JSON data) with every mention of the model's path replaced by its file name, so
    that a record names no folder of the machine that wrote it."""
    if isinstance(obj, str):
        return obj.replace(str(model), model.name)
    if isinstance(obj, dict):
        return {k: scrubbed(v, model) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrubbed(v, model) for v in obj]
    return obj


def shown(args: list[str], model: Path) -> str:
    """The command as a user types it, the model named by its file name."""
    return "bornbiased " + " ".join(model.name if a == str(model) else a for a in args)
