"""Sec. 3-4 at the paper's own shapes, as resumable forward passes that a CPU can finish.

Nothing in the initialisation study trains: every row is forward passes of random networks on
random inputs. Each *piece* below runs the sweep engine with a state folder
(:mod:`bornbiased_jax.resume`): every finished chunk of sequences is saved at once, so a piece
stopped at any moment (the machine going away, a time limit, SIGKILL) resumes from its last chunk when
the same command runs again, and finishes bitwise equal to an uninterrupted run.

    python -m experiments paper_scale --list                 # pieces, sizes, what is done
    python -m experiments paper_scale table1a                # run (or resume) one piece
    python -m experiments paper_scale figure10 --so-far      # its record from the blocks done

Pieces and the records they write (under ``--records``, default results/records/paper/):

  table1a   GPT-2+RoPE nano (12L, 12H, 768d), seeds 42, 43, T = 64, 256, 1,024, N = 2,000:
            initialisation/table1a.json; its seed-42, T = 64 row gives Figure 1a
            (figure1.json; the paper states neither the seed nor T of its 58.5x:
            ``initialisation.claims.paper_figure1a_frequencies``), and its
            per-block last-token states at T = 1,024 give Figure 2 (figure2_finding22.json)
  table1b   LLaMA-2 nano, the same: initialisation/table1b.json
  table1b-n10k  LLaMA-2 nano, seeds 42, 43, T = 64, 256, N = 10,000, the N of the paper's
            Table 1(b) rows: initialisation/table1b_n10k.json
  table1a-seeds  GPT-2+RoPE nano, 20 more seeds (44-63), each with its own embedding and LM
            head draw, T = 64, N = 2,000: initialisation/table1a_seeds.json, the spread
            between networks against which the paper's Table 1(a) frequencies (and our seeds
            42, 43) are ranked
  table2    full / attention-only / MLP-only GPT-2+RoPE nano, seed 42, Gaussian inputs,
            T = 1,024, N = 2,000: initialisation/table2_figure3.json and figure7.json
            (Figure 3's null, the top-1 counts of isotropic final states through the same
            model's final norm and unembedding, is no forward pass and no piece: `python -m
            experiments figure3_null --scale paper` writes initialisation/figure3_null.json)
  table4a   LLaMA-2 nano, seeds 42, 123, 1000, 2000, n = 2,000, T = 256, token and Gaussian
            inputs, HF init and GPT-2-scaled init: seedprint/table4a.json
  table1c   GPT-2+RoPE 1.2B (24L, 32H, 2048d), seeds 42, 43, T = 64, N = 2,000:
            initialisation/table1c.json
  table4a-n10k  Table 4a's HF-init, Gaussian-input pairs again at n = 10,000 (T = 256), whether
            the Gaussian-input confound grows with n: seedprint/table4a_n10k.json
  table1c-t256  GPT-2+RoPE 1.2B, seeds 42, 43, T = 256, N = 2,000 (Finding 1.2's scale part at
            a second length): initialisation/table1c_t256.json
  table1c-t1024  GPT-2+RoPE 1.2B, seeds 42, 43, T = 1,024, N = 2,000 (the paper's headline
            5.20 % -> 10.20 %): initialisation/table1c_t1024.json; about 11 PFLOP, a GPU's
            piece (about 17 h on 2 CPU cores), resumable per block of 250 sequences
  table1b-n10k-t1024  LLaMA-2 nano, seeds 42, 43, T = 1,024, N = 10,000:
            initialisation/table1b_n10k_t1024.json
  figure10  GPT-2+RoPE nano, seed 42, T = 1,024, N = 10,000 (Figure 10's shape): the predicted
            token's and the max hidden dimension's frequencies: initialisation/figure10.json,
            in 8 blocks of 1,250 sequences; ``--so-far`` writes the record from the blocks
            finished so far (its settings say ``num_seqs`` of ``target_num_seqs``), judged by
            the same rule at that N, until the whole pass overwrites it

N = 2,000 is what the paper's Table 1 p-values imply for its GPT-2 rows (the text says
10,000; `bornbiased theory` recomputes them); its LLaMA-2 rows are counts of 6-9 of 10,000,
which at N = 2,000 would be 1.2-1.8 sequences, below the top-1 of uniform draws, hence
table1b-n10k and, for T = 1,024, table1b-n10k-t1024 (about 12 h here at the rate its
N = 2,000 pass ran: a GPU's piece, resumable on a CPU). Our token ids differ from the paper's
(another RNG); frequencies and p-values are comparable. Table 1's passes (all but table1a's T = 64, whose seed-42 states
Figure 1a needs whole: minutes of work) keep only per-block sums (``bornbiased_jax.blockwise``:
the arg-max tokens and the sums of unit last-token states, about 170 kB per block of 250
sequences) in ``--summaries`` (default results/campaign/summaries/, committed as it grows, so
any later machine resumes from the last committed block, on another platform (a GPU after a
CPU, or back) with --resume-across-versions, which the campaign passes). The other state
folders (``--state``, default results/campaign/state/, not committed) hold every kept per-sequence
value, hundreds of MB for the nano pieces, and last only as long as the machine; table2 and
table4a, which need whole per-sequence values, keep each finished part (one block type; one
init and input kind) as its results in ``--summaries`` (``<part>.json``), so a part of under an
hour is the most a new machine repeats. The
campaign (``python -m experiments campaign``) runs these pieces in order within a time budget;
the pieces, their FLOPs and time estimates are ``experiments/campaign/plan.py``'s
``PAPER_SCALE``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from experiments.common.cli import add_precision_flag
from experiments.campaign import paper_pieces as pieces
from experiments.campaign import plan as campaign


def main(argv: list[str]) -> int:
    """Sec. 3-4 at the paper's own shapes, as resumable forward passes that a CPU can finish
    (the pieces and what they keep: this module's docstring)."""
    p = argparse.ArgumentParser(prog="python -m experiments paper_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("piece", nargs="?", choices=list(pieces.SPECS), help="the piece to run or resume")
    p.add_argument("--state", type=Path, default=pieces.STATE,
                   help="folder of the pieces' saved chunks (one sub-folder per piece); run "
                        "the same command with the same folder to resume")
    p.add_argument("--summaries", type=Path, default=pieces.SUMMARIES,
                   help="folder of the pieces' committed per-block sums and kept parts (one "
                        "sub-folder per piece; commit it as it grows: any machine resumes from "
                        "it)")
    p.add_argument("--records", type=Path, default=pieces.RECORDS,
                   help="where the finished records go (RECORDS/<study>/<name>.json)")
    p.add_argument("--resume-across-versions", action="store_true",
                   help="resume a state written by other JAX/NumPy/package versions or on "
                        "another platform (a GPU after a CPU, or back); not bitwise an "
                        "uninterrupted run. The state lists every version and, for a "
                        "blockwise pass, every platform (devices_used), which the record "
                        "names (blocks_platforms)")
    p.add_argument("--so-far", action="store_true",
                   help="write the piece's record from the blocks finished so far, computing "
                        "nothing (a running pass may go on); the record names the N finished "
                        "and the pass's full N. Pieces: " + ", ".join(pieces.SO_FAR))
    p.add_argument("--list", action="store_true", help="print the pieces and exit")
    add_precision_flag(p)
    args = p.parse_args(argv)
    if args.list or args.piece is None:
        for s in pieces.SPECS.values():
            print(f"{s.name:13s} {campaign.paper_scale_flops(s) / 1e15:6.2f} PFLOP  {s.about}")
        return 0
    if args.so_far and args.piece not in pieces.SO_FAR:
        p.error(f"--so-far is for the pieces judged on one model at one length "
                f"({', '.join(pieces.SO_FAR)}), not {args.piece}")
    pieces.ALLOW_VERSIONS = args.resume_across_versions
    from bornbiased_jax.errors import UserError

    from experiments.common.cli import command_line, use_precision
    from experiments.artifacts import portable

    use_precision(args)  # full float32 unless asked: TF32 on a GPU would move near-tied arg-maxes
    # A resumed piece loads its compiled programs instead of compiling them again: on an H100
    # one program of these passes takes 40-90 s to compile, longer than a block takes to run.
    from bornbiased_jax import xla_cache

    xla_cache.enable()

    t0 = time.time()
    try:
        run = pieces.SO_FAR[args.piece] if args.so_far else pieces.RUNNERS[args.piece]
        out = run(args.state / args.piece, args.summaries / args.piece)
    except UserError as e:
        print(f"paper_scale: error: {e}", file=sys.stderr)
        return 2
    cmd = command_line("paper_scale", argv)
    if args.so_far:
        for name, (settings, _, _) in out.items():
            held = _fewer_than_held(args.records, name, settings["num_seqs"])
            if held:
                print(f"paper_scale: error: {held}", file=sys.stderr)
                return 2
    for name, (settings, records, seconds) in out.items():
        f = pieces.save(args.records, name, settings, records, seconds, cmd, t0)
        part = (f", {settings['num_seqs']:,} of {settings['target_num_seqs']:,} sequences"
                if "target_num_seqs" in settings else "")
        print(f"wrote {portable(str(f))} ({seconds:.0f} s of compute{part})")
    return 0


def _fewer_than_held(records: Path, name: str, n: int) -> str | None:
    """Why a record of the blocks finished so far (``n`` sequences) must not replace the one
    already held (one of more sequences, or a whole pass's), or None."""
    import json

    f = Path(records) / pieces.STUDY[name] / f"{name}.json"
    if not f.exists():
        return None
    st = json.loads(f.read_text())["run"]["settings"]
    if st.get("num_seqs", 0) > n:
        from experiments.artifacts import portable

        whole = "a whole pass" if not st.get("target_num_seqs") else "blocks finished so far"
        return (f"{portable(str(f))} holds {st['num_seqs']:,} sequences ({whole}); --so-far "
                f"found {n:,} finished here and would replace it: remove that record first "
                f"to do so")
    return None
