"""The lineage benchmark's measurements: every suspect of every base (``suspects``), every
model's features on one shared probe set, and every test on every (base, suspect) pair.

Positives: a base with its own suspects; negatives: a base with every other base's suspects
(and the distilled students, which share no weights with any base, reported apart). Per pair:

  * the many-pairs harness (``fingerprint.runner.rejection.pair_p_values``): the paper's
    Algorithm 1, the released code, the calibrated test (spearman_all), the permutation test
    (Spearman and Pearson), and 'aligned' (the calibrated test with spearman_aligned), each
    with the trained base as base;
  * 'aligned_init': the aligned test with the base's *initialisation* as base, where its
    p-value is exact (the question a model's owner asks: does the suspect descend from my
    initialisation?);
  * the matched test (trained base) at the slack ``bornbiased fingerprint`` uses for two
    trained models (``matched.default_slack``; at slack 0 too, kept as 'matched_eps0'), and
    'any_pair', the verdict ``bornbiased fingerprint`` gives when BASE's initialisation is
    unknown (two HF folders or GGUF files): the permutation and matched tests each at
    alpha / 2, with the command's stops (``any_pair.any_pair_p`` at alpha: min(1,
    2 p_matched) where the matched leg decided alone, or found nothing and the permutation
    test on its first ``MATCHED_SEQS`` sequences, kept as 'permutation_first', is above
    alpha / 2);
  * 'matched_init': the matched test with the base's initialisation as base (slack 0, no null
    models; its null law exact, the test conservative: a discrete p is valid, not exact), the
    default verdict of ``bornbiased fingerprint`` for a gated MLP whose initialisation is
    known;
  * the four similarity baselines (PCS, ICS, REEF, Intrinsic) with their 0.8 threshold.

Features and built suspects are kept in ``work`` (a folder under runs/, not committed), so a
stopped run resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np

from bornbiased_jax import data, files, model
from bornbiased_jax.errors import UserError
from bornbiased_jax.files import progress
from bornbiased_jax.fingerprint.methods import attention as A
from bornbiased_jax.fingerprint.methods import baselines as BL
from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.runner import rejection as SM
from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.methods import permutation as P
from bornbiased_jax.fingerprint.methods.any_pair import any_pair_p
from bornbiased_jax.fingerprint.methods.result import ALPHA
from bornbiased_jax.fingerprint.runner.compare import MATCHED_MAX_T, MATCHED_SEQS, null_seeds
from bornbiased_jax.fingerprint.runner.features import init_features, model_features
from bornbiased_jax.keys import seed_key
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from experiments.common import family
from experiments.common import seed_family as SF
from experiments.lineage_bench import suspects as S

# n token sequences of seq_len for the SeedPrint tests; K fresh inits; REEF's text windows and
# ICS's rare tokens; the fine-tuning corpus (Vim help, with the family's tokenizer).
CPU = dict(bases=8, n=2000, seq_len=64, null_models=200, permutations=9999, probe_seed=0,
           reef_windows=500, ics_tokens=256)
PAPER = CPU  # the benchmark's models are the CPU family's; no larger setting is defined
FT_CORPUS = "base"  # the lineage family's corpora: Vim help
REEF_CORPUS = "code"  # REEF's text windows: the Python standard library, the bases' own corpus
BASELINES = ("pcs", "ics", "reef", "intrinsic")


def _family(runs_dir: Path, bases: int):
    folder = runs_dir / SF.NAME
    if not run_folder.finished(folder, SF.RUN):
        raise UserError(f"the seed family is not trained in {folder}; run "
                        f"'python -m experiments.seed_family --continued' first")
    conts = [runs_dir / SF.continued_name(k) for k in range(bases)]
    missing = [str(c) for c in conts if not run_steps(c) or run_steps(c)[-1] != SF.CONTINUED.steps]
    if missing or bases > len(SF.CONTINUED_SEEDS):
        raise UserError(f"the benchmark's bases need the family's continuations of seeds "
                        f"0-{bases - 1} (at most {len(SF.CONTINUED_SEEDS)}); missing: {missing}; "
                        f"run 'python -m experiments.seed_family --continued' first")
    return folder, conts


def build_models(s: dict, runs_dir: Path, work: Path, log=progress):
    """{(kind, seed, edit): LoadedModel} of every base ('base'), its initialisation ('init')
    and every suspect ('suspect'), building (and saving) the suspects that are missing."""
    folder, conts = _family(runs_dir, s["bases"])
    tok = data.load_tokenizer(run_folder.tokenizer_path(folder))
    ft_docs = data.load_nonempty_corpus(family.corpus(FT_CORPUS), 8 << 20)
    blocks = data.make_blocks(ft_docs, tok, SF.RUN.seq_len).train
    models = {}
    for k in range(s["bases"]):
        base = load_source(f"{folder}#{k}@{SF.RUN.steps}", shared_embedding=False)
        cfg = base.cfg
        models[("base", k, "")] = base
        models[("init", k, "")] = load_source(f"{folder}#{k}@0", shared_embedding=False)
        cont = load_source(f"{conts[k]}@{SF.CONTINUED.steps}", shared_embedding=False).params

        def init_of(seed):
            return jax.tree.map(np.asarray, jax.jit(model.init, static_argnums=0)(
                cfg, seed_key(seed)))

        built = {}
        for edit in S.EDITS:
            path = work / "models" / f"s{k}-{edit}.npz"
            if path.exists():
                built[edit] = S.load(path, base.params)
            else:
                built[edit] = S.build(edit, base.params, cfg, continued=cont,
                                      ft=built.get("ft"), blocks=blocks, seed=k,
                                      init_of=init_of)
                S.save(path, built[edit])
                log(f"  built {edit} of seed {k}")
            models[("suspect", k, edit)] = dataclasses.replace(
                base, params=built[edit], label=f"{edit} of seed {k}")
    return models, tok


def features(s: dict, models: dict, tok, work: Path, log=progress):
    """Each model's SeedPrint features (token inputs) and REEF features (text windows), kept
    in ``work/features/``; and the calibrated tests' null bank."""
    cfg = next(iter(models.values())).cfg
    xs = probe_inputs("tokens", cfg, s["n"], s["seq_len"], s["probe_seed"])
    docs = data.load_nonempty_corpus(family.corpus(REEF_CORPUS), 4 << 20)
    windows = BL.text_windows(docs, tok, s["reef_windows"], s["seq_len"])
    F, H = {}, {}
    for key, m in models.items():
        path = work / "features" / ("-".join(map(str, key)) + ".npz")
        if not path.exists():
            F_ = model_features(m, xs)
            H_ = BL.reef_features(m, windows)
            files.atomic_write(path, lambda f: np.savez(f, F=F_, H=H_), mode="wb")
        with np.load(path) as z:
            F[key], H[key] = z["F"], z["H"]
    log("  features of every model")
    bank_path = work / "features" / "null-bank.npz"
    if bank_path.exists():
        with np.load(bank_path) as z:
            bank = SM.NullBank(z["null_z"], tuple(z[f"draw{i}"] for i in range(z["n_draws"])))
    else:
        seeds = null_seeds(s["null_models"], range(s["bases"]))
        bank = SM.NullBank.build((Fk for _, Fk in init_features(cfg, seeds, xs)), s["n"],
                                 cfg.d_model)
        files.atomic_write(bank_path, lambda f: np.savez(
            f, null_z=bank.null_z, n_draws=len(bank.paper_draws),
            **{f"draw{i}": d for i, d in enumerate(bank.paper_draws)}), mode="wb")
    rare = BL.least_frequent_tokens(data.load_nonempty_corpus(
        [SF.CORPUS[0]], 8 << 20), tok, s["ics_tokens"])
    return F, H, bank, rare


