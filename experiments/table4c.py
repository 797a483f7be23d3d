"""Table 4c: initialisation s_i against the trained model of another seed s_j, the paper's four
pairs; every run of the family saw the same corpus in the same order (one data seed), so only
the initialisation differs. Every SeedPrint test and the four baselines, beside the paper's
p-values (all > 0.01: not one lineage). PCS(own init) is the trained model against its own
initialisation."""

from experiments.lineage_common import script_main

from bornbiased_jax.studies.lineage_measure import BASES, Study, pairs_table

NAME = "table4c"
# (init seed, trained seed): (t, U) of Table 4c
PAPER = {(123, 1000): (0.385, 0.486), (1000, 2000): (0.035, 0.096), (42, 123): (0.426, 0.337),
         (2000, 42): (0.388, 0.287)}


def run(study: Study) -> tuple[list[dict], str]:
    study.require(*BASES)
    records = []
    for (i, j), (t, u) in PAPER.items():
        rec = study.compare(study.spec(f"base-s{i}", 0), study.spec(f"base-s{j}"),
                            origin=study.spec(f"base-s{j}", 0))
        rec.update(pair=f"s{i} init vs s{j} base", seeds=[i, j], same_lineage=False,
                   paper={"t": t, "u": u})
        records.append(rec)
        print(rec["pair"], rec["seedprint"], rec["baselines"], flush=True)
    md = pairs_table("Init of one seed vs the trained model of another (different lineages: "
                     "✓ = p > 0.01 or similarity < 0.8).", records, lambda r: False)
    return records, md


def main(argv=None) -> None:
    script_main(NAME, __doc__, run, "Table 4c: init s_i vs trained s_j", argv)


if __name__ == "__main__":
    main()
