"""SeedPrint power: does each test recognise a model's own initialisation after training?

A small LLaMA-style model (``llama2-small``: d = 256, 4 blocks; at CPU scale 120 steps of
8 x 64 tokens) is trained on this Python's standard library (every parameter seed-dependent, as
``config.model_config`` of ``bornbiased_jax.training`` makes them; resumed if the run folder
exists), keeping every checkpoint.
Then, on the same Gaussian inputs, each test compares

  * lineage:        base = the run's initialisation (run@0, rebuilt from its seed), suspect =
                    each checkpoint: every test should say "same lineage" (power);
  * cross-seed:     base = the initialisation of another seed with the same config, suspect =
                    each checkpoint: every test should say "unrelated";
  * trained base:   base = a second run trained from another seed on the same data in the same
                    order (final checkpoint), suspect = each checkpoint of the first run: the
                    calibrated null (fresh inits) is no longer exact here; this checks it.

The calibrated test runs with each of its statistics against one set of K fresh initialisations
(at CPU scale the slow 'tau_S' statistic only at a few checkpoints). ``python -m
experiments.seedprint_power`` runs it; RESULTS.md's rows come from its record through
:mod:`experiments.seedprint.claims`.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from bornbiased_jax import files, plots
from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.algorithm1 import paper_test
from bornbiased_jax.fingerprint.runner.compare import null_seeds
from bornbiased_jax.fingerprint.runner.features import init_features, model_features
from bornbiased_jax.fingerprint.methods.official import official_test
from bornbiased_jax.files import progress
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import LoadedModel, init_params, load_source
from bornbiased_jax.stats import fmt_p
from bornbiased_jax.training import loop as train_run
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from bornbiased_jax.training.config import TrainConfig

CPU = dict(preset="llama2-small", seed=42, other_seed=123, steps=120, save_every=15,
           seq_len=64, batch_size=8, vocab_size=4096, corpus_max_mb=2.0, n=400, fp_seq_len=16,
           null_models=99, input="gaussian", tau_S_steps=[15, 60, 120])
PAPER = dict(preset="llama2-nano", seed=42, other_seed=123, steps=20_000, save_every=2_000,
             seq_len=1024, batch_size=64, vocab_size=32_000, corpus_max_mb=512.0, n=10_000,
             fp_seq_len=1024, null_models=200, input="gaussian", tau_S_steps=None)
COMPARISONS = ("lineage", "cross-seed", "trained base")
# The p-values the table and the figure show, per record.
COLUMNS = ["paper/t_mean", "paper/u_mean", "official/two_phi_bar",
           "calibrated/spearman_all/exact", "calibrated/spearman_S/exact",
           "calibrated/tau_S/exact", "calibrated/residual_all/exact",
           "calibrated/residual_all/gaussian_tail"]


def train_config(s: dict, seed: int) -> TrainConfig:
    """The run of seed ``seed`` at settings ``s``: every checkpoint kept, data seed 0 (so both
    seeds see the same batches in the same order)."""
    return TrainConfig(preset=s["preset"], seed=seed, data_seed=0, steps=s["steps"],
                       save_every=s["save_every"], keep_every=s["save_every"], keep_last=2,
                       seq_len=s["seq_len"], batch_size=s["batch_size"],
                       vocab_size=s["vocab_size"], warmup=s["save_every"],
                       eval_every=s["save_every"], corpus_max_mb=s["corpus_max_mb"])


def train(s: dict, seed: int, out: Path, log=progress) -> Path:
    """Train (or resume) seed ``seed``'s run in ``out``; a finished run is left as it is."""
    tc = train_config(s, seed)
    if not run_folder.finished(out, tc):
        t0 = time.time()
        train_run.ensure(tc, ["python-stdlib"], out)
        log(f"  trained {out} to step {tc.steps} in {time.time() - t0:.0f} s")
    return out


def pair_tests(F_A, F_B, nulls, base_is_init: bool, with_tau_S: bool) -> dict:
    """Every test's p-values for one (base, suspect) pair; ``nulls`` are the fresh inits'
    RankedFeatures, prepared once and shared by all pairs."""
    r = {"paper": paper_test(F_A, F_B, rng=np.random.default_rng(0)),
         "official": official_test(F_A, F_B)}
    for stat in C.STATISTICS:
        if stat == "tau_S" and not with_tau_S:
            continue
        c = C.calibrated_test(F_A, F_B, nulls, statistic_name=stat)
        r[f"calibrated/{stat}"] = {"exact": c.p_values["exact"],
                                   "gaussian_tail": c.p_values["gaussian_tail"],
                                   "z": c.details["z"], "statistic": c.statistic}
    row = {"base_is_init": base_is_init}
    for name, res in r.items():
        if isinstance(res, dict):
            row.update({f"{name}/{k}": v for k, v in res.items()})
            continue
        for key, p in res.p_values.items():
            row[f"{name}/{key}"] = p
        row[f"{name}/statistic"] = res.statistic
        row[f"{name}/n_dims"] = res.n_dims
    return row


