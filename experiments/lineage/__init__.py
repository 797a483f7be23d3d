"""Lineage after training (paper Sec. 5, 6.1.2; App. B.3.3): ``claims`` (verdict rules),
``measure`` (tests over the trained family's pairs), ``tables``, ``family`` and ``seed_family``
(the trained models); ``python -m experiments.lineage`` runs it (``__main__``). The matched
leg's level between trained models per MLP width and depth (beyond the paper): ``level`` (the
measurement), ``level_families`` (the families trained for it), ``level_claims`` (its RESULTS.md
table and rules)."""
