"""Paper-scale work in resumable pieces: ``plan`` (the pieces, in priority order, and their
paper-scale passes), ``driver`` (runs them within a budget and keeps the ledger), ``progress``
(how far the resumable pieces got, the measured rates and time estimates), ``report`` (the
status table and RESULTS.md's rows and section), ``paper_pieces`` (the Sec. 3-4 pieces' forward
passes and what they keep), ``paper_scale`` (their command line, ``python -m experiments paper_scale PIECE``), ``gpu_window`` (the first GPU
window's logs), ``study`` (the GPU sections' declaration and the two experiments);
``command`` is the driver's command line, ``python -m experiments campaign``, and ``bundle``
packs what one call wrote into one archive (a lent GPU returns only a few files)."""

# the section's title (the study's declaration and the section's heading)
TITLE = "The GPU campaign (paper scale, piece by piece)"
