# The two calls of the second 2026-11-27 window on one NVIDIA H100 80GB HBM3 (jax 0.11.2),
# run from the repository root of the working tree of commit 41fd7ab; only files under $OUT
# came back, so each call ended by packing its outputs into a tarball.
# Call 1 (536 s of its 590 s limit); JAX_LOG_COMPILES=1 to see where the time goes:
export PYTHONUNBUFFERED=1; W=$(mktemp -d)/w; mkdir -p $W/records
(nvidia-smi -L; python3 -c "import jax,numpy,flax;print(jax.__version__,numpy.__version__,flax.__version__,jax.devices())") > $OUT/env.txt 2>&1
cp -r results/campaign $W/campaign && cp -r results/records/paper/. $W/records/
JAX_LOG_COMPILES=1 timeout 545 python3 -m experiments.campaign --root $W/campaign --records $W/records --budget 530 --only paper-figure10 paper-table1b-n10k-t1024 > $OUT/driver.log 2>&1
cd $W && tar czf $OUT/campaign.tgz campaign/ledger.json campaign/paper-* campaign/summaries/figure10 campaign/summaries/table1b-n10k-t1024 records
# (the driver runs pieces in the plan's order: table1b-n10k-t1024 first, done in 386 s;
#  figure10 then ran 144 s, partial, no block finished.)
# Call 2, on the same warm machine (241 s of its 265 s limit):
W=$(ls -d <tmp>/tmp.*/w | head -1); find $W/campaign -path '*igure10*' > $OUT/found_before.txt
timeout 250 python3 -m experiments.campaign --root $W/campaign --records $W/records --budget 238 --only paper-figure10 > $OUT/driver2.log 2>&1
cd $W && tar czf $OUT/campaign2.tgz campaign/ledger.json campaign/paper-figure10 campaign/paper-table1b-n10k-t1024 campaign/summaries records
# (figure10 partial again in 238 s, no block; the tarball held every committed summary and
#  was too large to come back, so this call's ledger and figure10 log were lost: the
#  ledger here is call 1's, and call 2 is known from driver_call2.log alone.)
# (<tmp> stands for that machine's temporary folder.)
# Back here: the ledger, the pieces' logs, table1b-n10k-t1024's summaries and record copied
# into results/campaign/ and results/records/paper/.
