# session 58, one call, most wanted first: session 57's CUDA int4/fp4 tests, the amd beyond folder through both
# implementations, then the suite cases session 57's halves missed (as far as the call's time goes); $1: seconds
source .tl/setup.sh >/dev/null 2>&1
export PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda TILELANG_EXAMPLES=$PWD/.tlx/examples
o=$OUT/s58; mkdir -p $o
t0=$(date +%s); budget=${1:-560}
left() { echo $(( budget - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"
timeout 120 env TILE2TRITON_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider tests/test_int4.py tests/test_fp4.py \
  tests/test_persistent_attention.py 2>&1 | tail -4
echo "## tests done at $(( $(date +%s) - t0 ))s"
l=$(left); timeout $(( l < 200 ? l : 200 )) python3 benchmarks/tilelang_regression.py benchmarks/beyond_suite --site /tmp/tlsite \
  --part 1/1 -j 14 --deadline $(( (l < 200 ? l : 200) - 15 )) --files amd --out $o/beyond_amd 2>&1 | tail -14
echo "## amd done at $(( $(date +%s) - t0 ))s"
l=$(left)
if [ $l -gt 90 ]; then
  timeout $l python3 benchmarks/tilelang_regression.py .tlx --site /tmp/tlsite --part 1/1 -j 14 --deadline $(( l - 15 )) \
    --files gemv/ linear_attention minference seer_attention warp_specialize --out $o/s57_rest 2>&1 | tail -16
fi
echo "## done at $(( $(date +%s) - t0 ))s"
tar czf $OUT/s58c.tgz -C $OUT s58
