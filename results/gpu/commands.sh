# The commands run on the H100, in order (one machine; each block one call, from the repository's root).
# OUT: the folder the outputs were written to; PYTHONUNBUFFERED=1 and PYTHONPATH=. were set.

# --- run 1
python3 -m pip install -q --no-deps --no-build-isolation -e . > OUT/pip.log 2>&1 || echo "pip failed" >> OUT/pip.log
{ nvidia-smi; python3 -c "import jax, flax, optax, orbax.checkpoint as oc, numpy, scipy; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, 'numpy', numpy.__version__, jax.devices())"; python3 -c "import bornbiased_jax; print('bornbiased_jax at', bornbiased_jax.__file__)"; } > OUT/env.txt 2>&1
( JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 430 python3 -m pytest -q -n 6 -p no:cacheprovider tests theory -rfEs --junitxml=OUT/junit.xml > OUT/pytest.log 2>&1; echo "pytest rc=$?" >> OUT/pytest.log ) &
XLA_PYTHON_CLIENT_MEM_FRACTION=0.5 timeout 500 python3 benchmarks/matmul_precision.py --presets gpt2-rope-nano llama2-nano --seeds 42 43 --seq-lens 64 256 1024 --num-seqs 10000 --out OUT/precision.json 2>&1 | tee OUT/precision.log
wait
tail -30 OUT/pytest.log

# --- run 2
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
B=benchmarks/sweep_throughput.py
{ echo "== TF32 (default precision), gpt2-rope-nano T=256, 8 seeds x 512"; timeout 200 python3 $B --preset gpt2-rope-nano --seq-len 256 --num-seqs 512 --seeds 8 --repeats 3 --strategies vmap map:1 map:4 loop;
  echo "== highest precision"; JAX_DEFAULT_MATMUL_PRECISION=highest timeout 80 python3 $B --preset gpt2-rope-nano --seq-len 256 --num-seqs 512 --seeds 8 --repeats 2 --strategies vmap;
  echo "== seed chunks, 32 seeds, vmap"; for c in 2 8 32; do timeout 60 python3 $B --preset gpt2-rope-nano --seq-len 256 --num-seqs 256 --seeds 32 --repeats 2 --strategies vmap --seed-chunk $c; done;
  echo "== 1000 seeds"; timeout 150 python3 $B --preset gpt2-rope-nano --seq-len 256 --strategies --many-seeds 1000 --many-seeds-seqs 16; } 2>&1 | tee OUT/sweep_bench.log

# --- run 3
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
F="tests/test_baselines.py tests/test_errors.py tests/test_hf.py tests/test_model.py tests/test_sinks.py tests/test_sources.py tests/test_sweep.py tests/test_multihost.py"
( JAX_DEFAULT_MATMUL_PRECISION=highest JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 380 python3 -m pytest -q -n 8 -p no:cacheprovider $F -rfE > OUT/pytest_highest.log 2>&1; echo "pytest rc=$?" >> OUT/pytest_highest.log ) &
( JAX_DEFAULT_MATMUL_PRECISION=highest XLA_FLAGS=--xla_gpu_deterministic_ops=true JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 380 python3 -m pytest -q -n 2 -p no:cacheprovider tests/test_train.py -rfE > OUT/pytest_train_det.log 2>&1; echo "pytest rc=$?" >> OUT/pytest_train_det.log ) &
XLA_PYTHON_CLIENT_MEM_FRACTION=0.45 timeout 400 python3 benchmarks/matmul_precision.py --presets gpt2-rope-nano llama2-nano --seeds 42 43 --seq-lens 64 256 --num-seqs 10000 --out OUT/precision.json 2>&1 | tee OUT/precision.log
wait
tail -25 OUT/pytest_highest.log; tail -12 OUT/pytest_train_det.log

# --- run 4
timeout 200 python3 benchmarks/matmul_precision.py --presets gpt2-rope-nano --seeds 42 43 --seq-lens 64 --num-seqs 10000 --out OUT/precision.json
