"""SeedPrint: lineage fingerprinting from the birth bias (paper Sec. 5-6.1, Algorithm 1).

Three sub-packages, one job each:

  ``methods`` the lineage tests of H0 "the suspect does not descend from the base's
              initialisation" (Algorithm 1 as written, the authors' code, the calibrated,
              permutation, matched, aligned and matched-init tests, the any-pair verdict),
              what they share (identity dimensions, unit matching, the rencontres law), a
              test's outcome, and the four baselines the paper compares with;
  ``edits``   what a lineage test must see through: downstream edits (LoRA merges,
              quantization, pruning, averages), function-preserving re-parametrisations
              (permutations, rescalings, rotations), shape changes (MLP width, depth,
              vocabulary) and the one-model derivatives by name;
  ``runner``  running them on two model sources: the registry of tests (what each needs, its
              level, when ``--test auto`` runs it, its place in the verdict), the features,
              the vocabulary alignment, the memory plan, ``bornbiased fingerprint``'s audit
              and comparison, the tables, and rejection rates over many pairs.

Each sub-package's docstring maps its modules.
"""

import importlib

# Imported when first used, so that importing a light submodule (``runner.registry``, which the
# command line's --help reads) does not import SciPy.
_EXPORTS = {"paper_test": "methods.algorithm1", "BaselineResult": "methods.baselines",
            "calibrated_test": "methods.calibrated", "exchangeable_p": "methods.calibrated",
            "official_test": "methods.official", "ALPHA": "methods.result",
            "LineageResult": "methods.result"}

__all__ = ["ALPHA", "BaselineResult", "LineageResult", "calibrated_test", "exchangeable_p",
           "official_test", "paper_test"]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
