"""SeedPrint power: does each test recognise a model's own initialisation after training?

Trains a small LLaMA-style model (``llama2-small``: d = 256, 4 blocks; at CPU scale 120 steps
of 8 x 64 tokens) on this Python's standard library with ``bornbiased train`` (every parameter
seed-dependent, as ``train.model_config`` makes them; resumed if the run folder exists),
keeping every checkpoint.
Then, on the same Gaussian inputs, it tests:

  * lineage:        base = the run's initialisation (run@0, rebuilt from its seed), suspect =
                    each checkpoint: every test should say "same lineage" (power);
  * cross-seed:     base = the initialisation of another seed with the same config, suspect =
                    each checkpoint: every test should say "unrelated";
  * trained base:   base = a second run trained from another seed on the same data in the same
                    order (final checkpoint), suspect = each checkpoint of the first run: the
                    calibrated null (fresh inits) is no longer exact here; this checks it.

The calibrated test runs with each of its statistics against one set of K fresh initialisations
(at CPU scale the slow 'tau_S' statistic only at a few checkpoints).
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments._common import parse, write

from bornbiased_jax import io, runs
from bornbiased_jax.fingerprint import calibrated as C
from bornbiased_jax.fingerprint import dims as D
from bornbiased_jax.fingerprint.compare import null_seeds
from bornbiased_jax.fingerprint.features import init_features, model_features
from bornbiased_jax.fingerprint.official import official_test
from bornbiased_jax.fingerprint.paper import paper_test
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.runs import TrainConfig, run_steps
from bornbiased_jax.sources import LoadedModel, init_params, load_source
from bornbiased_jax.stats import fmt_p
from bornbiased_jax import train as train_run

NAME = "seedprint_power"
CPU = dict(preset="llama2-small", seed=42, other_seed=123, steps=120, save_every=15,
           seq_len=64, batch_size=8, vocab_size=4096, corpus_max_mb=2.0, n=400, fp_seq_len=16,
           null_models=99, input="gaussian", tau_S_steps=[15, 60, 120])
PAPER = dict(preset="llama2-nano", seed=42, other_seed=123, steps=20_000, save_every=2_000,
             seq_len=1024, batch_size=64, vocab_size=32_000, corpus_max_mb=512.0, n=10_000,
             fp_seq_len=1024, null_models=200, input="gaussian", tau_S_steps=None)


def train(s, seed, out):
    tc = TrainConfig(preset=s["preset"], seed=seed, data_seed=0, steps=s["steps"],
                     save_every=s["save_every"], keep_every=s["save_every"], keep_last=2,
                     seq_len=s["seq_len"], batch_size=s["batch_size"],
                     vocab_size=s["vocab_size"], warmup=s["save_every"],
                     eval_every=s["save_every"], corpus_max_mb=s["corpus_max_mb"])
    if not runs.finished(out, tc):
        t0 = time.time()
        train_run.ensure(tc, ["python-stdlib"], out)
        print(f"  trained {out} to step {tc.steps} in {time.time() - t0:.0f} s", flush=True)
    return out


def tests(F_A, F_B, nulls, base_is_init: bool, with_tau_S: bool) -> dict:
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


if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    run_a = train(s, s["seed"], args.out / f"run-s{s['seed']}")
    run_b = train(s, s["other_seed"], args.out / f"run-s{s['other_seed']}")
    init_a = load_source(f"{run_a}@0")
    cfg = init_a.cfg
    other_init = LoadedModel(cfg, init_params(cfg, s["other_seed"]), f"init@{s['other_seed']}",
                             "preset", s["other_seed"], None)
    trained_b = load_source(str(run_b))
    emb = np.asarray(init_a.params["embed"]["embedding"])
    xs = probe_inputs(s["input"], cfg, s["n"], s["fp_seq_len"], embedding=emb)
    seeds = null_seeds(s["null_models"], [s["seed"], s["other_seed"]])
    cache = args.out / "cache" / f"nulls-{len(seeds)}-{s['n']}-{s['fp_seq_len']}.npy"
    if cache.exists():
        null_F = np.load(cache)
    else:
        null_F = np.stack([F for _, F in init_features(cfg, seeds, xs, group=25)])
        io.atomic_write(cache, lambda fh: np.save(fh, null_F), mode="wb")
    nulls = [D.RankedFeatures.of(F) for F in null_F]
    print(f"  {len(nulls)} null inits in {time.time() - t0:.0f} s", flush=True)
    F_init = model_features(init_a, xs)
    F_other = model_features(other_init, xs)
    F_tb = model_features(trained_b, xs)
    records = []
    for step in run_steps(run_a):
        ck = load_source(f"{run_a}@{step}")
        F = model_features(ck, xs)
        for comparison, F_base, is_init in (("lineage", F_init, True),
                                            ("cross-seed", F_other, True),
                                            ("trained base", F_tb, False)):
            with_tau = s["tau_S_steps"] is None or step in s["tau_S_steps"]
            records.append({"step": step, "comparison": comparison,
                            **tests(F_base, F, nulls, is_init, with_tau)})
        print(f"  step {step}: lineage p (paper t, official, calibrated residual_all) = "
              f"{records[-3]['paper/t_mean']:.2g}, {records[-3]['official/two_phi_bar']:.2g}, "
              f"{records[-3]['calibrated/residual_all/exact']:.2g}", flush=True)

    cols = ["paper/t_mean", "paper/u_mean", "official/two_phi_bar",
            "calibrated/spearman_all/exact", "calibrated/spearman_S/exact",
            "calibrated/tau_S/exact", "calibrated/residual_all/exact",
            "calibrated/residual_all/gaussian_tail"]
    md = [f"p-values (alpha = 0.01; the exact calibrated p is at least 1/{len(nulls) + 1}). "
          f"Model {cfg.name} (d = {cfg.d_model}, {cfg.n_layers} blocks), trained "
          f"{s['steps']} steps of {s['batch_size']} x {s['seq_len']} tokens; n = {s['n']} "
          f"{s['input']} inputs of length {s['fp_seq_len']}.", "",
          "| comparison | step | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for r in records:
        md.append(f"| {r['comparison']} | {r['step']} | "
                  + " | ".join(fmt_p(r[c]) if c in r else "-" for c in cols) + " |")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), sharey=True)
    for ax, comp in zip(axes, ("lineage", "cross-seed", "trained base")):
        rows = [r for r in records if r["comparison"] == comp]
        for c in cols:
            pts = [(r["step"], max(r[c], 1e-300)) for r in rows if c in r]
            ax.plot(*zip(*pts), "o-", ms=3, label=c)
        ax.set_yscale("log")
        ax.axhline(0.01, color="k", ls="--", lw=1)
        ax.set_title(comp)
        ax.set_xlabel("training step of the suspect")
    axes[0].set_ylabel("p-value")
    axes[2].legend(fontsize=6)
    fig.tight_layout()
    write(args, NAME, s, records, "\n".join(md) + "\n", fig, t0)
