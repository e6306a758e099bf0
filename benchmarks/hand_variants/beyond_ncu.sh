#!/usr/bin/env bash
# Session 43 (issue 23): Nsight Compute's launch, occupancy and throughput sections of beyond-suite kernels through
# real TileLang and tile2triton (one launch each, after two), to tell a kernel that runs fewer blocks at once
# (registers, shared memory) from one that does more work.  On the GPU machine from the repo root, after
# `source .tl/setup.sh`:  bash benchmarks/hand_variants/beyond_ncu.sh FOLDER:run_CASE:KERNEL_REGEX ...
# (FOLDER under benchmarks/beyond_suite).  Prints a few lines a run; $OUT/ncu gets each details page.
# SECTIONS="--section InstructionStats ...": more of ncu's sections.
set -u
export PYTHONPATH=. TILELANG_EXAMPLES=${TILELANG_EXAMPLES:-$PWD/.tlx/examples}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
mkdir -p "$OUT/ncu"
for spec in "$@"; do
  IFS=: read -r folder case regex <<< "$spec"
  file=benchmarks/beyond_suite/$folder/regression_beyond_$folder.py
  for impl in tl t2t; do
    name=${case#run_}_$impl
    if [ $impl = tl ]; then site=/tmp/tlsite:.; flag=; else site=.; flag=--tile2triton; fi
    PYTHONPATH=$site timeout 150 "$NCU" --clock-control none --kernel-name regex:"$regex" --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats ${SECTIONS:-} \
      python3 benchmarks/hand_variants/beyond_case.py "$file" "$case" $flag > "$OUT/ncu/$name.txt" 2>&1
    echo "== $name: $(grep -E '^\s+(Duration|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Block Limit Registers|Block Limit Shared Mem|Waves Per SM|Memory Throughput|Grid Size|Block Size|Warp Cycles Per Issued Instruction)\b' "$OUT/ncu/$name.txt" | awk '{$1=$1; print}' | tr '\n' ';')"
  done
done
