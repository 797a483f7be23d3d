"""Table 5: the seed-1000 base model (pretrained on the base corpus) against four continued
models: the seed-1000 base and the seed-123 base (the distractor), each continued on a prose
corpus (TinyStories' role) and on a code corpus (The Stack's role); corpora in
bornbiased_jax/studies/family.py. Every SeedPrint test and the four baselines, beside the paper's values.
The base is trained, so the calibrated test's null (fresh initialisations) is not exact here.
PCS(own init) is the continued model against its lineage's initialisation."""

from experiments.lineage_common import script_main

from bornbiased_jax.studies.lineage_measure import CONTINUED, Study, pairs_table

NAME = "table5"
ROLE = {"prose": "TinyStoriesV2_cleaned", "code": "the_stack"}
# run: (t, U, Intrinsic, REEF, PCS, ICS) of Table 5
PAPER = {"cont-prose-s1000": (0.0, 7.77e-89, 1.000, 0.759, 0.999, 0.996),
         "cont-prose-s123": (0.943, 0.902, 0.950, 0.658, 0.332, 0.012),
         "cont-code-s1000": (0.0, 3.09e-69, 0.489, 0.557, 0.585, 0.123),
         "cont-code-s123": (0.732, 0.831, 0.445, 0.580, 0.301, 0.026)}


def run(study: Study) -> tuple[list[dict], str]:
    study.require("base-s1000", *CONTINUED)
    base = study.spec("base-s1000")
    records = []
    for name in CONTINUED:
        _, shift, s = name.split("-")
        seed = int(s[1:])
        rec = study.compare(base, study.spec(name), origin=study.spec(f"base-s{seed}", 0))
        rec.update(pair=f"{shift} ({seed})", run=name, shift=shift, role=ROLE[shift],
                   seed=seed, same_lineage=seed == 1000,
                   paper=dict(zip(("t", "u", "intrinsic", "reef", "pcs", "ics"), PAPER[name])))
        records.append(rec)
        print(rec["pair"], rec["seedprint"], rec["baselines"], flush=True)
    md = pairs_table("Base: the seed-1000 model after pretraining; targets continued on another "
                     "corpus (✓ = correct verdict: p <= 0.01 / similarity >= 0.8 for the "
                     "seed-1000 descendants, the opposite for the seed-123 distractors).",
                     records, lambda r: r["same_lineage"])
    return records, md


def main(argv=None) -> None:
    script_main(NAME, __doc__, run, "Table 5: seed-1000 base vs continued models", argv)


if __name__ == "__main__":
    main()
