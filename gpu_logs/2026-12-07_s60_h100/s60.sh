# session 60: $1 = auto (H200: suite half 1, else the snake check), 2 (suite half 2), snake (the snake check)
source .tl/setup.sh >/dev/null 2>&1
export PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda TILELANG_EXAMPLES=$PWD/.tlx/examples
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
nvidia-smi --query-gpu=driver_version --format=csv,noheader
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"
what=$1
if [ "$what" = auto ]; then case "$gpu" in *H200*) what=1;; *) what=snake;; esac; fi
echo "## running $what"
o=$OUT/s60; mkdir -p $o; t0=$(date +%s)
if [ "$what" = snake ]; then
  bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite $o/snake s59 > $o/snake.log 2>&1; grep -v "^$" $o/snake.log | tail -40
else
  timeout ${PART_LIMIT:-470} python3 benchmarks/tilelang_regression.py .tlx --site /tmp/tlsite --part $what/2 -j 14 \
    --deadline ${DEADLINE:-430} --out $o/r$what 2>&1 | tail -30
fi
echo "## $what done at $(( $(date +%s) - t0 ))s"
tar czf $OUT/s60_$what.tgz -C $OUT s60
