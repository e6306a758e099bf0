# session 61: $1 = auto (H200: suite half 1, else s60), s60 (the backward row-split check, tools/gpu_pending_checks.sh part s60) or 1 / 2 (a suite half)
source .tl/setup.sh >/dev/null 2>&1
export PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda TILELANG_EXAMPLES=$PWD/.tlx/examples
o=$OUT/s61; mkdir -p $o; t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"
what=$1
if [ "$what" = auto ]; then case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) what=1;; *) what=s60;; esac; fi
set -- "$what"; echo "## running $1"
if [ "$1" = s60 ] || [ "$1" = s61 ]; then
  bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite $o/$1 $1 > $o/$1.log 2>&1; grep -v "^$" $o/$1.log | tail -60
  if [ "$1" = s61 ]; then  # the two attention files through both implementations, the split on (the defaults)
    echo "## files at $(( $(date +%s) - t0 ))s"
    timeout ${FILES_LIMIT:-300} python3 benchmarks/tilelang_regression.py .tlx --site /tmp/tlsite --part 1/1 -j 14 \
      --deadline ${FILES_DEADLINE:-270} --files flash_attention/ attention_sink/ --out $o/files 2>&1 | tail -24
  fi
else
  timeout ${PART_LIMIT:-470} python3 benchmarks/tilelang_regression.py .tlx --site /tmp/tlsite --part $1/2 -j 14 \
    --deadline ${DEADLINE:-430} --out $o/r$1 2>&1 | tail -30
fi
echo "## $1 done at $(( $(date +%s) - t0 ))s"
tar czf $OUT/s61_$1.tgz -C $OUT s61
