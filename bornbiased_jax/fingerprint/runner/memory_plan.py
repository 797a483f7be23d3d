"""Before a comparison loads anything: will the two models fit, and how much work is it?

The Table 6 setting compares two 7B checkpoints (e.g. LLaMA-2-7B and a fine-tune). ``compare``
holds both models' parameters on the device at once, then runs each on the probe inputs in
batches (``sweep.run_probe`` sizes the batches to the memory budget; where the matched test
reads sequences of at most 68 tokens, one pass gives both the features and the MLP views: the
views probe on the first ``defaults.MATCHED_SEQS`` sequences, the feature probe on the rest). From the configs alone
(``sources.source_config`` reads a preset, a run's run.json or an HF config.json, no weights):

  weights      = (P_base + P_suspect) x bytes per parameter (2 in bfloat16, 4 in float32),
                 or P_base in that dtype + P_base in float32 while the aligned test reads
                 BASE's initialisation (in float32, like its null initialisations), if larger;
  work         = forward FLOPs of each model on n sequences of T tokens (``flops``), and of
                 the aligned or calibrated test's K null initialisations (and BASE's
                 initialisation), built and run in float32 by the sweep engine;
  device       = the accelerator's memory (XLA's ``bytes_limit``), or the host's on a CPU;
  matched      = for the matched tests (gated MLPs), the MLP pre-activations kept on the host
                 in float32: R rows (``matched_rows``: sequences x positions read, sink
                 positions dropped) x F units x 2 views x L layers per model, for BASE (kept
                 for every suspect), the suspect and, for matched_init, BASE's
                 initialisation, and BASE's once more, transposed, while a pair is matched
                 (``unit_matching._prepare``); on the device, per matching running (two at
                 once: ``kernels.WORKERS``), its two views and the F x F correlations;
                 then per suspect about 2L products of R x F by R x F
                 (2 R F^2 FLOP each: the layer pairs the screen chooses) matching reciprocal
                 best partners, and the layer screen (``unit_matching.screen``).

The comparison is refused before any loading when the weights (and the matched test's
matchings) leave less than ``ACTIVATION_RESERVE`` of the device for the forward
pass and the features; the time is an
estimate at an assumed rate (stated), not a measurement.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.flops import forward_flops
from bornbiased_jax.fingerprint.methods.kernels import WORKERS

DTYPE_BYTES = {"float32": 4, "bfloat16": 2}
ACTIVATION_RESERVE = 0.2  # share of the device kept free for activations and features
# Assumed sustained rates for the time estimate (FLOP/s): 40 % of the dense peak of the
# precision used; an unknown device gets no time estimate.
PEAK = {("h100", "bfloat16"): 989e12, ("h100", "float32"): 67e12,
        ("h200", "bfloat16"): 989e12, ("h200", "float32"): 67e12,
        ("a100", "bfloat16"): 312e12, ("a100", "float32"): 19.5e12}
SUSTAINED = 0.4


def param_count(cfg: ModelConfig) -> int:
    """Parameters of ``model.init(cfg)``, counted from the config by abstract evaluation."""
    import jax

    from bornbiased_jax import model

    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(model.param_shapes(cfg))))


@dataclasses.dataclass(frozen=True)
class Plan:
    params_base: int
    params_suspect: int
    dtype: str
    weight_bytes: int
    flops: float
    device: str
    device_bytes: int
    seconds: float | None
    null_models: int = 0
    matched_host_bytes: int = 0
    matched_device_bytes: int = 0
    matched_flops: float = 0.0
    matched_units: int = 0

    @property
    def fits(self) -> bool:
        """Whether the weights and the matched test's matchings leave the device
        ``ACTIVATION_RESERVE`` for the forward pass and the features."""
        return (self.weight_bytes + self.matched_device_bytes
                <= (1 - ACTIVATION_RESERVE) * self.device_bytes)

    def describe(self) -> str:
        gb = 1e9
        t = (f"~{self.seconds:.2g} s at an assumed {SUSTAINED:.0%} of the device's "
             f"{self.dtype} peak" if self.seconds is not None else "time: no rate known for "
             "this device")
        return (f"plan: base {_count(self.params_base)} + suspect "
                f"{_count(self.params_suspect)} parameters in {self.dtype} = "
                f"{self.weight_bytes / gb:.3g} GB held at once, on {self.device} with "
                f"{self.device_bytes / gb:.3g} GB; forward work {self.flops / 1e12:.3g} TFLOP"
                + (f" (with {self.null_models} null initialisations in float32)"
                   if self.null_models else "") + f"; {t}"
                + (f"; matched test: {self.matched_host_bytes / gb:.3g} GB of MLP "
                   f"pre-activations on the host, {self.matched_device_bytes / gb:.3g} GB on "
                   f"the device for the matchings running, "
                   f"{self.matched_flops / 1e12:.3g} TFLOP of "
                   f"unit correlations per suspect, {self.matched_units} units per layer "
                   f"matched as reciprocal best partners" if self.matched_host_bytes else ""))


def _count(p: int) -> str:
    """'6.74B', '166k' parameters."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if p >= size:
            return f"{p / size:.3g}{unit}"
    return str(p)


