"""RoPE's rotation angles, unscaled and scaled (:class:`~bornbiased_jax.config.RopeScaling`).

A head of size K rotates K/2 pairs of coordinates; pair i turns by ``position * inv_freq[i]``,
with inv_freq[i] = theta^(-2i/K) unscaled. The scaled variants of released checkpoints change
these frequencies, some depending on the sequence length T, and two multiply cos and sin by an
``attention_factor`` (so the attention logits by its square). Each function below follows
transformers' ``modeling_rope_utils`` (the ``_compute_*_parameters`` of each rope_type) and is
computed here on the host in float64 (transformers: float32), once per length T:

  ========  ==========================================================================
  linear    inv_freq / factor
  dynamic   NTK: theta * (factor T / T_max - (factor - 1))^(K / (K - 2)) once T > T_max
            (the model's ``max_seq_len``, HF's max_position_embeddings); unscaled at
            T <= T_max, so within the lengths a model accepts it is the unscaled RoPE
  llama3    Llama 3.1's: wavelengths 2 pi / inv_freq above original / low_freq_factor
            divided by ``factor``, below original / high_freq_factor kept, a linear ramp in
            original / wavelength between
  yarn      inv_freq blended between inv_freq / factor (interpolated, low frequencies) and
            inv_freq (extrapolated, high) by a linear ramp over the pairs between the
            correction dims of beta_fast and beta_slow rotations in the original length
            (floored / ceiled with ``truncate``); cos, sin times attention_factor
  longrope  Phi-3's: inv_freq / short_factor[i] while T <= original, / long_factor[i]
            beyond; cos, sin times attention_factor
  ========  ==========================================================================
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np

from bornbiased_jax.errors import UserError

RopeKind = Literal["linear", "dynamic", "yarn", "llama3", "longrope"]


@dataclasses.dataclass(frozen=True)
class RopeScaling:
    """A scaled RoPE (HF's ``rope_type`` other than "default"), its parameters resolved: every
    value that HF derives when a config leaves it out is filled in by the architecture record
    that reads the config (``bornbiased_jax.architectures.rope``), so this record alone fixes
    the rotation angles. The functions below compute them.

    kind: "linear" (every frequency / ``factor``), "dynamic" (NTK: the base grows once T
      exceeds the model's ``max_seq_len``; unscaled below), "yarn" (frequencies blended between
      interpolated and extrapolated by a linear ramp over ``beta_fast``..``beta_slow``
      rotations, cos and sin times ``attention_factor``), "llama3" (Llama 3.1's: low
      frequencies / ``factor``, high ones kept, a smooth ramp between, set by
      ``low_freq_factor``, ``high_freq_factor`` and ``original_max_position_embeddings``),
      "longrope" (Phi-3's: per-frequency divisors, ``short_factor`` while T <=
      ``original_max_position_embeddings``, ``long_factor`` beyond; cos, sin times
      ``attention_factor``).
    """

    kind: RopeKind
    factor: float | None = None
    original_max_position_embeddings: int | None = None
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    beta_fast: float | None = None
    beta_slow: float | None = None
    truncate: bool | None = None
    attention_factor: float | None = None
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None

    # what each kind needs (every other field must be None)
    NEEDS = {"linear": ("factor",), "dynamic": ("factor",),
             "yarn": ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow",
                      "truncate", "attention_factor"),
             "llama3": ("factor", "low_freq_factor", "high_freq_factor",
                        "original_max_position_embeddings"),
             "longrope": ("short_factor", "long_factor", "original_max_position_embeddings",
                          "attention_factor")}

    def __post_init__(self):
        for f in ("short_factor", "long_factor"):
            v = getattr(self, f)
            if v is not None and not isinstance(v, tuple):
                object.__setattr__(self, f, tuple(float(x) for x in v))
        if self.kind not in self.NEEDS:
            raise UserError(f"RoPE scaling kind {self.kind!r} is not implemented; implemented: "
                            f"{', '.join(self.NEEDS)}")
        need = self.NEEDS[self.kind]
        fields = [f.name for f in dataclasses.fields(self) if f.name != "kind"]
        missing = [f for f in need if getattr(self, f) is None]
        extra = [f for f in fields if f not in need and getattr(self, f) is not None]
        if missing or extra:
            raise UserError(f"RoPE scaling {self.kind!r} takes exactly {', '.join(need)}; "
                            + (f"missing {', '.join(missing)}" if missing else "")
                            + ("; " if missing and extra else "")
                            + (f"{', '.join(extra)} do not belong to it" if extra else ""))
        for f in ("factor", "attention_factor", "low_freq_factor", "high_freq_factor",
                  "beta_fast", "beta_slow"):
            v = getattr(self, f)
            if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool)
                                      and v > 0):
                raise UserError(f"RoPE scaling {self.kind!r}: {f} must be a number > 0, "
                                f"got {v!r}")
        if self.original_max_position_embeddings is not None \
                and not _positive_int(self.original_max_position_embeddings):
            raise UserError(f"RoPE scaling {self.kind!r}: original_max_position_embeddings must "
                            f"be a positive integer, got {self.original_max_position_embeddings!r}")
        if self.kind == "llama3" and not self.high_freq_factor > self.low_freq_factor:
            raise UserError(f"RoPE scaling 'llama3' needs high_freq_factor > low_freq_factor, got "
                            f"{self.high_freq_factor} and {self.low_freq_factor}")
        if self.kind == "longrope" and len(self.short_factor) != len(self.long_factor):
            raise UserError("RoPE scaling 'longrope': short_factor and long_factor must have one "
                            "entry per rotated pair each (head_dim / 2)")

    def record(self) -> dict:
        """The fields that are set, for records (lists for the factor tuples)."""
        return {f.name: (list(v) if isinstance(v, tuple) else v)
                for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None}





def _positive_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def inv_freq(K: int, theta: float, scaling: RopeScaling | None = None, T: int = 0,
             max_positions: int | None = None) -> tuple[np.ndarray, float]:
    """(inv_freq (K/2,) float64, attention_factor) of a head of size K, base ``theta``, at
    sequence length T (the length decides for "dynamic" and "longrope"); ``max_positions`` is
    the model's ``max_seq_len``, which "dynamic" scales from."""
    base = 1.0 / theta ** (np.arange(0, K, 2, dtype=np.float64) / K)
    if scaling is None:
        return base, 1.0
    kind = scaling.kind
    if kind == "linear":
        return base / scaling.factor, 1.0
    if kind == "dynamic":
        if max_positions is None or T <= max_positions:
            return base, 1.0
        f = scaling.factor
        grown = theta * ((f * T / max_positions) - (f - 1)) ** (K / (K - 2))
        return 1.0 / grown ** (np.arange(0, K, 2, dtype=np.float64) / K), 1.0
    if kind == "llama3":
        return _llama3(base, scaling), 1.0
    if kind == "yarn":
        return _yarn(K, theta, scaling), float(scaling.attention_factor)
    if kind == "longrope":
        orig = scaling.original_max_position_embeddings
        ext = np.asarray(scaling.long_factor if T > orig else scaling.short_factor, np.float64)
        return base / ext, float(scaling.attention_factor)
    raise AssertionError(kind)


def _llama3(base: np.ndarray, s: RopeScaling) -> np.ndarray:
    orig, low, high = s.original_max_position_embeddings, s.low_freq_factor, s.high_freq_factor
    wavelen = 2 * math.pi / base
    scaled = np.where(wavelen > orig / low, base / s.factor, base)
    smooth = (orig / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled
    medium = ~(wavelen < orig / high) & ~(wavelen > orig / low)
    return np.where(medium, smoothed, scaled)


def _yarn(K: int, theta: float, s: RopeScaling) -> np.ndarray:
    def correction_dim(rotations: float) -> float:
        return (K * math.log(s.original_max_position_embeddings / (rotations * 2 * math.pi))
                / (2 * math.log(theta)))

    low, high = correction_dim(s.beta_fast), correction_dim(s.beta_slow)
    if s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, K - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    ramp = np.clip((np.arange(K // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrapolated = 1.0 / theta ** (np.arange(0, K, 2, dtype=np.float64) / K)
    interpolated = extrapolated / s.factor
    keep = 1 - ramp  # the extrapolation's share
    return interpolated * (1 - keep) + extrapolated * keep


def llama3_factors(K: int, theta: float, s: RopeScaling) -> np.ndarray:
    """The per-pair divisor of inv_freq that Llama 3's scaling applies (base / scaled), as
    llama.cpp's GGUF converter stores it in ``rope_freqs.weight``."""
    base = 1.0 / theta ** (np.arange(0, K, 2, dtype=np.float64) / K)
    return base / _llama3(base, s)


def fit_llama3(factors: np.ndarray, K: int, theta: float,
               original: int) -> RopeScaling | None:
    """The "llama3" :class:`RopeScaling` whose :func:`llama3_factors` are ``factors`` (a GGUF
    file's ``rope_freqs``), or None when no such scaling gives them to float32 precision.

    Only the two wavelengths original / low_freq_factor and original / high_freq_factor fix
    the scaling, so ``original`` (the GGUF's original context length, or Llama 3's 8,192) is
    taken as given and the factors are read off the pairs, in units x = original /
    wavelength: a kept pair (divisor 1) lies above high_freq_factor, a divided one (divisor
    ``factor``) below low_freq_factor, and a pair on the ramp between, where
    1 / f = (1 - s) / factor + s with s = (x - low) / (high - low). Two or more ramp pairs give
    low and high; one gives their relation, and the thresholds are then placed within the
    room the other pairs leave (every such choice gives the same divisors)."""
    f = np.asarray(factors, np.float64)
    factor = float(f.max())
    if not factor > 1:
        return None
    base = 1.0 / theta ** (np.arange(0, K, 2, dtype=np.float64) / K)
    x = original * base / (2 * math.pi)  # original / wavelength
    kept, divided = f <= 1 + 1e-6, f >= factor * (1 - 1e-6)
    ramp = ~kept & ~divided
    s = (1 / f - 1 / factor) / (1 - 1 / factor)  # the ramp's position, on ramp pairs
    below = float(x[divided].max()) if divided.any() else 0.0  # low must exceed these
    above = float(x[kept].min()) if kept.any() else math.inf  # high must stay under these
    if ramp.sum() >= 2:  # s = (x - low) / (high - low): a line through the ramp pairs
        slope, icpt = np.polyfit(x[ramp], s[ramp], 1)
        low, high = -icpt / slope, (1 - icpt) / slope
    elif ramp.sum() == 1:
        xr, sr = float(x[ramp][0]), float(s[ramp][0])
        high = (xr + above) / 2 if math.isfinite(above) else 2 * xr
        low = (xr - sr * high) / (1 - sr)
        if not low > below:  # move high towards xr until low clears the divided pairs
            low = (below + xr) / 2
            high = low + (xr - low) / sr
    else:  # no pair on the ramp: thresholds anywhere between the kept and the divided pairs
        if not math.isfinite(above):
            return None
        low, high = (2 * below + above) / 3, (below + 2 * above) / 3
    try:
        fit = RopeScaling("llama3", factor=factor, low_freq_factor=float(low),
                          high_freq_factor=float(high), original_max_position_embeddings=original)
    except UserError:
        return None
    ok = np.allclose(llama3_factors(K, theta, fit), f, rtol=1e-5, atol=0)
    return fit if ok else None


def cos_sin(T: int, K: int, theta: float, scaling: RopeScaling | None = None,
            max_positions: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin tables (T, K) float32 in the HF LLaMA layout (halves, not interleaved), times
    the scaling's attention factor."""
    freq, factor = inv_freq(K, theta, scaling, T, max_positions)
    ang_TK2 = np.arange(T, dtype=np.float64)[:, None] * freq[None, :]
    ang_TK = np.concatenate([ang_TK2, ang_TK2], axis=-1)
    return ((factor * np.cos(ang_TK)).astype(np.float32),
            (factor * np.sin(ang_TK)).astype(np.float32))
