"""Lineage after training (paper Sec. 5, 6.1.2; App. B.3.3): ``claims`` (verdict rules),
``measure`` (tests over the trained family's pairs), ``tables`` (Figure 11, Tables 4b, 4c, 5 and
their Qwen-style repeats), ``command`` (the study's command line, ``python -m experiments
lineage``), ``study`` (the two studies' declarations: the lineage sections and the level's).
The matched leg's level between trained models per MLP width and depth (beyond the paper):
``level`` (the measurement and its command line; the slack and the rates from the
measured pair statistics are :mod:`experiments.common.level_fit`), ``level_families``
(the families trained for it), ``level_claims`` (its RESULTS.md table and rules); along
training: ``level_long`` (the long cells), ``level_long_measure`` (and the command line), ``level_long_law`` (the
slack as a law of training length), ``level_long_claims`` (its section) and ``level_long_docs``
(docs/seedprint.md's account of what the slack rests on). The trained
families are shared with the sink study (:mod:`experiments.common.family`; ``family`` keeps
the address that committed RESULTS.md sections cite)."""

# the sections' titles (the declarations' and the sections' headings)
LINEAGE_TITLE = ("Lineage: persistence through training (paper Sec. 5, 6.1.2: Figure 11, "
                 "Tables 4b, 4c, 5)")
QWEN2_TITLE = "Lineage with Qwen-style models (paper App. B.3.3: Tables 9-12, Figure 14)"
HFINIT_TITLE = ("Lineage with the released code's HF default init (paper Sec. 5, 6.1.2: "
                "Figure 11, Tables 4b, 4c, 5)")
QWEN2_HFINIT_TITLE = ("Lineage with Qwen-style models and the released code's HF default init "
                      "(paper App. B.3.3: Tables 9-12, Figure 14)")
LEVEL_TITLE = "The matched leg's level between trained models, per width and depth"
LONG_TITLE = "The matched leg's level along training: shared units against tokens seen"
