"""The initialisation study (paper Sec. 3-4): ``claims`` (verdict rules of Table 1 to Figure 10,
Finding 2.2's statistics) and ``paper_claims`` (the same claims at the paper's own shapes)."""
