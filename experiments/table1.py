"""Table 1: extreme token preference across models, sequence lengths and seeds (paper Sec. 3)."""

import time

from experiments.common.cli import parse, write

from bornbiased_jax.presets import get_preset
from bornbiased_jax.probes import token_preference_tables as tables
from bornbiased_jax.probes.token_preference import token_preference

NAME = "table1"
CPU = dict(presets=["gpt2-rope-cpu", "llama2-cpu"], seeds=[42, 43], seq_lens=[64, 128],
           num_seqs=600)
PAPER = dict(presets=["gpt2-rope-nano", "llama2-nano", "gpt2-rope-1.2b"], seeds=[42, 43],
             seq_lens=[64, 256, 1024], num_seqs=10_000)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    recs = []
    for name in s["presets"]:
        recs += token_preference(get_preset(name), s["seeds"], s["seq_lens"], s["num_seqs"],
                                 progress=True)
    write(args, NAME, s, recs, tables.table1_markdown(recs), tables.figure1a(recs), t0)
