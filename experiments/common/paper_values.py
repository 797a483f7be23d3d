"""Every value RESULTS.md attributes to the paper, printed as the paper prints it, in one place:
Table 1's rows (top-1 token, frequency, p per part, seed and length) and the N its rows are
counts of, Figure 1a's multiple, Finding 2.2's match rate, Tables 2-7 and the Qwen-style
Tables 9-12, and Figure 12's claim in the paper's words. The studies' rules judge by them and
their rows quote them from here; ``tests/test_paper_values.py`` fails when a claims module
writes one as a literal."""

from __future__ import annotations

# The N the paper's Table 1 rows are counts of, per part (docs/paper-notes.md, *Notes on the
# paper*): 2,000 for RoPE GPT-2 nano (a) and 1.2B (c), 10,000 for LLaMA-2 nano (b)
PAPER_TABLE1_N = {"a": 2_000, "b": 10_000, "c": 2_000}

# The paper's Table 1: (part, seed, T) -> (top-1 id, top-1 frequency, p as printed)
PAPER_TABLE1 = {
    ("a", 42, 64): (6336, 0.026, "4.55e-137"), ("a", 42, 256): (30425, 0.0485, "6.59e-285"),
    ("a", 42, 1024): (666, 0.052, "6.75e-309"), ("a", 43, 64): (7328, 0.030, "2.20e-162"),
    ("a", 43, 256): (7328, 0.0525, "2.42e-312"), ("a", 43, 1024): (7328, 0.0675, "0.00"),
    ("b", 42, 64): (18219, 0.0006, "3.16e-2"), ("b", 42, 256): (19647, 0.0006, "3.16e-2"),
    ("b", 42, 1024): (11048, 0.0007, "1.40e-3"), ("b", 43, 64): (6479, 0.0009, "1.90e-6"),
    ("b", 43, 256): (17743, 0.0006, "3.16e-2"), ("b", 43, 1024): (21436, 0.0007, "1.40e-3"),
    ("c", 42, 64): (23062, 0.0395, "2.57e-224"), ("c", 42, 256): (23062, 0.062, "0.00"),
    ("c", 42, 1024): (23062, 0.0635, "0.00"), ("c", 43, 64): (20694, 0.052, "6.75e-309"),
    ("c", 43, 256): (20694, 0.0745, "0.00"), ("c", 43, 1024): (20694, 0.102, "0.00")}


def paper_table1_range(part: str) -> tuple[float, float]:
    """(lowest, highest) top-1 frequency of the paper's Table 1 part ``part`` ('a', 'b', 'c'),
    over its seeds and lengths (:data:`PAPER_TABLE1`)."""
    f = [freq for (q, _, _), (_, freq, _) in PAPER_TABLE1.items() if q == part]
    if not f:
        raise KeyError(f"Table 1 has no part {part!r}")
    return min(f), max(f)


def paper_table1_summary() -> str:
    """The paper's Table 1 top-1 frequencies per part, as ranges over its seeds and lengths,
    for the rows of other sections that quote them ('nano 2.60-6.75 %, 1.2B 3.95-10.20 % at
    N = 2,000; LLaMA-2 nano 0.06-0.09 % at N = 10,000')."""
    def rng(part):
        lo, hi = paper_table1_range(part)
        return f"{100 * lo:.2f}-{100 * hi:.2f} %"
    n = PAPER_TABLE1_N
    return (f"RoPE GPT-2 nano {rng('a')}, 1.2B {rng('c')} at N = {n['a']:,} (Table 1(a), (c)); "
            f"LLaMA-2 nano {rng('b')} at N = {n['b']:,} (Table 1(b))")


# --- Sec. 3-4 --------------------------------------------------------------------------------
# Figure 1a: the top-1 token is this many times the uniform baseline (Sec. 3)
PAPER_FIGURE1A = 58.5
# Finding 2.2: the contraction direction's top token is the favourite in 76 of 100 models
FINDING22_PAPER = (76, 100)
# Table 2: average pairwise cosine (and p) of full / attention-only / MLP-only models
PAPER_TABLE2 = {"full model": (0.46, "0.00"), "self-attention-only": (1.11e-4, "0.16"),
                "MLP-only": (0.25, "0.00")}
# Table 3: MLP0, MLP0 o MLP0, Attn0 o MLP0 (ReLU)
PAPER_TABLE3 = (0.31, 0.49, 0.98)

# --- Sec. 6.1: SeedPrint -----------------------------------------------------------------------
# Table 4a: (seed a, seed b) -> (t, U), LLaMA-style inits of different seeds
PAPER_TABLE4A = {(42, 2000): (0.357, 0.532), (123, 42): (0.678, 0.565),
                 (1000, 123): (0.363, 0.335), (2000, 1000): (0.434, 0.481)}
