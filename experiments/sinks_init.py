"""Sec. 6.2.1 at initialisation: does each attention-output variant (amplification,
attenuation, head-wise RMSNorm, a sigmoid gate) flatten the 1/sqrt(i) decay of the per-position
output std (Eq. 2, Figure 9)? What and how: experiments/sinks/at_init.py.

    python -m experiments.sinks_init
"""

import time

from experiments.common.cli import parse, write

from experiments.sinks import at_init as SI

NAME = "sinks_init"


def main(argv=None) -> None:
    args, s = parse(NAME, __doc__, SI.CPU, SI.PAPER, argv=argv)
    t0 = time.time()
    records, curves = SI.measure(s)
    for name, rec in records.items():
        print(f"{name}: slope {rec['loglog_slope']:+.3f}")
    write(args, NAME, s, records, SI.markdown(records, s["seq_len"]), SI.figure(curves, s), t0)


if __name__ == "__main__":
    main()
