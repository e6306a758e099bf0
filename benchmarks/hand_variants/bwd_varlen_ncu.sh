#!/usr/bin/env bash
# Session 61 (issue 23), not yet run: Nsight Compute of the suite's varlen GQA backward (bwd_varlen_run.py), where
# tile2triton at 64-row key tiles trails TileLang at the same tiling by 1.01-1.19x (benchmarks/bwd_row_split_probe.py,
# H100, session 61): tile2triton at 128 rows / 256 threads (split by the pass into 64-row halves) and at 64 / 128 as
# written, TileLang at 64 / 128 and 128 / 256; both kernels' sources.  On the GPU machine from the repo root, after
# sourcing .tl/setup.sh:  bash benchmarks/hand_variants/bwd_varlen_ncu.sh
# ($OUT gets bwd_varlen_ncu.tgz: details pages, raw csv, SASS csv with per-instruction stall samples, sources)
set -u
export PYTHONPATH=. TORCH_EXTENSIONS_DIR=/tmp/torch_ext
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
mkdir -p $OUT/bwdv && cd $OUT/bwdv && D=$OLDPWD
t0=$(date +%s); ts() { echo "--- $* at $(( $(date +%s) - t0 ))s"; }
prof() { name=$1; site=$2; shift 2
  ts ncu $name
  (cd $D && PYTHONPATH=$site timeout 150 $NCU --kernel-name regex:flash_bwd --launch-skip 2 --launch-count 1 \
    --import-source no --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats \
    --section Occupancy --section InstructionStats --section MemoryWorkloadAnalysis -o $OUT/bwdv/$name -f "$@" \
    > $OUT/bwdv/$name.log 2>&1)
  tail -1 $name.log
  $NCU -i $name.ncu-rep --page details > ${name}_details.txt 2>&1
  grep -E "^    Duration|Registers Per|Warp Cycles Per Issued|Achieved Occ|Block Size|Grid Size|Dynamic Shared|Executed Ipc A" \
    ${name}_details.txt | head -14
  $NCU -i $name.ncu-rep --page raw --csv > ${name}_raw.csv 2>&1
  $NCU -i $name.ncu-rep --page source --csv --print-source sass > ${name}_sass.csv 2>&1
  rm -f $name.ncu-rep
}
run=benchmarks/hand_variants/bwd_varlen_run.py
prof t2t_128x256_split . python3 $run $D/.tlx/examples 128 256 --tile2triton --source $OUT/bwdv
prof t2t_64x128 . env TILE2TRITON_ROW_SPLIT_BACKWARD=0 python3 $run $D/.tlx/examples 64 128 --tile2triton --source $OUT/bwdv
prof tl_64x128 /tmp/tlsite:. python3 $run $D/.tlx/examples 64 128 --source $OUT/bwdv
prof tl_128x256 /tmp/tlsite:. python3 $run $D/.tlx/examples 128 256 --source $OUT/bwdv
ts done
tar czf $OUT/bwd_varlen_ncu.tgz * && cd $D && rm -rf $OUT/bwdv
