#!/usr/bin/env bash
# Session 61 (issue 23), not yet run: Nsight Compute of the suite's varlen GQA backward (bwd_varlen_run.py), where
# tile2triton at 64-row key tiles trails TileLang at the same tiling by 1.01-1.19x (benchmarks/bwd_row_split_probe.py,
# H100, session 61): tile2triton at 128 rows / 256 threads (split by the pass into 64-row halves) and at 64 / 128 as
# written, TileLang at 64 / 128 and 128 / 256; both kernels' sources.  On the GPU machine from the repo root, after
# sourcing .tl/setup.sh:  bash benchmarks/hand_variants/bwd_varlen_ncu.sh
# ($OUT gets bwd_varlen_ncu.tgz: details pages, raw csv, SASS csv with per-instruction stall samples, sources)
set -u
NCU_REGEX=flash_bwd NCU_TIMEOUT=150
source benchmarks/hand_variants/ncu_prof.sh bwdv
run=benchmarks/hand_variants/bwd_varlen_run.py
prof t2t_128x256_split . python3 $run $D/.tlx/examples 128 256 --tile2triton --source $OUT/bwdv
prof t2t_64x128 . env TILE2TRITON_ROW_SPLIT_BACKWARD=0 python3 $run $D/.tlx/examples 64 128 --tile2triton --source $OUT/bwdv
prof tl_64x128 /tmp/tlsite:. python3 $run $D/.tlx/examples 64 128 --source $OUT/bwdv
prof tl_128x256 /tmp/tlsite:. python3 $run $D/.tlx/examples 128 256 --source $OUT/bwdv
ts done
tar czf $OUT/bwd_varlen_ncu.tgz * && cd $D && rm -rf $OUT/bwdv
