"""The module walk: how often following a command goes back and forth between package
modules.

Every call of a function of ``bornbiased_jax`` and its return is followed with
``sys.setprofile``; the package modules of the frames on the stack form the walk's current
path, and the innermost one is the module the walk is in. Two counts:

  back and forth  the walk, as the sequence of modules it is in (consecutive repeats merged),
                  returns into a module it has already left: each step of the sequence onto a
                  module seen earlier in it (sources -> runs -> model -> runs -> model ->
                  runs -> sources: 4)
  re-entries      a call into module M while M is already on the path but not innermost
                  (A calls B, which calls A again)

Both are also given with the model's own modules (``MODEL``: presets, keys, layers, the
decoder), whose calls into one another follow every traced forward pass, merged into one
module "model": the back and forth between the parts of a command; and with the training
modules (``TRAINING``: the training package, or the modules it replaced) merged too, to
compare layouts of training with one module and with several.

Imports are not counted (module bodies, and the class bodies and dataclass methods they
make); calls made through other libraries (JAX tracing a function of the package, say) count
as calls of the package module that runs them. Only the calling thread is followed.

Three walks, on a tiny run in a temporary folder (the llama2-tiny preset, a 256-token BPE on
a few standard-library modules):

  train         ``bornbiased train`` of 2 steps (``--steps 4 --stop-at 2``)
  resume        the same command with ``--steps 4``: the run resumes from step 2
  load_source   ``sources.load_source('RUN@2')``: one checkpoint's parameters

For each: the package calls, the walk's length and its back and forth (with the module
pairs it went back along, how often), and the re-entries as module chains (A -> B -> A).

    python benchmarks/module_walk.py [--json OUT] [--top N]
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

PACKAGE = "bornbiased_jax"
MODEL = ("config", "keys", "layers", "model")  # merged into "model" in the coarse counts
# merged into "training" in the coarsest counts: the training modules, as one module or several
TRAINING = ("train", "runs", "training")


class Walk:
    """The modules a walk goes through, and its re-entries, while it is the profile hook."""

    def __init__(self):
        self.stack: list[tuple[int, str]] = []  # (frame id, module) of package frames
        self.calls = 0
        self.importing = 0  # module bodies running (imports), whose calls are not counted
        self.chains: collections.Counter = collections.Counter()
        self.sequence: list[str] = []  # the module the walk is in, consecutive repeats merged

    def _now_in(self, module: str) -> None:
        if not self.sequence or self.sequence[-1] != module:
            self.sequence.append(module)

    def __call__(self, frame, event, arg):
        if event not in ("call", "return"):
            return
        if frame.f_code.co_name == "<module>":  # an import: its body, classes, dataclasses
            self.importing += 1 if event == "call" else -1
            return
        module = frame.f_globals.get("__name__", "")
        if not (module == PACKAGE or module.startswith(PACKAGE + ".")):
            return
        if event == "return":
            if self.stack and self.stack[-1][0] == id(frame):
                self.stack.pop()
                if self.stack:
                    self._now_in(self.stack[-1][1])
            return
        if self.importing:
            return
        self.calls += 1
        path = [m for _, m in self.stack]
        if path and path[-1] != module and module in path:
            start = len(path) - 1 - path[::-1].index(module)
            chain = [path[start]]
            for m in path[start + 1:]:
                if m != chain[-1]:
                    chain.append(m)
            self.chains[tuple(chain + [module])] += 1
        self.stack.append((id(frame), module))
        self._now_in(module)

    def run(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, followed in this thread (the package's code runs in it)."""
        sys.setprofile(self)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.setprofile(None)

    def report(self, merge_model: bool = False, merge_training: bool = False) -> dict:
        def short(m):
            m = m[len(PACKAGE) + 1:] or PACKAGE
            if merge_training and m.split(".")[0] in TRAINING:
                return "training"
            return "model" if merge_model and m in MODEL else m

        sequence = []
        for m in map(short, self.sequence):
            if not sequence or sequence[-1] != m:
                sequence.append(m)
        seen, back = set(), collections.Counter()
        for i, m in enumerate(sequence):
            if m in seen:
                back[(sequence[i - 1], m)] += 1
            seen.add(m)
        chains = collections.Counter()
        for c, n in self.chains.items():
            merged = []
            for m in map(short, c):
                if not merged or merged[-1] != m:
                    merged.append(m)
            if len(merged) > 2:
                chains[tuple(merged)] += n
        return {"package_calls": self.calls,
                "walk_length": len(sequence),
                "modules": len(seen),
                "back_and_forth": sum(back.values()),
                "back_pairs": {f"{a} -> {b}": n
                               for (a, b), n in sorted(back.items(), key=lambda kv: -kv[1])},
                "walk": sequence if len(sequence) <= 80 else None,
                "reentries": sum(chains.values()),
                "distinct_reentries": len(chains),
                "chains": {" -> ".join(c): n
                           for c, n in sorted(chains.items(), key=lambda kv: -kv[1])}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the numbers to this file")
    ap.add_argument("--top", type=int, default=12, help="module pairs shown per walk")
    args = ap.parse_args()

    from bornbiased_jax.cli import main as cli
    from bornbiased_jax.sources import load_source

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for name in ["json/decoder.py", "json/encoder.py", "textwrap.py", "heapq.py"]:
            shutil.copy(stdlib / name, corpus / name.replace("/", "_"))
        run = Path(tmp) / "run"
        argv = ["train", "--preset", "llama2-tiny", "--corpus", str(corpus), "--out", str(run),
                "--seq-len", "32", "--batch-size", "8", "--bpe-vocab", "256", "--warmup",
                "1", "--save-every", "2", "--eval-every", "2", "--eval-batches", "1",
                "--log-every", "1", "--no-progress", "--steps", "4"]
        for name, fn in [("train", lambda: cli(argv + ["--stop-at", "2"])),
                         ("resume", lambda: cli(argv)),
                         ("load_source", lambda: load_source(f"{run}@2"))]:
            walk = Walk()
            walk.run(fn)
            out[name] = walk.report()
            out[name + " (model merged)"] = walk.report(merge_model=True)
            out[name + " (model, training merged)"] = walk.report(merge_model=True,
                                                                  merge_training=True)
    for name, rep in out.items():
        print(f"{name}: {rep['package_calls']} package calls; a walk of {rep['walk_length']} "
              f"over {rep['modules']} modules, {rep['back_and_forth']} back and forth; "
              f"{rep['reentries']} re-entries ({rep['distinct_reentries']} distinct)")
        if rep["walk"]:
            print("    walk: " + " -> ".join(rep["walk"]))
        for pair, n in list(rep["back_pairs"].items())[:args.top]:
            print(f"    {n:6d}  back {pair}")
        for chain, n in rep["chains"].items():
            print(f"    {n:6d}  re-entry {chain}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
