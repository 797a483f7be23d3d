"""The paper's printed values that more than one study quotes: Table 1's rows (top-1 token,
frequency, p per part, seed and length) and the N its rows are counts of. The initialisation
study's Table 1 rules judge by them; the real-model study quotes their ranges beside a trained
model's token preference."""

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