def device_memory() -> tuple[str, int]:
    """(description, bytes) of the first device: an accelerator's XLA limit, else host RAM."""
    import jax

    dev = jax.devices()[0]
    stats = dev.memory_stats() if dev.platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        return f"{dev.device_kind}", int(stats["bytes_limit"])
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return "the host CPU", int(host)


def make_plan(base: ModelConfig, suspect: ModelConfig, n: int, T: int, dtype: str,
              device: tuple[str, int] | None = None, *, null_models: int = 0,
              reads_init: bool = False, matched_models: int = 0, matched_rows: int = 0) -> Plan:
    """``null_models``: fresh initialisations the calibrated or aligned test runs;
    ``reads_init``: the aligned test loads BASE's initialisation (float32) beside BASE;
    ``matched_models``: models whose MLP pre-activations the matched tests keep (0: none run),
    each on ``matched_rows`` rows."""
    if dtype not in DTYPE_BYTES:
        raise UserError(f"dtype {dtype!r} is not supported; use one of {sorted(DTYPE_BYTES)}")
    pb, ps = param_count(base), param_count(suspect)
    name, avail = device or device_memory()
    nulls = null_models + (1 if reads_init else 0)
    flops_models = float(n) * (forward_flops(base, T) + forward_flops(suspect, T))
    flops_nulls = float(n) * nulls * forward_flops(base, T)

    def rate(dt):
        peak = next((v for (kind, d), v in PEAK.items() if kind in name.lower() and d == dt),
                    None)
        return SUSTAINED * peak if peak else None

    seconds = (flops_models / rate(dtype) + flops_nulls / rate("float32")
               if rate(dtype) and rate("float32") else None)
    held = max(pb + ps, pb + (pb * 4 // DTYPE_BYTES[dtype] if reads_init else 0))
    F, L = base.d_ff, base.n_layers
    return Plan(pb, ps, dtype, held * DTYPE_BYTES[dtype], flops_models + flops_nulls, name,
                avail, seconds, null_models,
                matched_host_bytes=(matched_models + 1) * matched_rows * F * 2 * L * 4
                if matched_models else 0,
                matched_device_bytes=(WORKERS * (2 * matched_rows * F + 3 * F * F) * 4
                                      if matched_models else 0),
                matched_flops=float(2 * L * 2 * matched_rows * F * F) if matched_models else 0.0,
                matched_units=F if matched_models else 0)


def check(plan: Plan) -> None:
    """A UserError, before anything is loaded, when the two models cannot be held at once."""
    if plan.fits:
        return
    need = (plan.weight_bytes + plan.matched_device_bytes) / (1 - ACTIVATION_RESERVE) / 1e9
    hint = ("; --dtype bfloat16 halves it" if plan.dtype == "float32" else "")
    views = (f" and {plan.matched_device_bytes / 1e9:.3g} GB for the matched test's "
             f"matchings" if plan.matched_device_bytes else "")
    raise UserError(f"the two models need {plan.weight_bytes / 1e9:.3g} GB of weights held at "
                    f"once{views} (about {need:.3g} GB with room for the forward pass), but "
                    f"{plan.device} has {plan.device_bytes / 1e9:.3g} GB{hint}; run on a "
                    f"larger device")
