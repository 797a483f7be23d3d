"""The lineage study's measurements (paper Sec. 5-6.1: Figure 11, Tables 4b, 4c and 5).

A :class:`Study` reads the trained family (``experiments/common/family.py``) and computes,
for any pair of its models, every SeedPrint test and the four baselines:

  * SeedPrint features: the last-token final hidden state (after the final norm) on n random
    inputs of length T, for each input kind: 'tokens' (uniform random ids through each model's
    own embedding: Sec. 5's "setup of Table 1") and 'gaussian' (i.i.d. N(0, 0.02^2) input
    embeddings, the initialisation's embedding distribution: Algorithm 1). Every model sees the
    same inputs, so one set of K fresh initialisations (seeds from 1,000,000 on) serves as the
    calibrated test's null for every pair. Features are cached on disk (``--cache``).
  * Tests (the library's): ``paper_test`` (Algorithm 1: t and U, mean of 10 null draws and
    pooled), ``official_test`` (the released code) and ``calibrated_test`` ('spearman_all').
  * Baselines (``fingerprint.methods.baselines``): Intrinsic, REEF (CKA on ``reef_windows`` windows of
    held-out base-corpus text, the last ``val_fraction`` of its documents, which no run trains
    on), PCS and ICS (the ``ics_tokens`` least frequent tokens of the base corpus's training
    documents), plus PCS with the norm gains left out and PCS between the suspect and its own
    initialisation: how far training moved the weights (the paper's is 0.58).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np

from bornbiased_jax import data, plots
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import baselines as B
from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.methods.algorithm1 import paper_test
from bornbiased_jax.fingerprint.runner.compare import null_seeds
from bornbiased_jax.fingerprint.runner.features import init_features, model_features
from bornbiased_jax.fingerprint.methods.official import official_test
from bornbiased_jax.files import progress
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import load_source
from bornbiased_jax.stats import fmt_p
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from experiments.common import family
from experiments.lineage.claims import BASELINES

BASES = [f"base-s{s}" for s in family.LINEAGE_SEEDS]
CONTINUED = ["cont-prose-s1000", "cont-code-s1000", "cont-prose-s123", "cont-code-s123"]
RUNS = BASES + CONTINUED  # training order: base-s42 first (its tokenizer serves every run)
INPUTS = ("tokens", "gaussian")

CPU = dict(runs_dir="runs/family", n=1000, seq_len=32, inputs=list(INPUTS), null_models=99,
           trials=10, fig11_m=50, reef_windows=200, reef_seq_len=64, ics_tokens=512,
           probe_seed=0)
# The paper's n, T and m (Sec. 5; the released code's 10,000 x 1024 toy-model inputs), for a
# family trained at the paper's scale (its context must hold T = 1024).
PAPER = dict(runs_dir="runs/family-paper", n=10_000, seq_len=1024, inputs=list(INPUTS),
             null_models=200, trials=10, fig11_m=50, reef_windows=200, reef_seq_len=128,
             ics_tokens=4096, probe_seed=0)
# For the end-to-end test on family.smoke_family (tiny models; one input kind, as each kind
# compiles its own null sweep).
SMOKE = dict(runs_dir="", n=24, seq_len=8, inputs=["tokens"], null_models=9, trials=2,
             fig11_m=8, reef_windows=12, reef_seq_len=8, ics_tokens=24, probe_seed=0)




def scale_family(scale: str, corpus_flags, arch: str = "llama2") -> family.Family:
    """The family of ``--scale`` and ``--arch`` (``family.LINEAGE_ARCHS``: the LLaMA-style
    ``DEFAULT`` / ``LINEAGE_PAPER`` or their Qwen-style counterparts) with the ``--corpus``
    replacements."""
    if arch not in family.LINEAGE_ARCHS:
        raise UserError(f"unknown architecture {arch!r}; the lineage study trains "
                        f"{sorted(family.LINEAGE_ARCHS)}")
    cpu, paper = family.LINEAGE_ARCHS[arch]
    fam = paper if scale == "paper" else cpu
    return family.with_corpora(fam, family.parse_corpus_flags(corpus_flags))


def default_runs_dir(scale: str, arch: str = "llama2") -> Path:
    """Where a family's runs live unless ``--runs-dir`` says otherwise: runs/family (LLaMA-style,
    CPU scale), runs/family-paper, runs/family-qwen2, runs/family-qwen2-paper."""
    s = PAPER if scale == "paper" else CPU
    if arch == "llama2":
        return Path(s["runs_dir"])
    return Path("runs") / ("family-" + arch + ("-paper" if scale == "paper" else ""))


class Study:
    """The family in ``runs_dir`` with the settings ``s`` (``CPU``, ``PAPER`` or ``SMOKE``);
    ``log`` gets a line per measured pair."""

    def __init__(self, runs_dir: Path, s: dict, cache: Path, fam: family.Family = family.DEFAULT,
                 log=progress):
        self.runs, self.s, self.cache, self.fam = Path(runs_dir), s, Path(cache), fam
        self.log = log
        self._models, self._nulls, self._inputs = {}, {}, {}
        self._reef_windows = self._ics_tokens = None

    # --- models ------------------------------------------------------------------------------
    def finished(self, run: str) -> bool:
        return family.finished(run, self.runs, self.fam)

    def require(self, *names: str) -> None:
        missing = [r for r in names if not self.finished(r)]
        if missing:
            raise UserError(f"runs not finished in {self.runs}: {missing}; train them with "
                             f"python -m experiments.lineage")

    def spec(self, run: str, step: int | None = None) -> str:
        """``PATH@STEP``; step None: the run's last step (its final model)."""
        if step is None:
            step = family.spec(run, self.runs, self.fam)[0].steps
        return f"{(self.runs / run).absolute()}@{step}"

    def steps(self, run: str) -> list[int]:
        return run_steps(self.runs / run)

    def model(self, spec: str):
        if spec not in self._models:
            if len(self._models) > 6:  # a few models at a time (each ~15 MB at CPU scale)
                self._models.pop(next(iter(self._models)))
            self._models[spec] = load_source(spec)
        return self._models[spec]

    @property
    def cfg(self):
        return self.model(self.spec(BASES[0], 0)).cfg

    # --- SeedPrint features ------------------------------------------------------------------
    def inputs(self, kind: str):
        if kind not in self._inputs:
            self._inputs[kind] = probe_inputs(kind, self.cfg, self.s["n"], self.s["seq_len"],
                                              probe_seed=self.s["probe_seed"])
        return self._inputs[kind]

    def _cached(self, key: dict, compute) -> np.ndarray:
        h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
        f = self.cache / f"{h}.npy"
        if f.exists():
            return np.load(f)
        arr = np.asarray(compute(), dtype=np.float32)
        self.cache.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(".tmp.npy")
        np.save(tmp, arr)
        tmp.replace(f)  # atomic
        return arr

    def _key(self, what: str, kind: str) -> dict:
        s = self.s
        return {"what": what, "kind": kind, "n": s["n"], "T": s["seq_len"],
                "probe_seed": s["probe_seed"], "cfg": self.cfg.name, "V": self.cfg.vocab_size,
                # the whole config: the null initialisations of the HF-init family differ from
                # the GPT-2-scaled family's in scale_residual_init alone
                "config": dataclasses.asdict(self.cfg)}

    def features(self, spec: str, kind: str) -> np.ndarray:
        """(n, d) SeedPrint features of model ``spec`` on the shared inputs of ``kind``."""
        return self._cached(self._key(spec, kind),
                            lambda: model_features(self.model(spec), self.inputs(kind)))

    def null_features(self, kind: str) -> np.ndarray:
        """(K, n, d) features of K fresh initialisations of the family's architecture."""
        if kind not in self._nulls:
            seeds = null_seeds(self.s["null_models"], family.LINEAGE_SEEDS)
            key = self._key(f"null:{seeds[0]}..{seeds[-1]}", kind)
            self._nulls[kind] = self._cached(key, lambda: np.stack(
                [F for _, F in init_features(self.cfg, seeds, self.inputs(kind))]))
        return self._nulls[kind]

    # --- baseline probes ---------------------------------------------------------------------
    def base_documents(self) -> tuple[list[str], list[str]]:
        """(training, held-out) documents of the base corpus, split as training splits them."""
        return run_folder.validation_split(family.corpus("base", self.fam), self.fam.pretrain)

    def tokenizer(self):
        return data.load_tokenizer(run_folder.tokenizer_path(self.runs / BASES[0]))

    def _corpus_probes(self) -> None:
        """Read the base corpus once and derive both probes taken from it: REEF's held-out
        windows and ICS's least frequent tokens of the training part. Every comparison uses
        both, and at the paper's scale the corpus is 16 GiB of text: it is streamed once, and
        the documents are not kept."""
        if self._reef_windows is None or self._ics_tokens is None:
            train_docs, held_docs = self.base_documents()
            tok = self.tokenizer()
            self._reef_windows = B.text_windows(held_docs, tok, self.s["reef_windows"],
                                                self.s["reef_seq_len"])
            self._ics_tokens = B.least_frequent_tokens(train_docs, tok, self.s["ics_tokens"])

    def reef_windows(self) -> np.ndarray:
        self._corpus_probes()
        return self._reef_windows

    def ics_tokens(self) -> list[int]:
        self._corpus_probes()
        return self._ics_tokens

    def reef_features(self, spec: str) -> np.ndarray:
        key = {"what": spec, "reef": self.s["reef_windows"], "T": self.s["reef_seq_len"]}
        return self._cached(key, lambda: B.reef_features(self.model(spec), self.reef_windows()))

    # --- one pair ----------------------------------------------------------------------------
    def compare(self, base: str, suspect: str, origin: str | None = None) -> dict:
        """Every SeedPrint test (per input kind) and every baseline of (base, suspect);
        ``origin`` names the suspect's own initialisation (for PCS(origin, suspect))."""
        rec = {"base": base, "suspect": suspect, "seedprint": {}}
        base_is_init = self.model(base).is_init
        for kind in self.s["inputs"]:
            FA, FB = self.features(base, kind), self.features(suspect, kind)
            p = paper_test(FA, FB, trials=self.s["trials"], rng=np.random.default_rng(0))
            o = official_test(FA, FB)
            c = C.calibrated_test(FA, FB, list(self.null_features(kind)))
            rec["seedprint"][kind] = {
                **{f"paper/{k}": v for k, v in p.p_values.items()}, "paper/S": p.n_dims,
                "paper/mean_tau": p.statistic, "paper/null_S": p.details["null_dims_mean"],
                "official/two_phi_bar": o.p, "official/one_sided": o.p_values["one_sided"],
                "official/S": o.n_dims, "official/mean_tau": o.statistic,
                "calibrated/exact": c.p, "calibrated/gaussian_tail": c.p_values["gaussian_tail"],
                "calibrated/statistic": c.statistic, "calibrated/z": c.details["z"],
                "calibrated/exact_valid": base_is_init}
        mb, ms = self.model(base), self.model(suspect)
        res = B.all_baselines(mb, ms, token_ids=self.ics_tokens(), H_base=self.reef_features(base),
                              H_suspect=self.reef_features(suspect))
        rec["baselines"] = {k: r.similarity for k, r in res.items()}
        rec["baselines_details"] = {k: r.details for k, r in res.items()}
        rec["pcs_no_norms"] = B.pcs(mb.params, ms.params, include_norms=False).similarity
        if origin is not None:
            mo = self.model(origin)
            rec["pcs_own_init"] = B.pcs(mo.params, ms.params).similarity
            rec["pcs_own_init_no_norms"] = B.pcs(mo.params, ms.params,
                                                 include_norms=False).similarity
        return rec


