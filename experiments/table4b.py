"""Table 4b (and Table 8's baselines): each initialisation against its own trained model, seeds
42, 123, 1000 and 2000 of the family (same corpus, same data order), every SeedPrint test and
the four baselines, beside the paper's values (all SeedPrint p < 0.01; every baseline below 0.8,
PCS 0.58). PCS(init, trained) says how far training moved the weights."""

from experiments.lineage_common import script_main

from bornbiased_jax.studies.lineage_measure import BASES, Study, pairs_table

NAME = "table4b"
# seed: (t, U, Intrinsic, REEF, PCS, ICS) of Tables 4b and 8
PAPER = {42: (2.20e-8, 6.28e-8, -0.021, 0.375, 0.580, 0.196),
         123: (7.09e-6, 1.37e-5, 0.149, 0.369, 0.581, 0.188),
         1000: (5.58e-4, 2.81e-3, -0.252, 0.381, 0.581, 0.188),
         2000: (4.00e-10, 1.27e-9, -0.337, 0.331, 0.581, 0.188)}


def run(study: Study) -> tuple[list[dict], str]:
    study.require(*BASES)
    records = []
    for run_ in BASES:
        seed = int(run_.split("-s")[1])
        init, final = study.spec(run_, 0), study.spec(run_)
        rec = study.compare(init, final, origin=init)
        rec.update(pair=f"s{seed} init vs s{seed} base", seed=seed, same_lineage=True,
                   paper=dict(zip(("t", "u", "intrinsic", "reef", "pcs", "ics"), PAPER[seed])))
        records.append(rec)
        print(rec["pair"], rec["seedprint"], rec["baselines"], flush=True)
    md = pairs_table("Init vs its own trained model (one lineage: ✓ = p <= 0.01 or "
                     "similarity >= 0.8).", records, lambda r: True)
    return records, md


def main(argv=None) -> None:
    script_main(NAME, __doc__, run, "Table 4b: init vs own descendant", argv)


if __name__ == "__main__":
    main()
