"""bornbiased-jax: transformers at random initialisation, seed by seed.

  models        ``config`` (the model's fields), ``architectures`` (one record per model
                family: its HF and GGUF names, config keys and presets), ``presets`` (named
                configs), ``keys`` (seeds and key streams), ``layers`` and ``model`` (the
                decoder), ``rope`` (RoPE's angles, scaled and unscaled), ``config_checks``
                (what a valid config is), ``config_io`` (a config in records and on the
                command line), ``schema`` (every
                parameter's role, logical axes and the norm it reads), ``hf`` (Hugging Face
                checkpoints in and out, GGUF files in), ``sources`` (one spec string for any
                model: a preset and seed, a training run, an HF folder, a GGUF file),
                ``generate`` (greedy decoding, for parity checks)
  probes        ``sweep`` (many seeds x many sequences) and ``sweep_plan`` (how a sweep is
                cut to fit memory), ``sweep_identity`` (what a saved state is keyed by),
                ``resume`` (a long probe's saved chunks, so that it resumes where it stopped),
                ``blockwise`` (a long sweep kept as small per-block summaries that can be
                committed), ``probes`` (token preference, contraction, attention sinks, and
                their tables and figures), ``fingerprint`` (SeedPrint lineage tests and
                baselines), ``theory`` (closed forms and simulators)
  training      ``training`` (pretraining: settings, the run folder, Orbax checkpoints, the
                optimiser, the jitted step, the seed planner, the loop), ``data`` (corpora,
                tokenizers, blocks), ``bigram_backcopy`` (the Bigram-Backcopy task),
                ``sharding``, ``distributed`` (one process per host), ``flops``
  results       ``verdicts`` (the one vocabulary of verdicts), ``stats`` (binomial tests,
                intervals over seeds); the paper's studies and RESULTS.md are the checkout's
                ``experiments/`` package, which this package never imports
  plumbing      ``files`` (atomic writes, the results writer, run records), ``plots`` (figures
                without pyplot), ``precision`` (float32 matmul precision), ``xla_cache`` (the
                command line's persistent compilation cache), ``errors`` (``UserError``),
                ``defaults`` (what ``--help`` shows), ``cli`` and ``commands`` (``bornbiased``)
"""

__version__ = "0.2.0"
