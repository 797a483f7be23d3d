"""The lineage benchmark (beyond the paper): every edit a downstream user or a thief applies,
on every base of the seed family, against every lineage test (``python -m experiments
lineage_bench``). ``suspects`` (the edits; the fine-tunes by :mod:`experiments.common.tune`),
``measure`` (features and every test on every pair, and the command line),
``metrics`` (TPR, FPR with its intervals, AUC, TPR at 1 % FPR), ``claims`` (verdict rules,
table, ROC figure, RESULTS.md section); the shape-changed descendants: ``shapes`` (the edits
and ``bornbiased fingerprint``'s verdicts on them), ``shapes_claims`` (their rows); ``study`` (its declaration). This module
holds only names, so that rendering RESULTS.md imports no JAX."""

EDITS = ("continued", "ft", "lora", "int8", "int4-g32", "int4-g128", "prune-50", "prune-2:4",
         "merge", "task-sum", "renamed", "renamed-ft", "signs-units", "rotated", "rotated-ft",
         "quarot-int4", "distilled")
KNOWLEDGE_ONLY = ("distilled",)  # descendants in knowledge, not in weights
TITLE = "Lineage benchmark: every edit, every test (beyond the paper)"
