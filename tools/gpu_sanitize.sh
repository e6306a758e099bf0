#!/usr/bin/env bash
# racecheck and synccheck over tools/sanitize_kernels.py, one case per run; prints each summary line.
#     bash tools/gpu_sanitize.sh LOGDIR
set -u
logs=${1:-/tmp/sanitize}
mkdir -p "$logs"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for case in thread_view warp_sections gluon_rows gluon_columns; do
  for tool in racecheck synccheck; do
    timeout 150 "$cs" --tool "$tool" --print-limit 20 python3 tools/sanitize_kernels.py "$case" >"$logs/${case}_$tool.log" 2>&1
    echo "$case $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$logs/${case}_$tool.log" | tail -n 2 | tr '\n' ' ')"
  done
done