def pairs(s: dict, models: dict, F: dict, H: dict, bank, rare: list[int], log=progress):
    """One row per (base b, suspect of seed k): 'related' (b == k), the edit, every test's
    p-value (SeedPrint tests) or similarity (baselines, with 'pcs_same' etc. at 0.8)."""
    rows = []
    prepared = {key: SM.Prepared.of(F[key]) for key in F}
    cfg = next(iter(models.values())).cfg  # the matched leg reads what `fingerprint` reads
    tokens = np.asarray(probe_inputs("tokens", cfg, s["n"], s["seq_len"], s["probe_seed"])
                        )[:MATCHED_SEQS, :MATCHED_MAX_T]
    pre = {key: M.preactivations(m.params, m.cfg, tokens) for key, m in models.items()}
    log("  MLP pre-activations of every initialisation, base and suspect")
    nulls = {key: SM.aligned_null(prepared[key], bank) for key in F if key[0] == "suspect"}
    n = s["n"]
    for b in range(s["bases"]):
        base, init = models[("base", b, "")], ("init", b, "")
        for key in (k for k in models if k[0] == "suspect"):
            _, k, edit = key
            m = models[key]
            row = {"base": b, "seed": k, "edit": edit, "related": b == k,
                   **SM.pair_p_values(prepared[("base", b, "")], prepared[key], bank,
                                      permutations=s["permutations"], seed=len(rows),
                                      b_aligned_null=nulls[key])}
            s_init = C.aligned_from_correlations(
                (prepared[init].spearman.astype(np.float32).T
                 @ prepared[key].spearman.astype(np.float32)) / n)
            row["aligned_init"], _, row["aligned_init_z"] = C.exchangeable_p(s_init, nulls[key])
            rule = M.trained_rule(pre[("base", b, "")], pre[key])  # fingerprint's default
            matched = M.matched_test(pre[("base", b, "")], pre[key], slack=rule["slack"],
                                     slack_rule=rule)
            row["matched"], row["matched_K"] = matched.p, matched.details["K_per_layer"]
            row["matched_slack"] = rule["slack"]
            row["matched_eps0"] = M.matched_test(pre[("base", b, "")], pre[key]).p
            # the permutation leg on the matched leg's sequences: whether the command's stop
            # for a matched leg that found nothing stands (any_pair.stop_holds)
            row["permutation_first"] = P.permutation_test(
                prepared[("base", b, "")].F[:MATCHED_SEQS], prepared[key].F[:MATCHED_SEQS],
                permutations=s["permutations"], rng=np.random.default_rng(len(rows))).p
            row["any_pair"] = any_pair_p(row["permutation"], row["matched"], alpha=ALPHA,
                                         p_permutation_first=row["permutation_first"])[0]
            row["matched_init"] = M.matched_test(pre[init], pre[key], init="base").p
            row["attention"] = A.attention_test(base.params, base.cfg, m.params, m.cfg).p
            row["attention_init"] = A.attention_test(models[init].params, models[init].cfg,
                                                     m.params, m.cfg, direction="a").p
            for name, res in (("pcs", BL.pcs(base.params, m.params)),
                              ("ics", BL.ics(base.params, base.cfg, m.params, m.cfg, rare)),
                              ("reef", BL.reef(H[("base", b, "")], H[key])),
                              ("intrinsic", BL.intrinsic(base.params, base.cfg, m.params,
                                                         m.cfg))):
                row[name] = float(res.similarity)
            rows.append(row)
        log(f"  every suspect against base {b}")
    return rows


