"""Lineage after training (paper Sec. 5, 6.1.2; App. B.3.3): ``claims`` (verdict rules),
``measure`` (tests over the trained family's pairs), ``tables``, ``family`` and ``seed_family``
(the trained models); ``python -m experiments.lineage`` runs it (``__main__``)."""
