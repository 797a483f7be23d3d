"""Table 4c: initialisation s_i against the trained model of another seed s_j, the paper's four
pairs; every run of the family saw the same corpus in the same order (one data seed), so only
the initialisation differs. Every SeedPrint test and the four baselines, beside the paper's
p-values (all > 0.01: not one lineage). PCS(own init) is the trained model against its own
initialisation."""

from experiments.lineage.command import script_main

from experiments.lineage.tables import table4c

NAME = "table4c"


def main(argv=None) -> None:
    script_main(NAME, __doc__, table4c, "Table 4c: init s_i vs trained s_j", argv)


if __name__ == "__main__":
    main()
