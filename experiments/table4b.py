"""Table 4b (and Table 8's baselines): each initialisation against its own trained model, seeds
42, 123, 1000 and 2000 of the family (same corpus, same data order), every SeedPrint test and
the four baselines, beside the paper's values (all SeedPrint p < 0.01; every baseline below 0.8,
PCS 0.58). PCS(init, trained) says how far training moved the weights."""

from experiments.lineage.command import script_main

from experiments.lineage.tables import table4b

NAME = "table4b"


def main(argv=None) -> None:
    script_main(NAME, __doc__, table4b, "Table 4b: init vs own descendant", argv)


if __name__ == "__main__":
    main()
