#!/usr/bin/env bash
# Session 21 (issue 23): Nsight Compute of the vertical-slash kernel as main generates it now (its K/V tiles
# through TMA: TILE2TRITON_TMA_STAGES) against TileLang's, and the same suite file under TILE2TRITON_TUNE=search
# (which launch parameters Triton's fastest for this kernel would take).  On the GPU machine from the repo root,
# carrying .tl:  bash benchmarks/hand_variants/vs_ncu.sh   ($OUT gets the details pages and the SASS csv)
set -u
source .tl/setup.sh
export PYTHONPATH=. TORCH_EXTENSIONS_DIR=/tmp/torch_ext
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
t0=$(date +%s); ts() { echo "--- $* at $(( $(date +%s) - t0 ))s"; }
prof() { name=$1; site=$2; shift 2
  ts ncu $name
  PYTHONPATH=$site timeout 150 $NCU --kernel-name regex:vs_sparse --launch-skip 1 --launch-count 1 --import-source no \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy \
    --section InstructionStats --metrics "smsp__inst_executed.sum,sm__cycles_active.avg" \
    -o $OUT/$name -f "$@" > $OUT/$name.log 2>&1
  tail -2 $OUT/$name.log
  $NCU -i $OUT/$name.ncu-rep --page details > $OUT/${name}_details.txt 2>&1
  grep -E "Duration|Registers Per|Warp Cycles Per Issued|Achieved Occ|Compute \(SM\) Th|inst_executed.sum|Dynamic Shared|Block Size" $OUT/${name}_details.txt | head -12
  $NCU -i $OUT/$name.ncu-rep --page raw --csv > $OUT/${name}_raw.csv 2>&1
  $NCU -i $OUT/$name.ncu-rep --page source --csv --print-source sass > $OUT/${name}_sass.csv 2>&1
  rm -f $OUT/$name.ncu-rep
}
prof t2t_vs . python3 benchmarks/hand_variants/tl_vs_run.py --tile2triton
prof tl_vs /tmp/tlsite python3 benchmarks/hand_variants/tl_vs_run.py
ts search
TILE2TRITON_TUNE=search TILE2TRITON_CACHE_DIR=/tmp/t2t_search timeout 200 python3 benchmarks/tilelang_regression.py .tlx \
  --site /tmp/tlsite --files minference -j 2 --out /tmp/vs_search 2>&1 | grep vertical
cat /tmp/t2t_search/tuning.json 2>/dev/null | head -c 600; echo
ts done
cd $OUT && tar czf vs_ncu.tgz *_details.txt *_raw.csv *_sass.csv && rm -f *_details.txt *_raw.csv *_sass.csv *.log
