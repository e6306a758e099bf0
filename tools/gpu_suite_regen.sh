#!/usr/bin/env bash
# On the GPU machine, from the repo root, with .whl (TileLang wheels) and .tlx (a TileLang checkout's examples/ and testing/python/) carried:
# testing/python/{language,kernel} through tile2triton, and every other test folder through both (issue 26).
export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda
SITE=/tmp/tlsite
python3 -m pip install -q --no-index --no-deps --no-compile --target $SITE .whl/*.whl && ln -sf libz3.so.4.15 $SITE/z3/lib/libz3.so
limit=${LIMIT:-540}
start=$(date +%s)
( timeout $((limit - 10)) python3 tools/tilelang_suite.py .tlx --sets language,kernel --jobs 6 --timeout 200 \
    --json $OUT/lk_t2t.json > $OUT/lk_t2t.log 2>&1 ) &
for s in issue transform jit autotune components tilelibrary dynamic fastmath math cache layout cuda debug \
         analysis arith carver profiler runtime target utils tools quantize contrib backend cpu amd llvm metal webgpu; do
  left=$((limit - ($(date +%s) - start) - 15))
  [ $left -lt 20 ] && { echo "no time for $s" >> $OUT/others_skipped.txt; continue; }
  [ -d .tlx/testing/python/$s ] || continue
  PYTHONPATH=$SITE timeout $left python3 tools/tilelang_suite.py .tlx --sets $s --both --jobs 10 --timeout 120 \
    --json $OUT/others_$s.json > $OUT/others_$s.log 2>&1
done
wait
ls $OUT
