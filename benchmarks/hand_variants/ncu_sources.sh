#!/usr/bin/env bash
# Session 18's first GPU call (issue 23): the hand-variant probes of this folder, then Nsight Compute with source
# counters (per-SASS-instruction stall samples) on tile2triton's sparse MLA bwd and vertical-slash kernels and on
# TileLang's vertical-slash kernel.  On the GPU machine from the repo root, carrying .tl (TileLang's wheels and
# examples: benchmarks/tilelang_regression.py says how):  bash benchmarks/hand_variants/ncu_sources.sh
# $OUT gets NAME_details.txt (ncu's details page) and NAME_sass.csv (ncu --page source --csv --print-source sass).
set -u
source .tl/setup.sh
export PYTHONPATH=. TORCH_EXTENSIONS_DIR=/tmp/torch_ext
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu $NCU $($NCU --version | tail -1)"
t0=$(date +%s); ts() { echo "--- $* at $(( $(date +%s) - t0 ))s"; }
ts bwd variants; timeout 150 python3 benchmarks/hand_variants/bwd_variants.py 2>&1 | grep -v Warn | tail -12
ts vs variants; timeout 200 python3 benchmarks/hand_variants/vs_variants.py 2>&1 | grep -v Warn | tail -14
prof() { name=$1; regex=$2; site=$3; shift 3
  ts ncu $name
  PYTHONPATH=$site timeout 120 $NCU --kernel-name regex:"$regex" --launch-skip 1 --launch-count 1 --import-source no \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy \
    --metrics "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,smsp__inst_executed.sum,lts__t_sectors_op_red.sum" \
    -o $OUT/$name -f "$@" > $OUT/$name.log 2>&1
  tail -3 $OUT/$name.log
  $NCU -i $OUT/$name.ncu-rep --page details > $OUT/${name}_details.txt 2>&1
  grep -E "Duration|Registers Per|Warp Cycles Per Issued|Achieved Occ|Compute \(SM\) Th|Memory Through|local_op|inst_executed.sum|Block Limit Reg|Stall" $OUT/${name}_details.txt | head -20
  $NCU -i $OUT/$name.ncu-rep --page source --csv --print-source sass > $OUT/${name}_sass.csv 2>&1; wc -l $OUT/${name}_sass.csv
}
ONLY=base prof t2t_bwd bwd_kernel . python3 benchmarks/hand_variants/bwd_variants.py
ONLY=base prof t2t_vs vs_sparse . python3 benchmarks/hand_variants/vs_variants.py
prof tl_vs vs_sparse /tmp/tlsite python3 benchmarks/hand_variants/tl_vs_run.py
ts done
cd $OUT && tar czf ncu.tgz *.ncu-rep && rm -f *.ncu-rep; ls -la $OUT
