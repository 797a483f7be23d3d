# The two calls of the 2026-11-28 window on one NVIDIA H200 (jax 0.11.2), run from the
# repository root of a working tree with the table1c-t1024 piece added to the plan; only files
# under $OUT came back, so each call ended by packing its outputs into a tar file.
# Call 1 (514 s of its 580 s limit; the machine's start came before it):
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee $OUT/env.txt
python3 -m pip install -q --no-deps -e . > $OUT/pip.log 2>&1
python3 -c "import jax; print(jax.__version__, jax.devices())" | tee -a $OUT/env.txt
W=<tmp>/w; mkdir -p $W/records
cp -r results/campaign $W/ && cp -r results/records/paper/. $W/records/
timeout 520 python3 -m experiments.campaign --root $W/campaign --records $W/records \
    --budget 500 --only paper-table1c-t1024 > $OUT/driver.log 2>&1
cd $W && tar cf $OUT/out.tar campaign/ledger.json campaign/paper-table1c-t1024 \
    campaign/summaries/table1c-t1024 $(ls records/*/table1c_t1024.json 2>/dev/null)
# (partial at the budget: 5 of 8 blocks, the first 138 s with compiling, then about 30 s
#  each; planning and building the two 1.2B models took the rest.)
# Call 2, on the same warm machine (108 s of its 290 s limit):
W=<tmp>/w; ls $W/campaign/summaries/table1c-t1024/T1024/ > $OUT/before.txt
timeout 270 python3 -m experiments.campaign --root $W/campaign --records $W/records \
    --budget 260 --only paper-table1c-t1024 > $OUT/driver2.log 2>&1
cd $W && tar cf $OUT/out2.tar campaign/ledger.json campaign/paper-table1c-t1024 \
    campaign/summaries/table1c-t1024 $(ls records/*/table1c_t1024.json 2>/dev/null)
# (blocks 6-8, done; the record written.)
# Back here: call 2's ledger (which holds both attempts), the piece's log, its summaries and
# record copied into results/campaign/ and results/records/paper/.
# (<tmp> stands for that machine's temporary folder.)
