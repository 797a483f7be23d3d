"""The initialisation study (paper Sec. 3-4): ``claims`` (verdict rules of Table 1 to Figure 10,
Finding 2.2's statistics), ``paper_claims`` (the same claims at the paper's own shapes),
``figure10`` (Figure 10's record from one pass) and ``unembedding_null`` (Figure 3's null: top-1
counts of isotropic final states through the model's own final norm and unembedding,
simulated); ``study`` declares its experiments and RESULTS.md section. Figure 2's rule is shared (:mod:`experiments.common.contraction`)."""
