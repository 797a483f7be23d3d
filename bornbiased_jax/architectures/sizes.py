"""The zoo's sizes, which several families' presets share: ``tiny`` for tests, ``cpu`` for
first runs on a laptop, ``small``, ``nano`` for the paper's 12L/12H/768d models and ``1.2b``
for the paper's large GPT-2; and the vocabularies of the paper's models."""

GPT2_VOCAB = 50_257
LLAMA_VOCAB = 32_000
QWEN2_VOCAB = 151_936

SIZES = {
    # size: (d_model, n_layers, n_heads, max_seq_len).
    # The width matters beyond cost: with the fixed N(0, 0.02^2) init, a post-LayerNorm MLP
    # pre-activation has std 0.02 * sqrt(d) (0.55 at d = 768, the sigma of Finding 4.1), so a
    # narrow model sits in GELU's near-linear regime and shows far less preference. "cpu" keeps
    # d = 512 (sigma ~ 0.45) and trades depth for speed.
    "tiny": (64, 2, 4, 128),
    "cpu": (512, 6, 8, 1024),
    "small": (256, 4, 4, 512),  # trains in minutes on a CPU (SeedPrint's power experiment)
    "nano": (768, 12, 12, 2048),
    "1.2b": (2048, 24, 32, 2048),
}
