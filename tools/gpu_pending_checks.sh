#!/usr/bin/env bash
# What session 15 could not run on the GPU (its 30 minutes ran out), two calls (about 5 and 4 minutes on an H200):
#     bash tools/gpu_pending_checks.sh TILELANG_CHECKOUT SITE OUT 1
#     bash tools/gpu_pending_checks.sh TILELANG_CHECKOUT SITE OUT 2
# TILELANG_CHECKOUT: a TileLang source tree (examples/, testing/; minference's ops/kernels.cpp too); SITE: where real
# TileLang is installed (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where logs go.
# (Session 14's checks, the previous version of this script, ran in session 15: gpu_logs/2026-12-02_s15_pending_checks.log.)
# What each call answers:
#  1. the on-chip scratch area (TILE2TRITON_ON_CHIP_SCRATCH, default "atomics"; codegen/scratch.py): do the scratch
#     tests pass on CUDA in one process (session 15's single-process run crashed: the load hook, registered by name,
#     handed a stand-in driver's fake handle to libcuda; runtime/static_shared.py now checks the driver), and with
#     every buffer on chip (=on) under gemms, copies and reductions?  Then part 3 of the suite (minference,
#     warp_specialize and the rest), which session 15 did not re-time.
#     Then TILE2TRITON_DEFER_REDUCERS (off until timed; codegen/atomics._defer_reduction): gemv_alloc_reducer,
#     the sixth kernel of the suite's example_gemv, ran 183 us against TileLang's 24 us (a cross-thread tl.sum of a
#     128 x 128 tile every step); benchmarks/reducer_probe.py times it off and on at four shapes (call 2).
#  2. part 1 of the suite under the default (session 15 timed part 1 with the form everywhere: example_gemm_intrinsics
#     17.4 -> 18.6 us on chip, which the default no longer takes; it should read about 1.17x kernel again) and the
#     deepseek_v32 file (topk_selector on chip: 0.87x kernel in session 15).
set -u
tl=$1
site=$2
out=$3
call=${4:-1}
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda PYTHONUNBUFFERED=1
if [ "$call" = 1 ]; then
  bash tools/gpu_on_chip_checks.sh "$tl" "$site" "$out" 3/3
else
  PYTHONPATH=. timeout 300 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --part 1/3 -j 14 --deadline 270 \
    --out "$out/suite" 2>&1 | tail -30
  PYTHONPATH=. timeout 200 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --files deepseek_v32 -j 12 \
    --deadline 170 --out "$out/deepseek" 2>&1 | tail -12
  PYTHONPATH=. timeout 150 python3 benchmarks/reducer_probe.py "$tl/examples"
fi 2>&1 | tee "$out/pending_checks_$call.log"
