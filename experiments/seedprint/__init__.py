"""SeedPrint at initialisation (paper Sec. 5-6.1): ``claims`` (verdict rules), ``pools`` (features of
fresh initialisations), ``measure`` (tests over pairs of trained models), ``power``,
``calibration``, ``confound``, ``trained`` (the measurements), ``docs`` (docs/seedprint.md's
generated blocks)."""
