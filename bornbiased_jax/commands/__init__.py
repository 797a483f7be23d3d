"""The ``bornbiased`` subcommands, one module each: ``add_parser(sub)`` adds the subcommand's
flags and sets ``run``, and ``run(args)`` calls the library and writes the results
(``files.write_artifacts``). Building a parser imports no JAX, SciPy or Matplotlib, so ``--help``
answers at once; ``run`` imports what the command needs.

  sweep        token preference at initialisation (Table 1, Figure 1a)
  theory       the paper's propositions: closed forms against simulated random networks
  train        pretraining with Orbax checkpoints, one seed or many on the same batches
  fingerprint  SeedPrint: does one model descend from another's initialisation?
  sinks        attention-sink rate on real text (Sec. 6.2.1)
  presets      the model presets and their shapes (no JAX at all)
  arguments    argument types, the help layout (groups, defaults as values, examples) and the
               precision, memory-budget and multi-process flags several commands share

The entry point is ``bornbiased_jax/cli.py``.
"""
