"""Attention sinks (paper Sec. 6.2.1): the metric, the windows it is measured on, its tables.

  metric   the first-token attention mass alpha^1 per layer and head, the sink rate (per
           sequence and of the mean alpha), Gu et al.'s alpha_k for every key
           (``measure_sinks``, ``sink_rates_over_lengths``, ``SinkResult``), and the cutting
           of text into windows with or without a BOS token (``bos_windows``)
  windows  where a measurement's windows come from: generated Bigram-Backcopy sequences or a
           tokenised text corpus, and the choice ``bornbiased sinks`` makes for one model
           (``Windows``, ``for_model``)
  tables   the markdown table, rate vs length (Figure 12's axes) and per-layer heatmaps
"""
