"""Paper-scale work in resumable pieces: ``plan`` (the pieces, the ledger, the driver, RESULTS.md
rows), ``gpu_window`` (the first GPU window's logs); ``python -m experiments.campaign`` runs the
driver (``__main__``)."""
