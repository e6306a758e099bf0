#!/usr/bin/env bash
# Session 29 (issue 23): Nsight Compute of the attention-sink forward (the suite's 1 x 32, 256 / 256 and its
# variant's 2 x 24, 384 / 640) through real TileLang and tile2triton, and both kernels' sources.  On the GPU
# machine from the repo root, after sourcing .tl/setup.sh:  bash benchmarks/hand_variants/sink_fwd_ncu.sh
# ($OUT gets sink_ncu.tgz: details pages, raw csv, SASS csv with per-instruction stall samples, sources)
set -u
NCU_REGEX=main
source benchmarks/hand_variants/ncu_prof.sh sink
for shape in "1 32 256 256 none" "2 24 384 640 none" "1 32 256 256 128"; do
  tag=$(echo $shape | tr ' ' '_')
  prof t2t_$tag . python3 benchmarks/hand_variants/sink_fwd_run.py $D/.tlx/examples $shape --tile2triton --source $OUT/sink
  prof tl_$tag /tmp/tlsite python3 benchmarks/hand_variants/sink_fwd_run.py $D/.tlx/examples $shape --source $OUT/sink
done
ts done
tar czf $OUT/sink_ncu.tgz * && cd $D && rm -rf $OUT/sink
