"""SeedPrint calibration: how often does each test call two *independent* initialisations
related? Every test's false-positive rate at alpha = 0.01 on pools of fresh initialisations
(what and why: experiments/seedprint/calibration.py). The report is rewritten after
every pool; features are cached under ``--out``/cache.

    python -m experiments.seedprint_calibration
"""

import time

from experiments.common.cli import parse, write

from experiments.seedprint import calibration as SC

NAME = "seedprint_calibration"


def main(argv=None) -> None:
    args, s = parse(NAME, __doc__, SC.CPU, SC.PAPER, argv=argv)
    t0 = time.time()
    records = []
    for p in SC.pools(s):
        records.append(SC.measure_pool(p, s, cache=args.out / "cache"))
        print({k: v for k, v in records[-1].items() if not k.startswith("_")}, flush=True)
        write(args, NAME, s, records, SC.markdown(records), SC.figure(records), t0)


if __name__ == "__main__":
    main()
