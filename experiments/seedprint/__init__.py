"""SeedPrint at initialisation (paper Sec. 5-6.1): ``claims`` (verdict rules), ``pools`` (features of
fresh initialisations), ``power``, ``calibration``, ``confound``, ``trained`` (the measurements),
``matched_level`` (the matched test's level and power on the 32-seed family), ``docs``
(docs/seedprint.md's generated blocks), ``study`` (its declaration). The held-out level's rule is shared
(:mod:`experiments.common.level_rule`)."""
