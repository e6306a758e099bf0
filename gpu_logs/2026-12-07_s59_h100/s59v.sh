# session 59: the second variant set's attention files through both implementations (shapes the suite does not time)
source .tl/setup.sh >/dev/null 2>&1
export PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda TILELANG_EXAMPLES=$PWD/.tlx/examples
o=$OUT/s59v; mkdir -p $o; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout ${PART_LIMIT:-500} python3 benchmarks/tilelang_regression.py .tlx --site /tmp/tlsite --part 1/1 -j 14 --variants 2 \
  --deadline ${DEADLINE:-460} --files flash_attention/ attention_sink blocksparse_attention flash_decoding --out $o/v2 2>&1 | tail -45
echo "## done at $(( $(date +%s) - t0 ))s"
tar czf $OUT/s59v.tgz -C $OUT s59v
