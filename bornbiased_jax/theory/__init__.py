"""Closed forms of the paper's propositions, each paired with a finite-width simulator.

  kernels         Prop. 2: the ReLU arc-cosine recurrence; dual kernels of any activation
                  (Finding 4.1 as a prediction)
  attn0           Prop. 4 (T/(T+pi-1)), Prop. 5 (intra-sequence contraction), Eq. 2 (sigma^2/i)
  seedprint_null  Algorithm 1's Gaussian null: Kendall tau spread, identity-dimension counts
  simulate        the simulators, built from the model zoo's blocks and init
  claims          the table of every checked claim
  plots           Figure 5, Table 3, Figure 8 and Figure 9: measurements, closed forms, figures

The command ``bornbiased theory`` that prints the table is ``commands/theory.py``.
"""
