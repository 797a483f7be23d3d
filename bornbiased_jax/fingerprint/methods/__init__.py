"""The lineage tests of SeedPrint: tests of H0 "the suspect does not descend from the base's
initialisation", all on feature matrices F (n inputs x d_out outputs) of the two models on the
same random inputs, one module each:

  ``algorithm1``    :func:`paper_test`, Algorithm 1 as written: top-m identity dimensions, Kendall
                    tau, a null of two Gaussian matrices, one-sided t and Mann-Whitney U tests;
  ``official``      :func:`official_test`, the authors' released code: bottom-k dimensions,
                    softmax / 10, analytic z;
  ``calibrated``    :func:`calibrated_test`, a null made of K fresh initialisations of the base's
                    architecture (exact under H0 when the base is an initialisation;
                    approximate for Gaussian inputs, logits outputs and a tied head with
                    per-seed embeddings);
  ``permutation``   the residual-basis permutation test, exact for any pair of models (beyond
                    the paper);
  ``matched``       :func:`matched_test`, gated-MLP unit matching: gate and up views of every unit
                    matched across the two models, agreements against the rencontres law;
                    unchanged by every renaming and rotation, exact when one model is an
                    initialisation (beyond the paper);
  ``aligned``       the calibrated test with the aligned statistic from BASE's known
                    initialisation: exact, sees through a renamed basis (beyond the paper);
  ``matched_init``  the matched test against BASE's known initialisation: exact, no null
                    models (beyond the paper);
  ``any_pair``      the any-pair verdict combining the permutation and the matched test;
  ``attention``     :func:`attention_test`, from the weights alone: heads matched by the
                    spectra of their QK and OV circuits (``head_spectra``), agreements
                    against the law of re-paired heads: unchanged by rotations and head
                    maps, valid when one model is an initialisation, no leg of any verdict
                    (beyond the paper).

What they share: ``identity_dims`` (the top-m / bottom-k dimensions, the identity dimensions
S, per-dimension Kendall and Spearman correlations), ``unit_matching`` (MLP units matched
across widths, layers across depths, and the null of both; its jitted programs in
``kernels``), ``rencontres`` (the matched
test's null law, light enough for the results renderer), ``unit_overlap`` (what two models'
units share in each view: the diagnostic behind the matched test's level between trained
models), ``trained_slack`` (the matched test's slack between two trained models: a law of the
tokens they were trained on and of the MLP width, where it was measured and what lies beyond). ``result`` is a test's outcome
(``LineageResult``, the level ``ALPHA``).

``baselines`` holds the four fingerprints the paper compares with (App. B.3.2): Intrinsic,
REEF, PCS and ICS, each a similarity with the 0.8 threshold.
"""
