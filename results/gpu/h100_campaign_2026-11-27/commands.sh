# The two calls of the 2026-11-27 window on one NVIDIA H100 80GB HBM3 (jax 0.11.2), run from
# the repository root of the working tree that became commit 9fbb083; only files
# under $OUT came back, so each call ended by packing its outputs into a tarball.
# Call 1 (479 s of its 540 s limit):
export PYTHONUNBUFFERED=1; W=<tmp>/w; mkdir -p $W/records $W/exp
(nvidia-smi -L; pip install -q --no-deps -e . 2>&1 | tail -2; python3 -c "import jax,numpy,flax,scipy;print(jax.__version__,numpy.__version__,flax.__version__,scipy.__version__,jax.devices())") > $OUT/env.txt 2>&1
cp -r results/campaign $W/campaign && cp -r results/records/paper/. $W/records/
timeout 450 python3 -m experiments.campaign --root $W/campaign --records $W/records --budget 420 --only paper-table4a-n10k paper-table1c-t256 paper-table1b-n10k-t1024 > $OUT/driver.log 2>&1
timeout 45 python3 -m experiments.figure8 --scale paper --out $W/exp/figure8 --records $W/records > $OUT/figure8.log 2>&1   # stopped at its limit, no output
cd $W && tar czf $OUT/campaign.tgz campaign/ledger.json campaign/paper-* campaign/summaries/table4a-n10k records exp
# Call 2, on the same warm machine (236 s of its 275 s limit):
W=<tmp>/w; export PYTHONUNBUFFERED=1; timeout 250 python3 -m experiments.campaign --root $W/campaign --records $W/records --budget 235 --only paper-table1c-t256 paper-table1b-n10k-t1024 > $OUT/driver2.log 2>&1
cd $W && tar czf $OUT/campaign2.tgz campaign/ledger.json campaign/paper-table1c-t256 campaign/summaries/table1c-t256 records exp
# (<tmp> stands for that machine's temporary folder.)
# Back here: the ledger, the pieces' logs, table4a-n10k's kept part and record copied into
# results/campaign/ and results/records/paper/ (commit 9fbb083). table1c-t256's GPU state
# (no finished block) was not kept: its identity names the GPU platform.
