"""The initialisation study (paper Sec. 3-4). Its rules, one module per artifact, pure
functions from the saved records to RESULTS.md's rows: ``table1``, ``figure1``, ``figure2``
(Finding 2.2's statistics, Findings 2.2 and 2; Figure 2's own rule is shared,
:mod:`experiments.common.contraction`), ``table2``, ``figure3``, ``figure4``, ``figure5``,
``figure6``, ``figure7``, ``table3``, ``figure8``, ``figure9``, ``figure10`` (also its record
from one pass), with ``levels`` (the significance levels and the paper's N they share);
``claims`` names them all and lists the rows in RESULTS.md's order. ``paper_claims`` (the same
claims at the paper's own shapes), ``finding12`` (Finding 1.2 at the paper's shapes: length
within networks, scale between them), ``unembedding_null`` (Figure 3's null: top-1 counts of
isotropic final states through the model's own final norm and unembedding, simulated),
``study`` (its experiments and RESULTS.md section)."""
