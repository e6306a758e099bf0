# Sourced by the Nsight Compute scripts of this folder (sink_fwd_ncu.sh, bwd_varlen_ncu.sh): run from the repo root
# with OUT set; NCU_REGEX names the kernels to profile, NCU_TIMEOUT bounds each run (120 s).  Makes $OUT/$1 the
# working folder (the repo root stays $D) and defines ts (a timestamped line) and
#     prof NAME SITE COMMAND...
# which profiles the third launch of a matching kernel in COMMAND (PYTHONPATH=SITE), prints the details page's
# main lines, and leaves NAME_details.txt, NAME_raw.csv and NAME_sass.csv (per-instruction stall samples).
export PYTHONPATH=. TORCH_EXTENSIONS_DIR=/tmp/torch_ext
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
NCU_DIR=$OUT/$1
mkdir -p $NCU_DIR && cd $NCU_DIR && D=$OLDPWD
t0=$(date +%s); ts() { echo "--- $* at $(( $(date +%s) - t0 ))s"; }
prof() { name=$1; site=$2; shift 2
  ts ncu $name
  (cd $D && PYTHONPATH=$site timeout ${NCU_TIMEOUT:-120} $NCU --kernel-name regex:$NCU_REGEX --launch-skip 2 \
    --launch-count 1 --import-source no --section SpeedOfLight --section WarpStateStats --section SourceCounters \
    --section LaunchStats --section Occupancy --section InstructionStats --section MemoryWorkloadAnalysis \
    -o $NCU_DIR/$name -f "$@" > $NCU_DIR/$name.log 2>&1)
  tail -1 $name.log
  $NCU -i $name.ncu-rep --page details > ${name}_details.txt 2>&1
  grep -E "^    Duration|Registers Per|Warp Cycles Per Issued|Achieved Occ|Block Size|Dynamic Shared|Executed Ipc A" ${name}_details.txt | head -12
  $NCU -i $name.ncu-rep --page raw --csv > ${name}_raw.csv 2>&1
  $NCU -i $name.ncu-rep --page source --csv --print-source sass > ${name}_sass.csv 2>&1
  rm -f $name.ncu-rep
}
