#!/usr/bin/env bash
# Session 29 (issue 23): Nsight Compute of the attention-sink forward (the suite's 1 x 32, 256 / 256 and its
# variant's 2 x 24, 384 / 640) through real TileLang and tile2triton, and both kernels' sources.  On the GPU
# machine from the repo root, after sourcing .tl/setup.sh:  bash benchmarks/hand_variants/sink_fwd_ncu.sh
# ($OUT gets sink_ncu.tgz: details pages, raw csv, SASS csv with per-instruction stall samples, sources)
set -u
export PYTHONPATH=. TORCH_EXTENSIONS_DIR=/tmp/torch_ext
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
mkdir -p $OUT/sink && cd $OUT/sink && D=$OLDPWD
t0=$(date +%s); ts() { echo "--- $* at $(( $(date +%s) - t0 ))s"; }
prof() { name=$1; site=$2; shift 2
  ts ncu $name
  (cd $D && PYTHONPATH=$site timeout 120 $NCU --kernel-name regex:main --launch-skip 2 --launch-count 1 --import-source no \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy \
    --section InstructionStats --section MemoryWorkloadAnalysis -o $OUT/sink/$name -f "$@" > $OUT/sink/$name.log 2>&1)
  tail -1 $name.log
  $NCU -i $name.ncu-rep --page details > ${name}_details.txt 2>&1
  grep -E "^    Duration|Registers Per|Warp Cycles Per Issued|Achieved Occ|Block Size|Dynamic Shared|Executed Ipc A" ${name}_details.txt | head -12
  $NCU -i $name.ncu-rep --page raw --csv > ${name}_raw.csv 2>&1
  $NCU -i $name.ncu-rep --page source --csv --print-source sass > ${name}_sass.csv 2>&1
  rm -f $name.ncu-rep
}
for shape in "1 32 256 256 none" "2 24 384 640 none" "1 32 256 256 128"; do
  tag=$(echo $shape | tr ' ' '_')
  prof t2t_$tag . python3 benchmarks/hand_variants/sink_fwd_run.py $D/.tlx/examples $shape --tile2triton --source $OUT/sink
  prof tl_$tag /tmp/tlsite python3 benchmarks/hand_variants/sink_fwd_run.py $D/.tlx/examples $shape --source $OUT/sink
done
ts done
tar czf $OUT/sink_ncu.tgz * && cd $D && rm -rf $OUT/sink
