"""The CPU cost of every command on Gemma 3 270M: ``sinks``, ``sweep --model``, ``fingerprint``
and ``train --init-from``, each run as a user types it (a subprocess of this interpreter's
``bornbiased_jax.cli``) on the GGUF file and on an HF folder made from it (``save_hf`` with the
file's tokenizer and a ``tokenizer_config.json`` saying it adds ``<bos>``, as the released HF
folder's does), at sizes a first look uses. Prints and writes a markdown table of wall times;
no time is asserted anywhere.

    python benchmarks/gemma3_commands.py --model "$(bash tests/fixtures/fetch_gemma3.sh)" \\
        --out benchmarks/results/gemma3_commands_cpu.md

Each wall time includes the process start, the model's load (the GGUF's dequantization, or the
safetensors read), the tokenizer's rebuild where the command reads text, compilation and the
work itself. Run it niced on an otherwise idle machine; the report records the load average
before each command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's bornbiased_jax, not an installed one

COMMANDS = {  # name -> arguments after the model (MODEL is replaced by the model's path)
    "sinks": ["sinks", "MODEL", "--seq-len", "64", "--num-seqs", "8"],
    "sweep": ["sweep", "--model", "MODEL", "--num-seqs", "64", "--seq-len", "64"],
    "fingerprint": ["fingerprint", "MODEL", "preset:gemma3-270m@0", "--num-seqs", "32", "--seq-len",
                    "32", "--no-progress"],
    "train": ["train", "--init-from", "MODEL", "--corpus", "python-stdlib", "--steps", "2",
              "--warmup", "1", "--seq-len", "32", "--batch-size", "4", "--eval-every", "2",
              "--eval-batches", "1", "--corpus-max-mb", "0.5", "--no-progress"],
}


def hf_folder(gguf: Path, dest: Path) -> Path:
    """The GGUF as an HF folder with its tokenizer and a tokenizer_config.json."""
    import numpy as np
    import jax

    from bornbiased_jax.hf import load_gguf, load_gguf_tokenizer, model_bos, save_hf

    cfg, params = load_gguf(gguf)
    adds, token, _ = model_bos(gguf)
    out = save_hf(cfg, jax.tree.map(lambda a: np.asarray(a, np.float32), params), dest,
                  tokenizer=load_gguf_tokenizer(gguf))
    (out / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": adds,
                                                          "bos_token": token}))
    return out


def run(name: str, model: Path, work: Path) -> dict:
    args = [str(model) if a == "MODEL" else a for a in COMMANDS[name]]
    out = work / f"{name}-{model.name}"
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", *args, "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return {"command": "bornbiased " + " ".join(a if a != str(model) else model.name
                                                 for a in args),
            "wall_s": wall, "load_before": load}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True, help="gemma-3-270m-q4_k_m.gguf")
    p.add_argument("--out", type=Path, help="markdown report (default: print only)")
    p.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=list(COMMANDS))
    p.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        folder = hf_folder(args.model, work / "gemma-3-270m-hf")
        print(f"HF folder written from the GGUF in {time.perf_counter() - t0:.0f} s")
        for name in args.commands:
            for model in (args.model, folder):
                r = run(name, model, work)
                rows.append({"name": name, "source": "GGUF" if model == args.model else "HF",
                             **r})
                print(f"{name:12s} {rows[-1]['source']:5s} {r['wall_s']:7.1f} s  "
                      f"(load {r['load_before']:.2f})  {r['command']}")
    lines = [f"`python benchmarks/gemma3_commands.py --model {args.model.name}` on "
             f"{platform.machine()} with {os.cpu_count()} cores ({platform.system()}), "
             f"{time.strftime('%Y-%m-%d')}. Wall seconds of each command as a user runs it "
             f"(process start, load, compile and work); 'load' is the 1-minute load average "
             f"before it." + (f" What else ran: {args.note}" if args.note else ""), "",
             "| command | source | wall s | load | command line |",
             "|---|---|---:|---:|---|"]
    lines += [f"| {r['name']} | {r['source']} | {r['wall_s']:.1f} | {r['load_before']:.2f} | "
              f"`{r['command']}` |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
