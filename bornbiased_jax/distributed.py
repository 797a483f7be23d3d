"""Many processes, one program: JAX's multi-controller runtime for sweeps and training.

A run across hosts starts one process per host (or per GPU); each process sees its own devices
(``jax.local_devices()``) and every device (``jax.devices()``), and all processes run the same
sequence of compiled programs on *global* arrays sharded over all devices. This module is what
the commands need for that, and nothing runs differently when there is one process:

* :func:`resolve` / :func:`initialize` start ``jax.distributed`` when explicit flags
  (``--coordinator HOST:PORT --num-processes P --process-id I``) or a cluster that JAX itself
  recognises (SLURM, Open MPI, Kubernetes, Cloud TPU pod slices) say the run has several
  processes, and do nothing otherwise;
* :func:`is_writer`: process 0 alone writes results, run descriptions, metrics and plots
  (checkpoints are written by every process, each its own shards, through Orbax);
* :func:`global_array` builds an array sharded over all processes' devices from a host value
  every process holds; :func:`to_host` gathers a global array back to host numpy on every
  process (``multihost_utils.process_allgather``);
* :func:`broadcast_bytes` and :func:`same_on_all_processes` make process 0's choice every
  process's choice (a tokenizer, a plan), so that the processes cannot silently diverge.

On CPUs the processes' collectives go through gloo (``jax_cpu_collectives_implementation``,
JAX's default), which is how the tests run two real processes on one machine.
"""

from __future__ import annotations

import dataclasses
import socket
import sys
import time
from typing import Any

import jax
import numpy as np

from bornbiased_jax.defaults import INIT_TIMEOUT_S as DEFAULT_INIT_TIMEOUT_S
from bornbiased_jax.errors import UserError


@dataclasses.dataclass(frozen=True)
class Launch:
    """How this process joins a multi-process run: ``source`` is 'flags' or the name of the
    cluster JAX detected; ``coordinator`` and ``process_id`` are None when JAX's detection
    supplies them."""

    num_processes: int
    process_id: int | None
    coordinator: str | None
    source: str


def resolve(coordinator: str | None = None, num_processes: int | None = None,
            process_id: int | None = None) -> Launch | None:
    """The multi-process launch that flags or the environment ask for; None for a
    single-process run. Reads the environment only; connects to nothing."""
    flags = (coordinator, num_processes, process_id)
    if any(f is not None for f in flags):
        if any(f is None for f in flags):
            raise UserError("a multi-process run needs all three of --coordinator HOST:PORT, "
                            "--num-processes P and --process-id I (or none of them)")
        _split_address(coordinator)
        if num_processes < 1:
            raise UserError(f"--num-processes must be >= 1, got {num_processes}")
        if not 0 <= process_id < num_processes:
            raise UserError(f"--process-id must lie in [0, {num_processes}) for "
                            f"--num-processes {num_processes}, got {process_id}")
        if num_processes == 1:
            return None
        return Launch(num_processes, process_id, coordinator, "flags")
    env = _detected_cluster()
    if env is None:
        return None
    n = int(env.get_process_count())
    return Launch(n, None, None, env.name or env.__name__) if n > 1 else None


def _detected_cluster():
    """The cluster environment JAX's own ``jax.distributed.initialize()`` would pick, or None.

    JAX keeps its detectors in a private module; without it (a future JAX) only the explicit
    flags start a multi-process run."""
    try:
        from jax._src.clusters import ClusterEnv
    except ImportError:
        return None
    return next((env for env in ClusterEnv._cluster_types
                 if not env.opt_in_only_method and env.is_env_present()), None)


