"""SeedPrint power: does each test recognise a model's own initialisation after training?
Trains two seeds of a small LLaMA-style model on identical data and tests every checkpoint of
the first against its initialisation, another seed's initialisation and the other trained run
(what and why: experiments/seedprint/power.py).

    python -m experiments.seedprint_power
"""

import time

from experiments.common.cli import parse, user_errors_exit, write

from experiments.seedprint import power as SP

NAME = "seedprint_power"


def main(argv=None) -> None:
    args, s = parse(NAME, __doc__, SP.CPU, SP.PAPER, argv=argv)
    t0 = time.time()
    with user_errors_exit(NAME):
        records = SP.measure(s, args.out)
    write(args, NAME, s, records, SP.markdown(records, s), SP.figure(records), t0)


if __name__ == "__main__":
    main()