# the RESULTS.md rows of these tables: experiments/lineage/claims.py
SEEDPRINT_COLS = [("t (mean)", "paper/t_mean"), ("U (mean)", "paper/u_mean"),
                  ("t (pooled)", "paper/t_pooled"), ("official", "official/two_phi_bar"),
                  ("calibrated", "calibrated/exact")]


def table(records: list[dict], label, paper: dict, expect_same) -> str:
    """Markdown: one row per pair and input kind; p-values and similarities marked with a
    check when the verdict is correct (``expect_same(rec)``: the pair is one lineage)."""
    head = ("| pair | inputs | paper's t / U | |S| | mean tau | "
            + " | ".join(c for c, _ in SEEDPRINT_COLS) + " | "
            + " | ".join(c for c, _ in BASELINES) + " | PCS (no gains) | PCS(own init) |")
    lines = [head, "|---|---|---|---:|---:|" + "---:|" * (len(SEEDPRINT_COLS) + 6)]
    for r in records:
        same = expect_same(r)
        for kind, sp in r["seedprint"].items():
            ok = lambda p: "✓" if (p <= 0.01) == same else "✗"  # noqa: E731
            cells = [f"{fmt_p(sp[k])}{ok(sp[k])}" for _, k in SEEDPRINT_COLS]
            sims = [f"{r['baselines'][k]:.3f}{'✓' if (r['baselines'][k] >= 0.8) == same else '✗'}"
                    for _, k in BASELINES]
            pt = paper.get(label(r), ("", ""))
            lines.append(f"| {label(r)} | {kind} | {pt[0]} / {pt[1]} | {sp['paper/S']} | "
                         f"{sp['paper/mean_tau']:+.3f} | " + " | ".join(cells) + " | "
                         + " | ".join(sims) + f" | {r['pcs_no_norms']:.3f} | "
                         + (f"{r['pcs_own_init']:.3f}" if "pcs_own_init" in r else "n/a")
                         + " |")
    return "\n".join(lines) + "\n"


