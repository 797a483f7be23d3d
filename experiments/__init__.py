"""The paper's reproduction: one package per study, each holding its measurements, its verdict
rules and what its command lines need; one renderer for RESULTS.md (:mod:`experiments.render`).
Run from a checkout through the one entry point, ``python -m experiments NAME [ARGS]``
(``__main__``; ``--help`` lists every study and experiment); not part of the installed toolkit
(``bornbiased_jax``), which never imports this package.

Each study package declares its study in its study module
(:class:`experiments.common.study.Study`): its experiments, a table of
:class:`~experiments.common.study.Experiment` (a name, the entry that measures it, its CPU- and
paper-scale settings, the records it writes), and its RESULTS.md sections with their titles,
commands and builders. An experiment runs a measurement and saves a record, ``{"run": ...,
"records": ...}``, committed under ``results/records/<study>/<name>.json``. Each study's claims
modules turn its records into :class:`bornbiased_jax.verdicts.Claim` rows (and tables) without
running anything, so every verdict rule is unit-tested on small hand-made records.
:data:`STUDIES` lists the declarations in RESULTS.md's order, :data:`EXPERIMENTS` (study -> the
records it reads) and :data:`STUDY_OF` follow from them, and :mod:`experiments.render` writes
RESULTS.md by iterating them (``artifacts`` writes an experiment's outputs and record). The
experiments' former module paths (``python -m experiments.table1``) run for one release
through one table, :mod:`experiments.common.names`.

Each study package's docstring maps its modules; ``common`` holds what several studies
share (the trained families, tuning, the scripts' command line, shared rules), the only
package a study imports besides its own. Here, what each study is:

  * ``initialisation``: paper Sec. 3-4 (Table 1 to Figure 10), at CPU scale and at the paper's
    own shapes (the rows from the campaign's paper-scale records under
    results/records/paper/);
  * ``theory``: the propositions' closed forms beside their simulations (``bornbiased
    theory``);
  * ``seedprint``: Sec. 5-6.1 (Figure 13, Table 4a, calibration, power; trained pairs and the
    width/depth confound, beyond the paper), and docs/seedprint.md's generated blocks;
  * ``lineage``: Sec. 5, 6.1.2 after training (Figure 11, Tables 4b, 4c, 5), its Qwen-style
    repeat (App. B.3.3: Figure 14, Tables 9-12), and the matched leg's level between trained
    models per MLP width and depth (beyond the paper);
  * ``lineage_bench``: the lineage benchmark (beyond the paper): every edit a downstream user
    or a thief applies, same-shape and shape-changed, against every lineage test;
  * ``sinks``: Sec. 6.2 (Figure 12, Table 7), where sinks form at CPU scale and the arms
    trained with several seeds there;
  * ``real_model``: real pretrained models this toolkit did not make, one driver for every
    model record (a JSON file: the model file, its sha256 and how it is fetched, its
    descendants, its negatives, which steps apply), so that another model is another record
    and no new code. Two records are studies with a section each: SmolLM2-135M-Instruct
    (attention sinks, token preference and Table 6's question on it) and Gemma 3 270M, a new
    architecture family (QK-norm, sandwich norms: sinks with and without ``<bos>``, whether a
    fresh ``gemma3-270m`` is born biased with and without those pieces, its descendants'
    lineage);
  * ``campaign``: paper-scale work in resumable pieces (the pieces, the ledger, the driver, the
    first GPU window's logs); it runs other studies' measurements at the paper's shapes, so it
    may import them, and no study imports it.
"""

from __future__ import annotations

from experiments.common import names as _names

_names.install()  # the former module paths, for one release

from experiments.initialisation.study import STUDY as _initialisation
from experiments.theory.study import STUDY as _theory
from experiments.seedprint.study import STUDY as _seedprint
from experiments.lineage.study import STUDY as _lineage, LEVEL_STUDY as _lineage_level
from experiments.lineage_bench.study import STUDY as _lineage_bench
from experiments.sinks.study import STUDY as _sinks
from experiments.real_model.study import STUDY as _real_model, GEMMA3_STUDY as _gemma3
from experiments.campaign.study import STUDY as _campaign

# every study's declaration (experiments/<package>/study.py), in RESULTS.md's order of sections
STUDIES = (_initialisation, _theory, _seedprint, _lineage, _lineage_bench, _lineage_level,
           _sinks, _real_model, _gemma3, _campaign)
# study -> the records its experiments write and its sections read
# (results/records/<study>/<name>.json)
EXPERIMENTS = {s.name: list(s.records) for s in STUDIES if s.records}
STUDY_OF = {name: study for study, names in EXPERIMENTS.items() for name in names}
