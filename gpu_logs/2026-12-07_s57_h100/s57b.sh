# session 57, call 2: CUDA tests of the two commits, the int4 gemm timed again, the sink forwards with the narrowed wave rule
source .tl/setup.sh
export TILELANG_EXAMPLES=$PWD/.tlx/examples PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
o=$1; mkdir -p $o
t0=$(date +%s)
TILE2TRITON_TEST_DEVICE=cuda timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_int4.py tests/test_row_split.py tests/test_fp4.py 2>&1 | tail -4
echo "## cuda tests done at $(( $(date +%s) - t0 ))s"
TILE2TRITON_TEST_DEVICE=cpu timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_int4.py -k "loads_arithmetic" --tb=line 2>&1 | tail -8
echo "## cpu (Triton 3.6 interpreter) int4 test done at $(( $(date +%s) - t0 ))s"
timeout 150 python3 benchmarks/tilelang_regression.py benchmarks/beyond_suite --site /tmp/tlsite --part 1/1 -j 14 --deadline 130 \
  --files gemm_int4 --out $o/beyond_int4 2>&1 | grep -E '^\[|\| `' | tail -6
echo "## int4 done at $(( $(date +%s) - t0 ))s"
for case in regression_example_mha_sink_fwd_bhsd@2 regression_example_mha_sink_fwd_bhsd_sliding_window@2; do
  timeout 100 python3 benchmarks/env_variants.py .tlx/examples/attention_sink/regression_attention_sink.py "$case" \
    TILE2TRITON_ROW_SPLIT_WAVES=0 "" TILE2TRITON_ROW_SPLIT_WAVES=0 "" 2>&1 | tail -4
done
echo "## sink done at $(( $(date +%s) - t0 ))s"
