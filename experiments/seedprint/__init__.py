"""SeedPrint at initialisation (paper Sec. 5-6.1). ``figure13`` and ``table4a``: each its
measurement and its rule; ``power``, ``calibration``, ``confound``, ``trained`` and
``matched_level`` (the matched test's level and power on the 32-seed family): the measurements,
each with its experiment's command line, their rules in ``power_claims``,
``calibration_claims``, ``confound_claims``, ``trained_claims`` and ``matched_claims``, sharing
``rates`` (a rate's cell and whether it is above alpha); ``claims`` names every rule and lists
the rows in RESULTS.md's order; ``pools`` (features of fresh initialisations), ``docs``
(docs/seedprint.md's generated blocks), ``study`` (its declaration and the seedprint_results
command). The held-out level's rule is shared (:mod:`experiments.common.level_rule`)."""
