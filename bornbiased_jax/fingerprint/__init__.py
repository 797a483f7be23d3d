"""SeedPrint: lineage fingerprinting from the birth bias (paper Sec. 5-6.1, Algorithm 1).

Tests of H0 "the suspect does not descend from the base's initialisation", all on feature
matrices F (n inputs x d_out outputs) of the two models on the same random inputs, one module
each:

  ``algorithm1``    ``paper_test``, Algorithm 1 as written: top-m identity dimensions, Kendall
                    tau, a null of two Gaussian matrices, one-sided t and Mann-Whitney U tests;
  ``official``      ``official_test``, the authors' released code: bottom-k dimensions,
                    softmax / 10, analytic z;
  ``calibrated``    ``calibrated_test``, a null made of K fresh initialisations of the base's
                    architecture (exact under H0 when the base is an initialisation;
                    approximate for Gaussian inputs, logits outputs and a tied head with
                    per-seed embeddings);
  ``permutation``   the residual-basis permutation test, exact for any pair of models (beyond
                    the paper);
  ``matched``       ``matched_test``, gated-MLP unit matching: gate and up views of every unit
                    matched across the two models, agreements against the rencontres law;
                    unchanged by every renaming and rotation, exact when one model is an
                    initialisation (beyond the paper);
  ``aligned``       the calibrated test with the aligned statistic from BASE's known
                    initialisation: exact, sees through a renamed basis (beyond the paper);
  ``matched_init``  the matched test against BASE's known initialisation: exact, no null
                    models (beyond the paper);
  ``any_pair``      the any-pair verdict combining the permutation and the matched test.

``registry`` lists them, one entry each (what a test needs, how it runs, its level, when
``--test auto`` runs it, its place in the verdict) and the verdicts that combine them, for
every consumer: ``compare``, the command line, ``audit``, ``tables`` and ``rejection``.

``identity_dims`` holds what they share: the top-m / bottom-k dimensions, the identity
dimensions S, per-dimension Kendall and Spearman correlations. ``result`` is a test's outcome
(``LineageResult``), ``tables`` its tables and figure.

``baselines`` holds the four fingerprints the paper compares with (App. B.3.2): Intrinsic,
REEF, PCS and ICS, each a similarity with the 0.8 threshold.

``features`` computes F for fresh initialisations (the sweep engine) and for loaded models;
``compare`` runs the chosen tests on two model sources; ``audit`` decides, from the sources
alone, what ``bornbiased fingerprint`` runs (the tests, BASE's initialisation, the settings),
after ``memory_plan`` has checked, from the configs alone, that both models fit on the device
and estimated the work.

``edits``, ``obfuscation`` and ``rotation`` are what a lineage test must see through: the edits
a downstream user or a thief applies (LoRA merges, int8/int4 weight quantization, QuaRot-style
rotated int4, magnitude and 2:4 pruning, averages and task arithmetic of fine-tunes) and
function-preserving re-parametrisations (residual-basis, MLP hidden-unit and attention-head
permutations, compensated norm-gain rescaling; residual rotations and sign flips, signed MLP
unit scales, per-head V/O maps). ``derivatives`` registers, by name, those that need one
model's weights alone. ``tree`` maps an edit over the parameters, each with its role in the
parameter schema (``bornbiased_jax.schema``: roles, residual axes, which norm a matrix reads).
"""

import importlib

# Imported when first used, so that importing a light submodule (``registry``, which the
# command line's --help reads) does not import SciPy.
_EXPORTS = {"paper_test": "algorithm1", "BaselineResult": "baselines",
            "calibrated_test": "calibrated", "exchangeable_p": "calibrated",
            "official_test": "official", "ALPHA": "result", "LineageResult": "result"}

__all__ = ["ALPHA", "BaselineResult", "LineageResult", "calibrated_test", "exchangeable_p",
           "official_test", "paper_test"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
