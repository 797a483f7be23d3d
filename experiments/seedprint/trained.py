"""SeedPrint on *trained* models: the four lineage tests (paper, official, calibrated,
permutation) side by side on the same pairs of the 32-seed family
(:mod:`experiments.common.seed_family`: llama2-tiny, 32 initialisation seeds trained on
identical data in an identical order, checkpoints every 50 steps; seeds 0-7 continued 800 steps
on a shifted corpus, checkpoints every 100).

  * false-positive rate on unrelated pairs: all 496 pairs of the family at every checkpoint
    (step 0 = the 32 initialisations, token inputs), and final model vs another seed's
    continuation; rates at alpha = 0.01 and 0.05 with three intervals (all pairs as if
    independent, 16 disjoint pairs, jackknife over models:
    :mod:`bornbiased_jax.fingerprint.runner.rejection`);
  * power on true lineages: each initialisation vs its own checkpoints (Tables 4b), and each
    final model vs its continuation on the shifted corpus (Table 5's setting), with the
    relative parameter distance travelled;
  * beyond the paper, the copies a thief renames: seeds 0-7's final models and continuations
    with every function-preserving obfuscation applied (``fingerprint.edits.obfuscation.obfuscate``:
    norm rescaling, head, MLP-unit and residual-basis permutations), each against its
    initialisation and its final model; and the 'aligned' test (the calibrated test with
    'spearman_aligned', robust to renaming) from each initialisation against every other
    seed's final model, where its p-value is exact (a level check), beside its level with
    a trained base on the 496 pairs above (not exact: a measurement).

Every model sees the same n random token sequences (``probe_seed``); features are the final
normed hidden state at the last position. ``python -m experiments.seedprint_trained`` runs it
(after ``python -m experiments.seed_family --continued``); the rows of RESULTS.md come from its
record through :mod:`experiments.seedprint.claims`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np
from scipy import stats

from bornbiased_jax import files, plots
from bornbiased_jax.files import progress
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.runner.compare import null_seeds
from bornbiased_jax.fingerprint.runner.features import init_features, model_features
from bornbiased_jax.fingerprint.edits.obfuscation import obfuscate
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import load_source
from bornbiased_jax.fingerprint.runner import rejection as SM
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from bornbiased_jax.fingerprint.runner import registry
from experiments.common import seed_family as SF

# The four tests whose rates along training the study's figure draws (the paper's two, the
# calibrated and the permutation test), and the variants its records hold, in their order
# (``fingerprint.runner.rejection``; a variant registered since, after them).
TESTS = ("paper", "official", "calibrated", "permutation")
VARIANTS = registry.rejection_variants(first=TESTS + ("permutation_pearson", "aligned"))

# Settings of the two scales: n probe sequences of seq_len tokens, the calibrated test's fresh
# initialisations, the permutation test's permutations and the probe's seed.
CPU = dict(n=2000, seq_len=64, null_models=200, permutations=9999, probe_seed=0)
# The family's models have a context of 128: the paper's T = 1024 does not fit them.
PAPER = dict(n=10_000, seq_len=128, null_models=999, permutations=9999, probe_seed=0)


def family_features(s: dict, runs_dir: Path, cache: Path, log=progress):
    """Features of every model the study compares, the relative parameter distances of the
    lineages, and the null bank; cached in ``cache`` (an .npz) for a rerun."""
    if cache.exists():
        z = np.load(cache, allow_pickle=False)
        F = {tuple(_key(k)): z[k] for k in z.files if k.startswith("F|")}
        dist = {tuple(_key(k)): float(z[k]) for k in z.files if k.startswith("D|")}
        bank = SM.NullBank(z["null_z"], tuple(z[f"draw{i}"] for i in range(z["n_draws"])))
        return F, dist, bank, [int(x) for x in z["steps"]], [int(x) for x in z["cont_steps"]]
    folder = runs_dir / SF.NAME
    if not run_folder.finished(folder, SF.RUN):
        raise UserError(f"the 32-seed family is not trained in {folder}; run "
                        f"'python -m experiments.seed_family --continued' first")
    steps = [0, *run_steps(folder)]
    conts = [runs_dir / SF.continued_name(k) for k in SF.CONTINUED_SEEDS]
    missing = [str(c) for c in conts if not run_steps(c)
               or run_steps(c)[-1] != SF.CONTINUED.steps]
    if missing:
        raise UserError(f"continuations not finished: {missing}; run "
                        f"'python -m experiments.seed_family --continued' first")
    first = load_source(f"{folder}#0@0", shared_embedding=False)
    cfg = first.cfg
    xs = probe_inputs("tokens", cfg, s["n"], s["seq_len"], s["probe_seed"])
    F, params = {}, {}
    for step in steps:
        for k in SF.SEEDS:
            m = load_source(f"{folder}#{k}@{step}", shared_embedding=False)
            F[("family", k, step)] = model_features(m, xs)
            if step in (0, steps[-1]) or k in SF.CONTINUED_SEEDS:
                params[("family", k, step)] = m.params
        log(f"  features of the family at step {step}")
    cont_steps = run_steps(conts[0])
    for k, c in zip(SF.CONTINUED_SEEDS, conts):
        for step in cont_steps:
            m = load_source(f"{c}@{step}", shared_embedding=False)
            F[("cont", k, step)] = model_features(m, xs)
            params[("cont", k, step)] = m.params
    log("  features of the continuations")
    for k, c in zip(SF.CONTINUED_SEEDS, conts):  # renamed copies (obfuscate: the function kept)
        for key, src in ((("renamed", k, steps[-1]), f"{folder}#{k}@{steps[-1]}"),
                         (("renamed_cont", k, cont_steps[-1]), f"{c}@{cont_steps[-1]}")):
            m = load_source(src, shared_embedding=False)
            renamed = obfuscate(m.params, m.cfg, jax.random.key(1000 + k))
            F[key] = model_features(dataclasses.replace(m, params=renamed,
                                                        label=f"renamed {m.label}"), xs)
    log("  features of the renamed copies")
    seeds = null_seeds(s["null_models"], SF.SEEDS)
    bank = SM.NullBank.build((Fk for _, Fk in init_features(cfg, seeds, xs)), s["n"],
                             cfg.d_model)
    last = steps[-1]
    dist = {}
    for k in SF.CONTINUED_SEEDS:  # the seeds whose parameters are kept at every step
        for step in steps[1:]:
            dist[("family", k, step)] = SM.relative_distance(params[("family", k, step)],
                                                             params[("family", k, 0)])
        for step in cont_steps:
            dist[("cont", k, step)] = SM.relative_distance(params[("cont", k, step)],
                                                           params[("family", k, last)])
    arrays = {"|".join(map(str, ("F", *k))): v for k, v in F.items()}
    arrays.update({"|".join(map(str, ("D", *k))): np.float64(v) for k, v in dist.items()})
    arrays.update({f"draw{i}": d for i, d in enumerate(bank.paper_draws)})
    cache.parent.mkdir(parents=True, exist_ok=True)
    files.atomic_write(cache, lambda fh: np.savez(fh, null_z=bank.null_z,
                                               n_draws=len(bank.paper_draws),
                                               steps=steps, cont_steps=cont_steps, **arrays),
                    mode="wb")
    return F, dist, bank, steps, cont_steps


def _key(name: str) -> list:
    _, kind, k, step = name.split("|")
    return [kind, int(k), int(step)]


def measure(s: dict, runs_dir: Path, cache: Path, log=progress) -> tuple[list[dict], dict]:
    """Every false-positive and power record of the study (settings ``s``: CPU or PAPER), and
    the per-pair p-values the figure draws; features come from (and go to) ``cache``; ``log``
    gets a line per measured setting."""
    F, dist, bank, steps, cont_steps = family_features(s, runs_dir, cache, log)
    seeds = SF.SEEDS
    K = s["permutations"]
    records, figure_data = [], {}

    def add(kind, setting, step, rows, **extra):
        rec = {"kind": kind, "setting": setting, "step": step, **extra}
        rec.update({"rates": SM.rates(rows, VARIANTS)} if kind == "fpr"
                   else {"power": SM.power(rows, VARIANTS)})
        if kind == "power":  # beyond saturation: how far past the threshold each statistic is
            rec["median_z"] = {"spearman": float(np.median([r["permutation_z"] for r in rows])),
                               "pearson": float(np.median([r["permutation_pearson_z"]
                                                           for r in rows]))}
        rec["_rows"] = rows
        records.append(rec)
        log(str({k: v for k, v in rec.items() if k not in ("_rows", "rates")}))

    # False positives: unrelated pairs of the family, at every checkpoint.
    pairs = SM.all_pairs(len(seeds))
    for step in steps:
        feats = [F[("family", k, step)] for k in seeds]
        rows = SM.run_pairs(feats, pairs, bank, permutations=K)
        add("fpr", "family", step, rows)
        if step == steps[-1]:
            p = np.array([r["permutation"] for r in rows])
            disjoint = np.array([r["permutation"] for r in rows if r["a"] % 2 == 0
                                 and r["b"] == r["a"] + 1])
            records[-1]["permutation_uniformity"] = {
                "ks_p_all_pairs_dependent": float(stats.kstest(p, "uniform").pvalue),
                "ks_p_disjoint": float(stats.kstest(disjoint, "uniform").pvalue),
                "mean_p": float(p.mean()), "disjoint_pairs": int(disjoint.size)}
            figure_data["trained_p"] = {t: [r[t] for r in rows] for t in TESTS}
    # False positives: final model of seed j vs the continuation of another seed k.
    last, cont_last = steps[-1], cont_steps[-1]
    feats = [F[("family", j, last)] for j in seeds] + \
        [F[("cont", k, cont_last)] for k in SF.CONTINUED_SEEDS]
    cross = [(j, len(seeds) + i) for i, k in enumerate(SF.CONTINUED_SEEDS)
             for j in seeds if j != k]
    add("fpr", "final vs another seed's continuation", cont_last,
        SM.run_pairs(feats, cross, bank, permutations=K))
    # False positives with an initialisation as base: seed a's init vs seed b's final model,
    # every ordered pair a != b; rows carry the seeds (a, b), so the disjoint pairs are
    # (2i, 2i + 1) and the jackknife leaves a seed (its init and its final) out.
    feats = [F[("family", k, 0)] for k in seeds] + [F[("family", k, last)] for k in seeds]
    ordered = [(a, b) for a in range(len(seeds)) for b in range(len(seeds)) if a != b]
    rows = SM.run_pairs(feats, [(a, len(seeds) + b) for a, b in ordered], bank,
                        permutations=K)
    for r, (a, b) in zip(rows, ordered):
        r["a"], r["b"] = a, b
    add("fpr", "initialisation vs another seed's final model", last, rows)
    # Power: initialisation -> its checkpoints.
    for step in steps[1:]:
        rows = SM.run_pairs([F[("family", k, s_)] for k in seeds for s_ in (0, step)],
                            [(2 * i, 2 * i + 1) for i in range(len(seeds))], bank,
                            permutations=K)
        dist_ = [dist[("family", k, step)] for k in SF.CONTINUED_SEEDS]
        add("power", "init -> its checkpoint", step, rows, distance=float(np.mean(dist_)))
    # Power: final model -> its continuation on the shifted corpus.
    for step in cont_steps:
        ks = SF.CONTINUED_SEEDS
        rows = SM.run_pairs([F[key] for k in ks for key in (("family", k, last),
                                                           ("cont", k, step))],
                            [(2 * i, 2 * i + 1) for i in range(len(ks))], bank,
                            permutations=K)
        add("power", "final -> continued on prose", step, rows,
            distance=float(np.mean([dist[("cont", k, step)] for k in ks])))
    # Power on renamed copies: init -> its renamed final model; final -> its renamed
    # continuation (renaming after fine-tuning; for the permutations alone the same as
    # fine-tuning a renamed copy, since AdamW treats the renamed coordinates alike).
    ks = SF.CONTINUED_SEEDS
    for setting, origin, copy, step in (
            ("init -> its renamed final model", ("family", 0), "renamed", last),
            ("final -> its renamed continuation", ("family", last), "renamed_cont",
             cont_last)):
        rows = SM.run_pairs([F[key] for k in ks for key in ((origin[0], k, origin[1]),
                                                           (copy, k, step))],
                            [(2 * i, 2 * i + 1) for i in range(len(ks))], bank,
                            permutations=K)
        dist_ = (dist[("family", k, last)] if origin[1] == 0 else dist[("cont", k, step)]
                 for k in ks)
        add("power", setting, step, rows, distance=float(np.mean(list(dist_))))
    return records, figure_data


def markdown(records: list[dict]) -> str:
    """The false-positive and power tables of :func:`measure`'s records."""
    md = ["False-positive rate (unrelated pairs) at alpha = 0.01 / 0.05: rejections/pairs "
          "[95 % CP over all pairs; CP over the disjoint pairs; jackknife over models].", "",
          "| pairs | step | " + " | ".join(VARIANTS) + " |",
          "|---|---:|" + "---|" * len(VARIANTS)]
    for r in records:
        if r["kind"] != "fpr":
            continue
        cells = []
        for t in VARIANTS:
            c = [_cell(r["rates"][t][str(a)]) for a in SM.ALPHAS]
            cells.append(" / ".join(c))
        md.append(f"| {r['setting']} | {r['step']} | " + " | ".join(cells) + " |")
    md += ["", "Power (true lineages) at alpha = 0.01: rejections/trials; median z of the "
           "permutation statistic (Spearman / Pearson).", "",
           "| lineage | step | distance | " + " | ".join(VARIANTS) + " | median z |",
           "|---|---:|---:|" + "---:|" * (len(VARIANTS) + 1)]
    for r in records:
        if r["kind"] == "power":
            md.append(f"| {r['setting']} | {r['step']} | {r['distance']:.3f} | " + " | ".join(
                f"{r['power'][t]['rejections']}/{r['power'][t]['trials']}" for t in VARIANTS)
                + f" | {r['median_z']['spearman']:.1f} / {r['median_z']['pearson']:.1f} |")
    return "\n".join(md) + "\n"


