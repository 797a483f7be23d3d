"""Pretraining (``bornbiased train``): AdamW per Table 14, Orbax checkpoints, deterministic
resume, data parallelism, and several initialisation seeds in one program. One job a module:

  config       the run's settings (``TrainConfig``), the model configuration they give, the
               settings a resume must keep, the ``bornbiased train`` command line
  run_folder   the run folder: its files, run.json's schema, metrics, summary, ``finished``
  checkpoints  every Orbax read and write: the loop's saves and restores, one seed's
               parameters for a reader (no model built), checkpoints from before the seed axis
  optimizer    clipping, AdamW and the learning-rate schedule
  step         the loss, the state and its initialisation, the mesh and shardings, the jitted
               train and evaluation steps
  seed_plan    how many seeds a step trains at once, from XLA's memory analysis
  data_setup   a run's blocks, model configuration and run.json, fresh or checked on resume
  loop         ``Run`` (set up, resume, the loop, metrics, the loss plot) and ``ensure``

Module dependencies run one way, the run folder's owners below the model sources and those
below training: ``loop -> data_setup -> sources -> run_folder -> checkpoints`` and
``run_folder -> config``; ``loop -> seed_plan -> step``, ``loop -> optimizer``. Nothing here
imports a module above it, and ``config``, ``run_folder`` and ``checkpoints`` import neither JAX
nor Orbax at module level, so that ``--help`` and readers of run folders stay fast.
"""
