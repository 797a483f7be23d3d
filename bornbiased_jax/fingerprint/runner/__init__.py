"""Running the lineage tests on model sources (``bornbiased fingerprint`` and the studies):

  ``registry``      the one list of tests and verdicts (what a test needs, how it runs, its
                    level, when ``--test auto`` runs it, its place in the verdict), read by
                    every consumer below and by the command line's help;
  ``audit``         from the sources alone, what ``bornbiased fingerprint`` runs (the tests,
                    BASE's initialisation, the settings), and its report;
  ``memory_plan``   from the configs alone, whether both models fit on the device, and the work;
  ``compare``       the chosen tests on two model sources, in named steps (BASE's side, each
                    need's preparer, the tests, the verdict);
  ``context``       what compare prepares for one pair, which a test reads: the core and one
                    part per need;
  ``passes``        one model's pass: the features and the matched test's views in one
                    forward pass where they fit;
  ``features``      the feature matrices F of fresh initialisations (the sweep engine) and of
                    loaded models;
  ``vocab``         vocabularies aligned by token string: the inputs two models of different
                    vocabularies read;
  ``tables``        a comparison's tables and figure;
  ``rejection``     the tests over many model pairs: rejection rates with intervals.

Kept light: importing ``registry`` imports neither JAX nor SciPy.
"""
