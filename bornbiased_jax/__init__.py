"""bornbiased-jax: transformers at random initialisation, seed by seed.

Modules: ``config`` (presets), ``keys`` (seeds and key streams), ``layers`` and ``model`` (the
decoder), ``sweep`` (many seeds x many sequences), ``probes`` (token preference, contraction),
``theory`` (closed forms and simulators), ``data`` and ``train`` (pretraining), ``cli``.
"""

__version__ = "0.1.0"