def figure(records: list[dict], figure_data: dict):
    """False-positive rate along training, the permutation statistic against the distance
    travelled, and the p-values of unrelated trained pairs."""
    fig, axes = plots.figure(1, 3, figsize=(15, 4))
    fam = [r for r in records if r["kind"] == "fpr" and r["setting"] == "family"]
    for t in TESTS:
        x = [r["step"] for r in fam]
        y = [r["rates"][t]["0.01"]["rate"] for r in fam]
        lo = [r["rates"][t]["0.01"]["ci95"][0] for r in fam]
        hi = [r["rates"][t]["0.01"]["ci95"][1] for r in fam]
        axes[0].errorbar(x, y, yerr=[np.subtract(y, lo), np.subtract(hi, y)], marker="o",
                         capsize=3, label=t)

    for setting, marker in (("init -> its checkpoint", "o"),
                            ("final -> continued on prose", "s")):
        pw = [r for r in records if r["kind"] == "power" and r["setting"] == setting]
        power = min(r["power"][t]["rejections"] / r["power"][t]["trials"]
                    for r in pw for t in TESTS) if pw else float("nan")
        for stat in ("spearman", "pearson"):
            axes[1].plot([r["distance"] for r in pw], [r["median_z"][stat] for r in pw],
                         marker=marker, label=f"{setting}, {stat} (power of every test >= "
                                              f"{power:.2f})")
    axes[0].axhline(0.01, color="k", ls=":", lw=1)
    axes[0].set_xlabel("training step of both models")
    axes[0].set_ylabel("false-positive rate at alpha = 0.01 (496 pairs)")
    axes[0].legend(fontsize=7)
    axes[1].set_xlabel("relative parameter distance from the origin model")
    axes[1].set_ylabel("median z of the permutation statistic")
    axes[1].axhline(3.7, color="k", ls=":", lw=1)  # z of a one-sided p = 1e-4
    axes[1].legend(fontsize=6)
    if "trained_p" in figure_data:
        axes[2].hist(figure_data["trained_p"]["permutation"], bins=20, density=True,
                     histtype="step", label="permutation (exact)")
        axes[2].hist(figure_data["trained_p"]["calibrated"], bins=20, density=True,
                     histtype="step", label="calibrated (exact)")
        axes[2].axhline(1, color="k", ls=":", lw=1)
        axes[2].set_xlabel("p-value, unrelated trained pairs (final step)")
        axes[2].set_ylabel("density (uniform = 1)")
        axes[2].legend(fontsize=7)
    fig.suptitle("SeedPrint on a 32-seed family of trained llama2-tiny models")
    fig.tight_layout()
    return fig


