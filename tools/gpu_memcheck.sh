#!/usr/bin/env bash
# compute-sanitizer memcheck over the GPU test suite and every example (issue 7), on the GPU machine:
#     bash tools/gpu_memcheck.sh [LOGDIR]
# The suite runs in 3 concurrent shards (memcheck is host-bound) and the examples in a fourth job;
# prints each run's "ERROR SUMMARY" and the pytest totals.
set -u
logs=${1:-/tmp/memcheck}
mkdir -p "$logs"
export PYTHONPATH=$PWD TILE2TRITON_TEST_DEVICE=cuda PATH=$PATH:/usr/local/cuda/bin
sanitize() { compute-sanitizer --tool memcheck --print-limit 20 --error-exitcode 99 "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
compute-sanitizer --version | tail -n 1
files=(tests/test_*.py)
for shard in 0 1 2; do
  mine=()
  for k in "${!files[@]}"; do ((k % 3 == shard)) && mine+=("${files[$k]}"); done
  sanitize python -m pytest -q -p no:cacheprovider -k "cuda or gpu" "${mine[@]}" >"$logs/suite_$shard.log" 2>&1 &
done
( for ex in examples/*.py; do
    echo "== $ex"
    sanitize python "$ex" 2>&1 | grep -E "ERROR SUMMARY|Error|error" | tail -n 5
  done ) >"$logs/examples.log" 2>&1 &
wait
for shard in 0 1 2; do
  echo "== suite shard $shard: $(grep -E '[0-9]+ (passed|failed)' "$logs/suite_$shard.log" | tail -n 1)"
  grep -E "ERROR SUMMARY" "$logs/suite_$shard.log" | tail -n 1
done
echo "== examples: $(grep -c '^== ' "$logs/examples.log") run"
grep -E "ERROR SUMMARY" "$logs/examples.log" | sort | uniq -c
grep -B1 -E "ERROR SUMMARY: [1-9]" "$logs/examples.log" || true
