#!/usr/bin/env bash
# compute-sanitizer memcheck over the GPU test suite and every example (issue 7), on the GPU machine:
#     bash tools/gpu_memcheck.sh [LOG]
# Prints one summary line per run ("ERROR SUMMARY: N errors") and the pytest totals.
set -u
log=${1:-/dev/stdout}
export PYTHONPATH=$PWD TILE2TRITON_TEST_DEVICE=cuda PATH=$PATH:/usr/local/cuda/bin
sanitize() { compute-sanitizer --tool memcheck --print-limit 20 --error-exitcode 99 "$@"; }
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  compute-sanitizer --version | tail -n 1
  echo "== test suite (cuda parametrizations)"
  sanitize python -m pytest -q -p no:cacheprovider -k cuda tests 2>&1 | grep -E "passed|failed|error|ERROR SUMMARY|=====.*(Invalid|Error)" | tail -n 12
  for ex in examples/*.py; do
    echo "== $ex"
    sanitize python "$ex" 2>&1 | grep -E "ERROR SUMMARY|Error|error" | tail -n 5
  done
} >"$log" 2>&1
