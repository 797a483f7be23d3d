"""Table 5: the seed-1000 base model (pretrained on the base corpus) against four continued models:
the seed-1000 base and the seed-123 base (the distractor), each continued on a prose corpus
(TinyStories' role) and on a code corpus (The Stack's role); corpora in
experiments/common/family.py. Every SeedPrint test and the four baselines, beside the
paper's values. The base is trained, so the calibrated test's null (fresh initialisations) is
not exact here. PCS(own init) is the continued model against its lineage's initialisation."""

from experiments.lineage.command import script_main

from experiments.lineage.tables import table5

NAME = "table5"


def main(argv=None) -> None:
    script_main(NAME, __doc__, table5, "Table 5: seed-1000 base vs continued models", argv)


if __name__ == "__main__":
    main()
