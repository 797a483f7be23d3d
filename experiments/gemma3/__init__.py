"""The second real pretrained model and a new architecture family: Gemma 3 270M (Google's base
model; the registry's Q4_K_M GGUF, ``tests/fixtures/fetch_gemma3.sh``), measured with the
toolkit's own commands, and fresh ``gemma3-270m`` initialisations with and without QK-norm and
post-norms:

  ``measure``   the steps: ``bornbiased sinks`` with and without ``<bos>``, ``bornbiased sweep
                --model`` (Table 1's protocol on the trained model), Table 1's statistic and
                Figure 2's contraction at initialisation per arm, the descendants made here and
                ``bornbiased fingerprint`` on them; each step resumable, each record written when
                its step finishes;
  ``claims``    the verdict rules (pure functions of the records) and the RESULTS.md section;
  ``study``     the study's declaration: its records, title, command and section;
  ``command``   its command line, ``python -m experiments gemma3``.

Records: results/records/gemma3/{gemma3_sinks,gemma3_token_preference,gemma3_init,
gemma3_lineage}.json, and at Table 1(b)'s N = 10,000 the campaign's
results/records/paper/gemma3/gemma3_init_n10k.json (``python -m experiments paper_scale
gemma3-init-n10k``: four arms, the fourth without the embedding scale). The model file is named
by its file name and sha256, never by a path.
"""

# the section's title and the records (the declaration's and the claims')
TITLE = "A second real model, a new architecture family: Gemma 3 270M (GGUF)"
EXPERIMENTS = ("gemma3_sinks", "gemma3_token_preference", "gemma3_init", "gemma3_lineage")