NAME = "lineage_bench"


def main(argv: list[str]) -> None:
    """Does each lineage test find every descendant a downstream
    user or a thief makes, while holding its false-positive rate at alpha?

    Bases: the first ``bases`` seeds of the 32-seed family (llama2-tiny trained on identical data in
    one program; ``python -m experiments seed_family --continued`` first). Every edit of
    ``experiments/lineage_bench/suspects.py`` is applied to every base; every test
    (``measure.py``) runs on every (base, suspect) pair; ``metrics.py`` gives per test and edit the
    TPR at alpha = 0.01, the FPR over the other bases' suspects with its intervals, the AUC and the
    TPR at 1 % FPR. Built suspects and features stay in ``--work`` (under runs/, not committed), so
    a stopped run resumes; the record goes to results/records/lineage_bench/lineage_bench.json and
    RESULTS.md's section is rendered from it (``claims.py``).

    ``--shapes`` measures the shape-changed descendants instead (``shapes.py``: the verdicts
    ``bornbiased fingerprint`` gives on every SHAPES edit of each base, and where the matched test
    localises them), into results/records/lineage_bench/lineage_bench_shapes.json; it needs the
    seed family only (``python -m experiments seed_family``).
    """
    import time

    from bornbiased_jax.defaults import MATCHED_STATISTIC
    from experiments.common import seed_family
    from experiments.common.cli import parse, user_errors_exit, write

    def extra(p):
        p.add_argument("--runs-dir", type=Path, default=seed_family.RUNS_DIR,
                       help="where the seed family and its continuations are trained")
        p.add_argument("--work", type=Path, default=Path("runs/lineage-bench"),
                       help="built suspects and features (resumable; not committed)")

    def extra_shapes(p):
        extra(p)
        p.add_argument("--shapes", action="store_true",
                       help="measure the shape-changed descendants (shapes.py) instead")
        p.add_argument("--bases", type=int, default=None,
                       help=f"with --shapes: the first BASES seeds of the family as bases "
                            f"(default {CPU['bases']})")

    args, s = parse(NAME, main.__doc__, CPU, PAPER, extra_shapes, argv)
    t0 = time.time()
    if args.shapes:
        from experiments.lineage_bench import shapes, shapes_claims

        s = {**s, "bases": args.bases or s["bases"]}
        with user_errors_exit(NAME):
            rec = shapes.measure(s["bases"], args.work / "shapes", args.runs_dir)
            summary = shapes.summarise(rec)
        write(args, "lineage_bench_shapes", {"bases": s["bases"]},
              {"summary": summary, "pairs": rec["pairs"], "matched_statistic": MATCHED_STATISTIC},
              shapes_claims.markdown(summary),
              shapes_claims.figure(summary), t0)
        return
    with user_errors_exit(NAME):
        from experiments.lineage_bench import claims, metrics

        models, tok = build_models(s, args.runs_dir, args.work)
        F, H, bank, rare = features(s, models, tok, args.work)
        rows = pairs(s, models, F, H, bank, rare)
        summary = metrics.summarise(rows)
        records = {"summary": summary, "pairs": rows, "matched_statistic": MATCHED_STATISTIC}
    write(args, NAME, s, records, claims.markdown(summary), claims.roc_figure(rows), t0)
