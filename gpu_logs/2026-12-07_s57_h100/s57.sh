# session 57, call 1: s56's pending check, then the three new beyond folders through both implementations
source .tl/setup.sh
export TILELANG_EXAMPLES=$PWD/.tlx/examples PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
o=$1; mkdir -p $o
t0=$(date +%s)
timeout 200 python3 -m pytest -q -x tests/test_int4.py 2>&1 | tail -3
echo "## int4 tests done at $(( $(date +%s) - t0 ))s"
timeout 250 python3 benchmarks/tilelang_regression.py benchmarks/beyond_suite --site /tmp/tlsite --part 1/1 -j 14 --deadline 220 \
  --files gemm_int4 gemm_streamk deepseek_deepgemm --out $o/beyond_new 2>&1 | tail -25
echo "## beyond done at $(( $(date +%s) - t0 ))s"
bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite $o s56 2>&1 | tail -40
echo "## s56 done at $(( $(date +%s) - t0 ))s"
