#!/usr/bin/env bash
# One batched GPU check on a 2-GPU machine (nvidia-h200-x2), from the repo root:
#     bash tools/gpu_round.sh TILELANG_CHECKOUT LOGDIR [FUZZ_COUNT] [MEMCHECK_K]
# Runs at once, each bounded: the GPU test suite (-k "cuda or gpu", 4 shards on GPU 0), the 2-GPU tests,
# TileLang's example CI and testing/python/{language,kernel} through tile2triton (tools/tilelang_suite.py,
# files spread over both GPUs), and the grammar fuzzer on GPU 1 against the reference (the first
# MEMCHECK_K programs under compute-sanitizer). With WHEELS=DIR (a TileLang wheel set made by
# ../shared/tools/tilelang-wheels.sh, with with-tilelang.sh beside it), also real TileLang: the example
# CI natively (the baseline) and TILELANG_FUZZ programs through both. Prints a summary; logs stay in LOGDIR.
set -u
tl=$1
logs=$2
count=${3:-2000}
memcheck=${4:-20}
limit=${LIMIT:-480}
mkdir -p "$logs"
export PYTHONPATH=$PWD PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"

files=(tests/test_*.py)
for shard in 0 1 2 3; do
  mine=()
  for k in "${!files[@]}"; do ((k % 4 == shard)) && mine+=("${files[$k]}"); done
  CUDA_VISIBLE_DEVICES=0 TILE2TRITON_TEST_DEVICE=cuda timeout "$limit" \
    python3 -m pytest -q -p no:cacheprovider -k "cuda or gpu" "${mine[@]}" >"$logs/suite_$shard.log" 2>&1 &
done
timeout "$limit" python3 -m pytest -q -p no:cacheprovider tests/test_multi_gpu.py >"$logs/multi_gpu.log" 2>&1 &
timeout "$limit" python3 tools/tilelang_suite.py "$tl" --sets examples --jobs 6 --gpus 2 --timeout 300 \
  --json "$logs/suite_examples.json" >"$logs/tilelang_examples.log" 2>&1 &
timeout "$limit" python3 tools/tilelang_suite.py "$tl" --sets language,kernel --jobs 6 --gpus 2 --timeout 240 \
  --json "$logs/suite_language_kernel.json" >"$logs/tilelang_language_kernel.log" 2>&1 &
for part in 0 1 2 3; do  # four independent runs: a run cut by the limit loses only its own summary
  CUDA_VISIBLE_DEVICES=1 timeout "$limit" python3 tools/fuzz_gpu.py --count $((count / 4)) \
    --seed $((20261130 + part * count / 4)) --jobs 3 --out "$logs/fuzz_$part" >"$logs/fuzz_$part.log" 2>&1 &
done
CUDA_VISIBLE_DEVICES=1 timeout "$limit" python3 tools/fuzz_gpu.py --count "$memcheck" --seed 20271130 --jobs 2 \
  --memcheck "$memcheck" --out "$logs/fuzz_memcheck" >"$logs/fuzz_memcheck.log" 2>&1 &
if [ -n "${WHEELS:-}" ]; then
  (
    WHL=$WHEELS source "$WHEELS/with-tilelang.sh" >"$logs/tilelang_install.log" 2>&1 || exit 0
    timeout "$limit" python3 tools/tilelang_suite.py "$tl" --sets examples --native --jobs 6 --gpus 2 \
      --timeout 300 --json "$logs/native_examples.json" >"$logs/native_examples.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=0 timeout "$limit" python3 tools/fuzz_gpu.py --tilelang --count "${TILELANG_FUZZ:-300}" \
      --seed 20281130 --jobs 8 --timeout 120 --out "$logs/fuzz_tilelang" >"$logs/fuzz_tilelang.log" 2>&1 &
    wait
  ) &
fi
wait

for shard in 0 1 2 3; do echo "suite shard $shard: $(tail -n 1 "$logs/suite_$shard.log")"; done
echo "multi-GPU: $(tail -n 1 "$logs/multi_gpu.log")"
for f in tilelang_examples tilelang_language_kernel native_examples; do
  [ -f "$logs/$f.log" ] || continue
  echo "== $f"; tail -n 3 "$logs/$f.log"
done
for f in "$logs"/fuzz_*.log; do echo "== $f"; grep -E "^\[fuzz" "$f" | tail -n 6; done
# the device tool brings back only a few files from $OUT: everything goes back as one archive
if [ -n "${OUT:-}" ] && [ "$logs" != "$OUT" ]; then
  tar czf "$OUT/gpu_round.tgz" -C "$logs" --exclude='tilelang_rejects' . && ls -la "$OUT/gpu_round.tgz"
fi
