"""What the library measures on a model, one module (or package) each, with its tables:

  inputs              random probe inputs (token ids or Gaussian input embeddings), drawn row
                      by row from the ``probe`` key stream, the same for every model compared
  outputs             a model's output at the last position as a probe (normed, pre-norm or
                      logits): SeedPrint's g(x) and the first stage of Table 1's probe
  mlp_views           a gated MLP's gate and up pre-activations per layer, beside the normed
                      feature: the matched test's views (``fingerprint.methods.matched``)
  token_preference    the token a random initialisation prefers (Sec. 3, Table 1, Figure 1a);
                      ``token_preference_tables`` draws Table 1 and Figure 1a
  contraction         how representations contract at initialisation (Sec. 4: Figures 2, 4,
                      7, 8, 10, Tables 2 and 3)
  sinks               attention sinks (Sec. 6.2.1): ``sinks.metric`` (the metric),
                      ``sinks.windows`` (the windows it is measured on), ``sinks.tables``
"""
