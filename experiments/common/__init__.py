"""What the studies share; a study package imports, of the other packages of experiments/, only
this one (tests/test_import_graph.py), and this one imports no study:

  ``study``          a study's declaration (its experiments, each a name, its entry, its
                     settings at CPU and paper scale and its records; its RESULTS.md sections
                     with their titles, commands and builders), which each study package makes
                     in its own ``study`` module and experiments.STUDIES lists;
  ``cli``            the experiments' command line: ``--scale``, ``--out``, ``--records``,
                     ``--matmul-precision``, writing an experiment's outputs and record,
                     running experiments in turn;
  ``names``          the experiments' former module paths (``python -m experiments.table1``),
                     each the command it now is, for one release;
  ``family``         the trained families of the lineage and attention-sink studies (corpora,
                     schedules, the sink arms, at CPU and paper scale), trained or resumed run
                     by run;
  ``seed_family``    the 32-seed family (llama2-tiny seeds trained on identical data in one
                     program), whose pairs are the hardest negatives of the SeedPrint, lineage
                     benchmark and level studies;
  ``tune``           fine-tuning, LoRA and distillation of a parameter dict (the descendants of
                     the lineage benchmark and of the real-model studies);
  ``level_rule``     the rule that judges a false-positive rate measured on pairs of a pool of
                     models, and its power;
  ``level_fit``      the matched leg's level from saved pair statistics: its p at a slack,
                     the slack fitted on half the seeds, rates and their judgement, the
                     default slack's rate per checkpoint of a long cell;
  ``level_range``    what the level table measured the default slack on (its cells' training
                     tokens), stated beside a released model's own where a row applies it;
  ``pretrained``     the real-model studies' steps (each a bornbiased command, records that
                     name a model by its sha256) and the rules their rows share;
  ``contraction``    Figure 2's rule (the initialisation study's and Gemma 3's);
  ``preference``     Table 1(b)'s rule for a weak preference (the initialisation study's
                     LLaMA-2 rows and Gemma 3's fresh networks);
  ``paper_values``   the paper's printed values that several studies quote (Table 1);
  ``paper_records``  where the paper-scale records live, whose study each is, their writer.
"""
