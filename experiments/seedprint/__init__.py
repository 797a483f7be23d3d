"""SeedPrint at initialisation (paper Sec. 5-6.1): ``claims`` (verdict rules), ``pools`` (features of
fresh initialisations), ``power``, ``calibration``, ``confound``, ``trained`` (the measurements),
``matched_level`` (the matched test's level and power on the 32-seed family), ``level_rule``
(the rule that judges a false-positive rate measured on pairs of a pool of models), ``docs``
(docs/seedprint.md's generated blocks)."""
