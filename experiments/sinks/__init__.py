"""Attention sinks (paper Sec. 6.2): ``claims`` and ``measure`` (Figure 12, Table 7) with
``command`` (its command line, the figure12_table7 experiment), ``at_init`` (the rescalings at
initialisation), ``regime``/``regime_measure`` (where sinks form at CPU scale),
``arms``/``arms_measure`` (the arms trained with several seeds there), each measurement module
with its experiment's command line; ``study`` declares the experiments and the three RESULTS.md
sections."""

# the first section's title and command (the declaration's and the section's heading)
TITLE = "Attention sinks after training (paper Sec. 6.2, Figure 12, Table 7)"
COMMAND = "python -m experiments.figure12_table7"
