"""Attention sinks (paper Sec. 6.2): ``claims`` and ``measure`` (Figure 12, Table 7), ``at_init``
(the rescalings at initialisation), ``regime``/``regime_measure`` (where sinks form at CPU
scale), ``arms``/``arms_measure`` (the arms trained with several seeds there)."""