# Tables 4b and 8: seed -> (t, U, Intrinsic, REEF, PCS, ICS), init vs its trained descendant
PAPER_TABLE4B_8 = {42: (2.20e-8, 6.28e-8, -0.021, 0.375, 0.580, 0.196),
                   123: (7.09e-6, 1.37e-5, 0.149, 0.369, 0.581, 0.188),
                   1000: (5.58e-4, 2.81e-3, -0.252, 0.381, 0.581, 0.188),
                   2000: (4.00e-10, 1.27e-9, -0.337, 0.331, 0.581, 0.188)}
# Table 4c: (init seed, trained seed) -> (t, U), same data and order
PAPER_TABLE4C = {(123, 1000): (0.385, 0.486), (1000, 2000): (0.035, 0.096),
                 (42, 123): (0.426, 0.337), (2000, 42): (0.388, 0.287)}
# Table 5: continued run -> (t, U, Intrinsic, REEF, PCS, ICS); a printed "0" is an underflow
PAPER_TABLE5 = {"cont-prose-s1000": (0.0, 7.77e-89, 1.000, 0.759, 0.999, 0.996),
                "cont-prose-s123": (0.943, 0.902, 0.950, 0.658, 0.332, 0.012),
                "cont-code-s1000": (0.0, 3.09e-69, 0.489, 0.557, 0.585, 0.123),
                "cont-code-s123": (0.732, 0.831, 0.445, 0.580, 0.301, 0.026)}
# Table 6: suspect -> (fine-tuning tokens, U p as printed), each against LLaMA-2-7B
PAPER_TABLE6 = {"Llama-2-finance-7B": ("5M", "1.34e-41"), "Vicuna-1.5-7B": ("370M", "1.49e-96"),
                "Wizardmath-7B": ("1.8B", "4.09e-100"), "Meditron-7B": ("48B", "5.212e-4"),
                "CodeLlama-7B": ("500B", "2.008e-3")}
# Qwen-style (App. B.3.3): Table 9 (inits), 10 (own), 11 (cross), 12 (continued)
PAPER_TABLE9 = {(123, 1000): (0.094, 0.074), (1000, 123): (0.125, 0.094),
                (42, 2000): (0.451, 0.529), (2000, 42): (0.130, 0.095)}
PAPER_TABLE10 = {123: (7.36e-15, 3.38e-13), 1000: (4.41e-13, 2.01e-11),
                 42: (1.06e-24, 2.05e-19), 2000: (4.87e-24, 1.92e-20)}
PAPER_TABLE11 = {(123, 1000): (0.286, 0.254), (1000, 123): (0.036, 0.040),
                 (42, 2000): (0.026, 0.043), (2000, 42): (0.112, 0.123)}
PAPER_TABLE12 = {"cont-prose-s1000": (8.49e-214, 5.09e-71, 1.000, 0.957, 0.999, 0.996),
                 "cont-prose-s123": (0.256, 0.065, 0.913, 0.199, 0.328, 0.039),
                 "cont-code-s1000": (1.16e-211, 2.30e-76, 0.999, 0.313, 0.995, 0.976),
                 "cont-code-s123": (0.610, 0.491, 0.916, 0.255, 0.328, 0.038)}

# --- Sec. 6.2: attention sinks -----------------------------------------------------------------
# Table 7: arm -> (WikiText-2 PPL, C4 PPL)
PAPER_TABLE7 = {"baseline": (21.33, 30.36), "amplification": (21.95, 28.70),
                "attenuation": (21.02, 30.48)}
# Figure 12's baseline, in the paper's words (Sec. 6.2.1)
FIGURE12_BASELINE = ("the Baseline model consistently exhibits a significant sink rate across "
                     "all sequence lengths")


def paper_table6_range() -> str:
    """Table 6's U-test p-values as a range, the smallest to the largest as printed
    ('4.09e-100 .. 2.008e-3')."""
    ps = sorted(PAPER_TABLE6.values(), key=lambda v: float(v[1]))
    return f"{ps[0][1]} .. {ps[-1][1]}"


def paper_table1_p_range(part: str) -> str:
    """The p-values of Table 1 part ``part`` as printed, smallest to largest ('1.90e-6 ..
    3.16e-2' for LLaMA-2); where the paper prints 0.00 (an underflow), the largest and below."""
    ps = sorted((p for (q, _, _), (_, _, p) in PAPER_TABLE1.items() if q == part), key=float)
    if float(ps[0]) == 0:
        return f"{ps[-1]} and below (0.00 where it underflows)"
    return f"{ps[0]} .. {ps[-1]}"


def printed(x: float, digits: int = 3) -> str:
    """``x`` in scientific notation as the paper prints its small values: ``digits``
    significant digits and the exponent without padding (1.11e-4)."""
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"
