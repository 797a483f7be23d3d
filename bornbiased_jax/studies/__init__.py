"""The studies that reproduce the paper, as pure functions of their saved records.

Each experiment (``experiments/<name>.py``, a thin command line) runs a measurement of this
package (the ``*_measure`` modules, ``seed_family``, ``seedprint_calibration``,
``seedprint_power``, ``seedprint_confound``, ``seedprint_trained``, ``sinks_init``, ...) and
saves a record, ``{"run": ..., "records": ...}``, committed under
``results/records/<study>/<name>.json``. Each study module here turns its records into
:class:`bornbiased_jax.verdicts.Claim` rows (and tables) without running anything, so every
verdict rule is unit-tested on small hand-made records, and :mod:`bornbiased_jax.studies.render`
writes RESULTS.md from them.

  * ``initialisation``: paper Sec. 3-4 (Table 1 to Figure 10); ``initialisation_paper`` its
    rows at the paper's own shapes (experiments/paper_scale.py, results/records/paper/);
  * ``theory``: the propositions' closed forms beside their simulations (``bornbiased
    theory``);
  * ``seedprint``: Sec. 5-6.1 (Figure 13, Table 4a, calibration, power; trained pairs and the
    width/depth confound, beyond the paper);
  * ``lineage``: Sec. 5, 6.1.2 after training (Figure 11, Tables 4b, 4c, 5) and its
    Qwen-style repeat (App. B.3.3: Figure 14, Tables 9-12);
  * ``sinks``: Sec. 6.2 (Figure 12, Table 7; the sink-regime grid, ``sinks_regime``, and the
    arms trained with several seeds in the regime it found, ``sinks_arms``).
"""

from __future__ import annotations

# study -> the experiments whose records it reads (experiments/<name>.py writes <name>.json)
EXPERIMENTS = {
    "initialisation": ["table1", "figure1", "figure2_finding22", "table2_figure3", "figure4",
                       "figure7", "figure5", "figure6", "table3", "figure8", "figure9",
                       "figure10"],
    "theory": ["theory"],
    "seedprint": ["figure13", "table4a", "seedprint_calibration", "seedprint_power",
                  "seedprint_trained", "seedprint_confound"],
    "lineage": ["figure11", "table4b", "table4c", "table5", "lineage_runs",
                "figure14", "table9", "table10", "table11", "table12", "lineage_qwen2_runs"],
    "sinks": ["figure12_table7", "sinks_init", "sinks_regime", "sinks_arms"],
}
STUDY_OF = {name: study for study, names in EXPERIMENTS.items() for name in names}
