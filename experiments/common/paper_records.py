"""The paper-scale records: where they live (results/records/paper/<study>/<name>.json,
beside the CPU-scale ones), which study each belongs to, and their one writer. The campaign's
pieces (:mod:`experiments.campaign.paper_pieces`) and the initialisation study's simulated
Figure 3 null (:mod:`experiments.initialisation.unembedding_null`) write them; RESULTS.md's
renderer reads them."""

from __future__ import annotations

import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "results" / "records" / "paper"

# paper-scale record name -> its study's folder under results/records/paper/
PAPER_RECORDS = {"table1a": "initialisation", "table1b": "initialisation",
                 "table1b_n10k": "initialisation",
                 "table1c": "initialisation", "figure1": "initialisation",
                 "figure2_finding22": "initialisation", "table2_figure3": "initialisation",
                 "figure7": "initialisation", "table1a_seeds": "initialisation",
                 "figure3_null": "initialisation", "table4a": "seedprint",
                 "table1c_t256": "initialisation", "table1c_t1024": "initialisation",
                 "table1b_n10k_t1024": "initialisation",
                 "table4a_n10k": "seedprint", "figure10": "initialisation",
                 "figure8": "initialisation", "gemma3_init_n10k": "gemma3"}


def shape(cfg) -> dict:
    """The model's shape as a paper-scale record's settings name it."""
    return {"preset": cfg.name, "layers": cfg.n_layers, "heads": cfg.n_heads,
            "d_model": cfg.d_model, "d_ff": cfg.d_ff, "vocab_size": cfg.vocab_size}


def save(records_root: Path, name: str, settings: dict, records, seconds: float,
         command: str, t0: float) -> Path:
    """One paper-scale record: the run description (settings with the shape, N, T and seeds;
    the compute seconds summed over every attempt; this attempt's wall time) and the records,
    their paths :func:`~experiments.artifacts.portable`."""
    import json

    from bornbiased_jax import files
    from experiments.artifacts import plain, portable

    run = files.run_record(command, time.time() - t0, experiment=name, scale="paper",
                           settings=settings, compute_seconds=seconds)
    f = Path(records_root) / PAPER_RECORDS[name] / f"{name}.json"
    files.write_text(f, json.dumps(portable({"run": run, "records": plain(records)}),
                                   separators=(",", ":")) + "\n")
    return f