def pairs_table(intro: str, records: list[dict], expect_same) -> str:
    """``intro``, then the :func:`table` of ``records`` labelled by pair, with the paper's
    t / U p-values of each pair."""
    paper = {r["pair"]: (r["paper"]["t"], r["paper"]["u"]) for r in records}
    return intro + "\n\n" + table(records, lambda r: r["pair"], paper, expect_same)


def pairs_figure(records: list[dict], title: str):
    """Left: every SeedPrint p-value per pair (log scale, alpha = 0.01 dashed), one marker per
    test and input kind. Right: the four baselines' similarities (0.8 dashed)."""
    fig, (ax, bx) = plots.figure(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]})
    x = np.arange(len(records))
    marks = {"tokens": "o", "gaussian": "x"}
    for j, (name, key) in enumerate(SEEDPRINT_COLS):
        for kind, mk in marks.items():
            ys = [max(r["seedprint"][kind][key], 1e-300) for r in records
                  if kind in r["seedprint"]]
            if len(ys) == len(records):
                ax.scatter(x + 0.08 * j, ys, marker=mk, s=18, color=f"C{j}",
                           label=f"{name} ({kind})")
    ax.set_yscale("log")
    ax.axhline(0.01, color="k", ls="--", lw=1)
    ax.set_xticks(x, [r["pair"] for r in records], fontsize=7, rotation=15)
    ax.set_ylabel("p-value")
    ax.legend(fontsize=5, ncol=2)
    ax.set_title(title, fontsize=9)
    for j, (name, key) in enumerate(BASELINES):
        bx.bar(x + 0.2 * j - 0.3, [r["baselines"][key] for r in records], width=0.2,
               label=name, color=f"C{j + 5}")
    bx.axhline(0.8, color="k", ls="--", lw=1)
    bx.set_xticks(x, [r["pair"] for r in records], fontsize=7, rotation=15)
    bx.set_ylabel("similarity")
    bx.legend(fontsize=6)
    fig.tight_layout()
    return fig