def measure(s: dict, out: Path, log=progress) -> list[dict]:
    """Train both runs under ``out`` (resuming), then every test at every checkpoint of the
    first run against the three bases; the fresh initialisations' features are cached under
    ``out``/cache. One record per (step, comparison)."""
    t0 = time.time()
    run_a = train(s, s["seed"], Path(out) / f"run-s{s['seed']}", log)
    run_b = train(s, s["other_seed"], Path(out) / f"run-s{s['other_seed']}", log)
    init_a = load_source(f"{run_a}@0")
    cfg = init_a.cfg
    other_init = LoadedModel(cfg, init_params(cfg, s["other_seed"]), f"init@{s['other_seed']}",
                             "preset", s["other_seed"], None)
    trained_b = load_source(str(run_b))
    emb = np.asarray(init_a.params["embed"]["embedding"])
    xs = probe_inputs(s["input"], cfg, s["n"], s["fp_seq_len"], embedding=emb)
    seeds = null_seeds(s["null_models"], [s["seed"], s["other_seed"]])
    cache = Path(out) / "cache" / f"nulls-{len(seeds)}-{s['n']}-{s['fp_seq_len']}.npy"
    if cache.exists():
        null_F = np.load(cache)
    else:
        null_F = np.stack([F for _, F in init_features(cfg, seeds, xs, group=25)])
        files.atomic_write(cache, lambda fh: np.save(fh, null_F), mode="wb")
    nulls = [D.RankedFeatures.of(F) for F in null_F]
    log(f"  {len(nulls)} null inits in {time.time() - t0:.0f} s")
    bases = dict(zip(COMPARISONS, (model_features(init_a, xs), model_features(other_init, xs),
                                   model_features(trained_b, xs))))
    records = []
    for step in run_steps(run_a):
        F = model_features(load_source(f"{run_a}@{step}"), xs)
        with_tau = s["tau_S_steps"] is None or step in s["tau_S_steps"]
        for comparison, F_base in bases.items():
            records.append({"step": step, "comparison": comparison,
                            **pair_tests(F_base, F, nulls, comparison != "trained base",
                                         with_tau)})
        lin = records[-3]
        log(f"  step {step}: lineage p (paper t, official, calibrated residual_all) = "
            f"{lin['paper/t_mean']:.2g}, {lin['official/two_phi_bar']:.2g}, "
            f"{lin['calibrated/residual_all/exact']:.2g}")
    return records


def markdown(records: list[dict], s: dict) -> str:
    """Every record's p-values, one row per (comparison, step)."""
    name, d, blocks = _model(s)
    md = [f"p-values (alpha = 0.01; the exact calibrated p is at least "
          f"1/{s['null_models'] + 1}). Model {name} (d = {d}, {blocks} blocks), trained "
          f"{s['steps']} steps of {s['batch_size']} x {s['seq_len']} tokens; n = {s['n']} "
          f"{s['input']} inputs of length {s['fp_seq_len']}.", "",
          "| comparison | step | " + " | ".join(COLUMNS) + " |",
          "|---|---:|" + "---:|" * len(COLUMNS)]
    for r in records:
        md.append(f"| {r['comparison']} | {r['step']} | "
                  + " | ".join(fmt_p(r[c]) if c in r else "-" for c in COLUMNS) + " |")
    return "\n".join(md) + "\n"


def _model(s: dict) -> tuple[str, int, int]:
    from bornbiased_jax.presets import get_preset

    cfg = get_preset(s["preset"])
    return cfg.name, cfg.d_model, cfg.n_layers


def figure(records: list[dict]):
    """p-value against the suspect's training step, one panel per comparison."""
    fig, axes = plots.figure(1, 3, figsize=(14, 3.8), sharey=True)
    for ax, comp in zip(axes, COMPARISONS):
        rows = [r for r in records if r["comparison"] == comp]
        for c in COLUMNS:
            pts = [(r["step"], max(r[c], 1e-300)) for r in rows if c in r]
            if pts:
                ax.plot(*zip(*pts), "o-", ms=3, label=c)
        ax.set_yscale("log")
        ax.axhline(0.01, color="k", ls="--", lw=1)
        ax.set_title(comp)
        ax.set_xlabel("training step of the suspect")
    axes[0].set_ylabel("p-value")
    axes[2].legend(fontsize=6)
    fig.tight_layout()
    return fig


def main(argv: list[str]) -> None:
    """SeedPrint power: does each test recognise a model's own initialisation after training?
    Trains two seeds of a small LLaMA-style model on identical data and tests every checkpoint
    of the first against its initialisation, another seed's initialisation and the other
    trained run (what and why: this module's docstring)."""
    from experiments.common.cli import parse, user_errors_exit, write

    args, s = parse("seedprint_power", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    with user_errors_exit("seedprint_power"):
        records = measure(s, args.out)
    write(args, "seedprint_power", s, records, markdown(records, s), figure(records), t0)
