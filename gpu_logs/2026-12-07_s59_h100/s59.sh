# session 59: the whole suite in two halves ($1 = 1 or 2); half 2 then runs the CUDA int4/fp4 tests
source .tl/setup.sh >/dev/null 2>&1
export PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda TILELANG_EXAMPLES=$PWD/.tlx/examples
o=$OUT/s59; mkdir -p $o; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"; git log --oneline -1 2>/dev/null
limit=${PART_LIMIT:-460}; dl=${DEADLINE:-420}
timeout $limit python3 benchmarks/tilelang_regression.py .tlx --site /tmp/tlsite --part $1/2 -j 14 --deadline $dl \
  --out $o/r$1 2>&1 | tail -40
echo "## half $1 done at $(( $(date +%s) - t0 ))s"
if [ "$1" = 2 ]; then
  timeout 100 env TILE2TRITON_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider tests/test_int4.py 2>&1 | tail -4
  echo "## int4 done at $(( $(date +%s) - t0 ))s"
fi
tar czf $OUT/s59_$1.tgz -C $OUT s59
