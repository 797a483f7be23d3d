"""The initialisation study (paper Sec. 3-4). One module per artifact, each its rule (pure
functions from the saved records to RESULTS.md's rows) and, beside it, its measurement (its
``main()``, the experiment's command line): ``table1``, ``figure1``, ``figure2`` (Figure 2 and
Finding 2.2's statistics, Findings 2.2 and 2; Figure 2's own rule is shared,
:mod:`experiments.common.contraction`), ``table2`` (Table 2 and Figure 3's measurement),
``figure3`` (Figure 3's rule), ``figure3_null`` (Figure 3's null: top-1 counts of isotropic
final states through the model's own final norm and unembedding, simulated), ``figure4``,
``figure5``, ``figure6``, ``figure7``, ``table3``, ``figure8``, ``figure9``, ``figure10``, with
``levels`` (the significance levels and the paper's N they share); ``claims`` names the rules
and lists the rows in RESULTS.md's order. ``paper_claims`` (the same claims at the paper's own
shapes), ``findings_paper`` (Findings 1.1 and 1.3 and Table 1(a)'s seed spread, which exist only
at the paper's shapes; Table 1's parts), ``table1_paper`` (Table 1 beside the paper's rows: the
side-by-side table, the magnitudes, the frequency note), ``finding12`` (Finding 1.2 at the paper's shapes: length within networks, scale between
them), ``study`` (its experiments, RESULTS.md section and the run_all command)."""
