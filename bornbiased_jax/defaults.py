"""Defaults and choices that the command line shows, in a module that imports nothing.

Building ``bornbiased``'s argument parsers (and so every ``--help``) must not import JAX, SciPy or
Matplotlib. The modules that own these settings import them from here under their own names
(e.g. ``probes.sinks.metric.DEFAULT_EPS``), so each value is written once.
"""

# keys.py: a seed is an integer in [0, SEED_LIMIT) (one uint32 word of jax.random.key); every
# place that reads a seed (keys, runs, sources, the seed-list flags) checks it against this
SEED_LIMIT = 2**32
SEED_RANGE = "[0, 2**32)"

# probes/sinks/metric.py: the sink metric (paper Sec. 6.2.1)
SINK_EPS = 0.25  # the paper's threshold (Gu et al. use 0.3)
SINK_LENGTHS = (32, 64, 128, 256, 512)  # "32 to 512"; the paper does not list them

# the sink study's reporting settings (commands/sinks.py): name -> (eps, lengths, sequences).
# "paper": Sec. 6.2.1 (eps 0.25, 32 to 512); "gu": Gu et al. (ICLR 2025), eps 0.3 at T = 64 on
# 100 held-out sequences, thresholded per sample, layer and head.
SINK_SETTINGS = {"paper": (SINK_EPS, SINK_LENGTHS, 100), "gu": (0.3, (64,), 100)}

# data.py: text that Debian packages install, used by the studies' CPU-scale families (globs)
VIM_DOCS = "/usr/share/vim/vim*/doc"  # Vim's help files, any Vim version (vim90 on Debian 12)
NODE_DOCS_MD = "/usr/share/doc/nodejs/api/*.md"  # Node.js's API documentation

# data.py: the beginning-of-sequence token a BPE trained for a --bos run carries
BOS_TOKEN = "<|bos|>"

# fingerprint/methods/calibrated.py: the calibrated lineage test
CALIBRATED_STATISTICS = ("spearman_all", "spearman_S", "tau_S", "residual_all",
                         "spearman_aligned")
CALIBRATED_STATISTIC = "spearman_all"
CALIBRATED_NULL_MODELS = 200

# fingerprint/methods/permutation.py: the residual-basis permutation test
PERMUTATION_STATISTICS = ("spearman", "pearson", "spearman_abs")
PERMUTATION_STATISTIC = "spearman"
PERMUTATION_DRAWS = 9999

# distributed.py: JAX's own default; slow clusters start processes minutes apart
INIT_TIMEOUT_S = 300

# The matched test's slack for two *trained* models (fingerprint/methods/trained_slack.py): the
# doubly matched MLP units per layer pair that two independent trained models may share, a law of
# the tokens T the longer-trained one saw and of the MLP width F,
#   u(T, F) = max(ceil(intercept + slope log10 T), ceil(share F)),
# fitted on half of the seeds of the long level cells (unrelated same-data models with checkpoints
# along training, experiments/lineage/level_long.py) and judged on the other half (RESULTS.md's
# level along training; tests/test_level_long.py checks these against the record).
MATCHED_SLACK_LAW = {"intercept": 0.557002, "slope": 1.813088, "share": 12 / 344}
# T when the user does not give it (--trained-tokens): the most tokens any public model card
# states (Qwen3: 36 trillion), so the default slack is the largest the law gives a released model
MATCHED_TOKENS_ASSUMED = 36e12
# Where the law was measured, cell by cell: the shapes (MLP width ``units``, depth ``layers``) of
# the long cells in its fit, each with the most tokens per model measured, and of the level
# table's cells (256,000 tokens each), whose fitted slacks the law covers; only the cells no other
# covers in all three (tests/test_level_long.py checks these against the records). A pair of
# trained models is within where the law was measured when one cell is at least as long-trained,
# as wide and as deep as the pair; else its slack is an extrapolation, which the verdict says.
MATCHED_SLACK_MEASURED = (
    {"tokens": 25_600_000, "units": 344, "layers": 2},  # L2-F344-long
    {"tokens": 2_560_000, "units": 344, "layers": 12},  # L12-F344-long
    {"tokens": 2_560_000, "units": 1536, "layers": 2},  # L2-F1536-long
)

# fingerprint/runner/compare.py: what the matched test reads, the first MATCHED_SEQS sequences up to
# position MATCHED_MAX_T (its pre-activations of BASE are kept: rows x F x 2L values; the pass
# that captures them runs the whole attention matrix, T^2 memory per head, so longer sequences
# are cut for it); its measured level (experiments/lineage_level.py) is for these rows.
MATCHED_SEQS, MATCHED_MAX_T = 8, 68
# The matched test's statistic, as a record names it: records of lineage studies written since
# it replaced the earlier one (a Hungarian assignment of layer l against layer l, the slack a
# share of the width) carry this string, and their rows read its absence as the earlier one.
MATCHED_STATISTIC = "reciprocal best partners, layers matched across depths"
# bornbiased fingerprint's default number of inputs: the most, from N_MIN up to N_MAX, whose
# forward passes through both models (the last position's head only) stay under
# FINGERPRINT_FORWARD_BUDGET FLOP (a few seconds on a 2-core CPU): all 2,000 for small
# models, 37 for a pair of SmolLM2-135M. The matched leg reads its MATCHED_SEQS sequences whatever n
# is, so its level does not depend on n; the permutation leg is exact at any n.
FINGERPRINT_FORWARD_BUDGET, FINGERPRINT_N_MIN, FINGERPRINT_N_MAX = 1e12, 32, 2000

# The similarity at or above which the four baseline fingerprints (PCS, ICS, REEF, Intrinsic)
# say "same lineage": Zhang et al.'s (REEF), which the paper uses for all four (App. B.3.2).
BASELINE_THRESHOLD = 0.8
