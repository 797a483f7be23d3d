"""What a lineage test must see through, each edit a function of a parameter dict (and its
config) that returns new parameters and never modifies its inputs:

  ``downstream``    the edits a downstream user or a thief applies: LoRA merges, int8/int4
                    weight quantization, QuaRot-style rotated int4, magnitude and 2:4 pruning,
                    averages and task arithmetic of fine-tunes;
  ``obfuscation``   function-preserving re-parametrisations: residual-basis, MLP hidden-unit
                    and attention-head permutations, compensated norm-gain rescaling;
  ``rotation``      residual rotations and sign flips, signed MLP unit scales, per-head V/O
                    maps (function-preserving);
  ``shape_edits``   edits that change a width or a depth: MLP units padded, split, pruned or
                    masked; layers dropped, inserted, stacked (SOLAR-style up-scaling);
  ``vocab_edits``   vocabularies extended, truncated or permuted, with the tokenizer remapped;
  ``derivatives``   the one-model edits by name (``Derivative``), for every consumer that
                    builds suspects;
  ``tree``          the map over the parameter tree every edit walks, each leaf with its role
                    in the parameter schema (``bornbiased_jax.schema``).
"""