def initialize(launch: Launch | None, timeout_s: float = DEFAULT_INIT_TIMEOUT_S) -> bool:
    """Join the multi-process run ``launch`` describes (nothing for None); True if joined.

    Must run before any JAX computation. A process other than 0 first waits for the
    coordinator's port to accept connections, for at most ``timeout_s``: JAX's own client
    aborts the whole process with a bare DEADLINE_EXCEEDED when it cannot connect, so an
    unreachable coordinator is reported here instead, as a UserError."""
    if launch is None:
        return False
    if jax.distributed.is_initialized():  # joined already (main() called again in-process)
        return True
    if timeout_s <= 0:
        raise UserError(f"--init-timeout must be positive, got {timeout_s}")
    deadline = time.monotonic() + timeout_s
    if launch.coordinator is not None and launch.process_id != 0:
        _wait_for_port(launch.coordinator, timeout_s)
    print(f"bornbiased: process {launch.process_id if launch.process_id is not None else '?'} "
          f"of {launch.num_processes} ({launch.source}) joining "
          f"{launch.coordinator or 'the detected coordinator'}; waiting up to {timeout_s:.0f} s "
          f"for all processes", file=sys.stderr, flush=True)
    remaining = max(1, int(round(deadline - time.monotonic())))
    jax.distributed.initialize(coordinator_address=launch.coordinator,
                               num_processes=launch.num_processes,
                               process_id=launch.process_id,
                               initialization_timeout=remaining)
    return True


def _split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--coordinator {address!r} is not HOST:PORT (e.g. node001:12345 or "
                        f"[::1]:12345, a port in 1..65535)")
    return host.strip("[]"), int(port)


def _wait_for_port(address: str, timeout_s: float) -> None:
    """Return once ``address`` accepts a TCP connection; a UserError after ``timeout_s``."""
    host, port = _split_address(address)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=min(1.0, timeout_s)):
                return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise UserError(
                    f"the coordinator {address} did not answer within {timeout_s:g} s "
                    f"({e.strerror or e}): start process 0 with the same --coordinator, check "
                    f"the host name and that the port is open between the hosts, or raise "
                    f"--init-timeout") from None
            time.sleep(0.2)


# --- within a run --------------------------------------------------------------------------
def process_count() -> int:
    return jax.process_count()


def is_writer() -> bool:
    """True in the process that writes results (process 0; the only one when alone)."""
    return jax.process_index() == 0


def global_array(x, sharding: jax.sharding.Sharding) -> jax.Array:
    """A host value that every process holds identically, placed with ``sharding``: each
    process puts only the pieces its own devices hold (``make_array_from_callback``)."""
    x = np.asarray(x)
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def to_host(tree: Any) -> Any:
    """Every leaf as host numpy, the whole global value in every process: arrays spread over
    several processes are gathered (``multihost_utils.process_allgather``)."""
    from jax.experimental import multihost_utils

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(one, tree)


def broadcast_bytes(data: bytes | None) -> bytes:
    """Process 0's ``data`` in every process (other processes may pass None)."""
    if jax.process_count() == 1:
        return data
    from jax.experimental import multihost_utils

    first = jax.process_index() == 0
    n = int(multihost_utils.broadcast_one_to_all(np.int64(len(data) if first else 0)))
    buf = np.frombuffer(data, np.uint8) if first else np.zeros(n, np.uint8)
    return bytes(np.asarray(multihost_utils.broadcast_one_to_all(buf), np.uint8))


def processes_differing(data: bytes) -> list[int]:
    """The processes whose ``data`` differs from process 0's (the same list in every process,
    so that all of them can stop together)."""
    if jax.process_count() == 1:
        return []
    import hashlib

    from jax.experimental import multihost_utils

    digest = np.frombuffer(hashlib.sha256(data).digest(), np.uint8)
    all_PD = np.asarray(multihost_utils.process_allgather(digest))  # (processes, 32)
    return [int(p) for p in np.flatnonzero((all_PD != all_PD[0]).any(axis=1))]


def same_on_all_processes(values: tuple[int, ...]) -> tuple[int, ...]:
    """Process 0's integers in every process (e.g. a plan measured on each host, which must
    be one plan for one program)."""
    if jax.process_count() == 1:
        return values
    from jax.experimental import multihost_utils

    got = multihost_utils.broadcast_one_to_all(np.asarray(values, np.int64))
    return tuple(int(v) for v in np.asarray(got))
