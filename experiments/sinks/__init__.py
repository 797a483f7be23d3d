"""Attention sinks (paper Sec. 6.2): ``claims`` and ``measure`` (Figure 12, Table 7), ``at_init``
(the rescalings at initialisation), ``regime``/``regime_measure`` (where sinks form at CPU
scale), ``arms``/``arms_measure`` (the arms trained with several seeds there); ``study`` declares
the three RESULTS.md sections."""

# the first section's title and command (the declaration's and the section's heading)
TITLE = "Attention sinks after training (paper Sec. 6.2, Figure 12, Table 7)"
COMMAND = "python -m experiments.figure12_table7"