def _cell(r: dict) -> str:
    lo, hi = r["ci95"]
    text = f"{r['rejections']}/{r['pairs']} [{lo:.3f}, {hi:.3f}"
    if "disjoint" in r:
        d = r["disjoint"]
        text += f"; {d['rejections']}/{d['pairs']} [{d['ci95'][0]:.2f}, {d['ci95'][1]:.2f}]"
    if "jackknife" in r:
        text += f"; jk {r['jackknife']['ci95'][0]:.3f}-{r['jackknife']['ci95'][1]:.3f}"
    return text + "]"


def main(argv: list[str]) -> None:
    """SeedPrint on *trained* models: the four lineage tests (paper, official, calibrated,
    permutation) side by side on the same pairs of the 32-seed family: false-positive rates on
    unrelated trained pairs and power on true lineages (what is measured and how: this
    module's docstring). Needs the family and its continuations first (``python -m
    experiments seed_family --continued``)."""
    import time

    from experiments.common.cli import parse, user_errors_exit, write

    def extra(p):
        p.add_argument("--runs-dir", type=Path, default=SF.RUNS_DIR)

    args, s = parse("seedprint_trained", main.__doc__, CPU, PAPER, extra, argv)
    t0 = time.time()
    with user_errors_exit("seedprint_trained"):
        records, figure_data = measure(s, args.runs_dir,
                                       args.out / "cache" / f"features-{args.scale}.npz")
    write(args, "seedprint_trained", s, records, markdown(records),
          figure(records, figure_data), t0)
