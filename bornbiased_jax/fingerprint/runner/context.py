"""What ``compare`` prepares for one (BASE, SUSPECT) pair, which a lineage test's ``run``
reads (:class:`Context`): the core every test reads, and one part per need of the registry
(``registry.NEEDS``), each made by that need's preparer (``compare.Comparison.PREPARERS``)."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class InitSide:
    """INIT's part of a pair: BASE's initialisation's features ``F`` on the pair's inputs, its
    MLP pre-activations ``views`` (where GATED is needed too), its ``label`` and ``seed``."""

    F: Any
    views: Any
    label: str
    seed: int | None = None  # its seed, kept out of the null seeds


@dataclasses.dataclass
class Nulls:
    """NULLS' part of a pair: the ``seeds`` of the null initialisations and their features."""

    seeds: list
    F: list


@dataclasses.dataclass
class Views:
    """GATED's part of a pair: both models' MLP pre-activations (``unit_matching``'s views)
    and BASE's layer screen (``unit_matching.screen_views``, computed once per BASE)."""

    A: Any
    B: Any
    screen_A: Any = None


@dataclasses.dataclass
class Context:
    """What compare prepares for one (BASE, SUSPECT) pair, which a test's ``run`` reads: the
    settings, both models (``LoadedModel``), their features on the shared inputs ``xs`` and
    the output width; and one part per need its tests have, each prepared by that need's
    preparer (``compare.Comparison.PREPARERS``): ``init`` (INIT), ``nulls`` (NULLS),
    ``views`` (GATED); None where no test needs it."""

    settings: Any
    base: Any
    suspect: Any
    xs: Any
    F_A: Any
    F_B: Any
    d_out: int
    init: InitSide | None = None
    nulls: Nulls | None = None
    views: Views | None = None
