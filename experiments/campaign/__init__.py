"""Paper-scale work in resumable pieces: ``plan`` (the pieces, the ledger, the driver, RESULTS.md
rows), ``paper_pieces`` (the Sec. 3-4 pieces' forward passes and what they keep, run by
``python -m experiments.paper_scale``), ``gpu_window`` (the first GPU window's logs), ``study`` (the GPU sections' declaration);
``python -m experiments.campaign`` runs the driver (``__main__``)."""

# the section's title (the study's declaration and the section's heading)
TITLE = "The GPU campaign (paper scale, piece by piece)"
