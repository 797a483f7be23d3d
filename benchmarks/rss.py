"""Resident-set measurements shared by the memory benchmarks (Linux ``/proc``).

  * ``rss_mb``: this process's resident set now (VmRSS);
  * ``peak_rss_mb``: its high-water mark (VmHWM, the ``getrusage`` maximum), since the start or
    since the last ``reset_peak`` (which sets it back to the current resident set, so the peak
    of one phase, e.g. a sweep after its warm-up, can be read alone);
  * ``chunk_trace``: the resident set and live JAX arrays after each seed chunk of a sweep;
  * ``run_child``: one measurement in a fresh Python process, read back as its last JSON line.
"""

from __future__ import annotations

import contextlib
import json
import resource
import subprocess
import sys


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    return _status_mb("VmRSS")


def peak_rss_mb() -> float:
    """The resident set's high-water mark in MB (since the start or the last reset_peak)."""
    hwm = _status_mb("VmHWM")
    return hwm if hwm == hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> bool:
    """Reset VmHWM to the current resident set (Linux >= 4.0); False where that is refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


@contextlib.contextmanager
def chunk_trace():
    """Within the block, every sweep records (RSS MB, live JAX arrays) after each seed chunk
    has been released; yields the list the records go to."""
    import jax

    from bornbiased_jax import sweep as sw

    trace, release = [], sw._release_freed_memory

    def traced_release():
        release()
        trace.append((round(rss_mb()), len(jax.live_arrays())))

    sw._release_freed_memory = traced_release
    try:
        yield trace
    finally:
        sw._release_freed_memory = release


def run_child(argv: list[str]) -> dict:
    """Run ``python argv...`` and return the JSON object on its last line of output; exit with
    its error output if it fails."""
    out = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])
