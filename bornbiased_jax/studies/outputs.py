"""An experiment's outputs: ``<name>.json``, ``<name>.md`` and ``<name>.png`` under ``args.out``,
written atomically, and its record (the JSON's run info and records) under ``args.records``."""

from __future__ import annotations

import dataclasses
import json
import platform
import time
from pathlib import Path

from bornbiased_jax import io, precision
from bornbiased_jax.studies.render import save_record


def write(args, name: str, settings: dict, records, table_md: str, fig, t0: float) -> None:
    import jax

    out = Path(args.out)
    info = {"experiment": name, "scale": args.scale, "settings": settings,
            "wall_seconds": round(time.time() - t0, 1), "jax": jax.__version__,
            "device": str(jax.devices()[0]), "machine": platform.platform(),
            "matmul_precision": precision.current(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    saved = {"run": info, "records": _plain(records)}
    io.write_json(out / f"{name}.json", saved)
    if getattr(args, "records", None) is not None:
        save_record(args.records, name, saved)
    io.write_text(out / f"{name}.md", f"# {name} ({args.scale} scale)\n\n{table_md}\n"
                  f"Settings: `{json.dumps(settings)}`; {info['wall_seconds']} s on "
                  f"{info['device']}.\n")
    io.save_figure(fig, out / f"{name}.png")
    print(table_md)
    print(f"wrote {out}/{name}.json, .md, .png ({info['wall_seconds']} s)")


def _plain(x):
    import numpy as np

    if dataclasses.is_dataclass(x):
        return _plain(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x
