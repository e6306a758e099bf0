#!/usr/bin/env bash
# The on-chip scratch area (TILE2TRITON_ON_CHIP_SCRATCH: atomics by default; codegen/scratch.py) on the GPU, one call
# (session 15 ran it with the form on everywhere; its first step then crashed in one process, the load hook handed a
# stand-in driver's fake handle, since fixed: run it again):
#     bash tools/gpu_on_chip_checks.sh TILELANG_CHECKOUT SITE OUT [PART]
# TILELANG_CHECKOUT: a TileLang source tree (examples/); SITE: where real TileLang is installed
# (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where logs go.
# 1. the tests of shared buffers in scratch, on CUDA (exact against torch), and the test of a GPU launch
#    path's arguments; 2. the same core files with every shared buffer in scratch (TILE2TRITON_SHARED_SCRATCH=1)
#    and the form everywhere (=on): under gemms, copies and reductions; 3. benchmarks/topk_probe.py: TileLang's topk_selector with
#    global scratch, warp-aggregated atomics and on chip, timed and checked against torch.topk at four shapes;
# 4. with PART (K/3), that part of TileLang's regression suite, timed (about 3 minutes).
set -u
tl=$1
site=$2
out=$3
part=${4:-}
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda PYTHONUNBUFFERED=1 PYTHONPATH=.
t0=$(date +%s)
step() { local lim=$1; shift; echo "### $* (limit ${lim}s, at $(( $(date +%s) - t0 ))s)"; timeout "$lim" "$@" 2>&1 | tail -"${TAILN:-30}"; }
files="tests/test_on_chip_scratch.py tests/test_scratch_atomics.py tests/test_warp_atomics.py tests/test_shared_scratch.py
  tests/test_thread_view.py tests/test_perf_mhc_topk.py tests/test_loop_exits.py tests/test_named_barriers.py
  tests/test_shared_atomic_reduce.py tests/test_thread_local.py tests/test_warp_sections.py tests/test_thread_copies.py
  tests/test_launcher_direct.py"
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ln -sfn "$(realpath "$tl")" /tmp/tl  # the tests that read TileLang's examples look there
TAILN=15 TILE2TRITON_TEST_DEVICE=cuda step 200 python3 -m pytest -q -p no:cacheprovider --tb=line $files
TAILN=15 TILE2TRITON_TEST_DEVICE=cuda TILE2TRITON_SHARED_SCRATCH=1 TILE2TRITON_ON_CHIP_SCRATCH=on step 150 \
  python3 -m pytest -q -p no:cacheprovider --tb=line tests/test_copy.py tests/test_gemm.py tests/test_reduce.py \
  tests/test_parallel.py tests/test_on_chip_scratch.py tests/test_thread_view.py
TAILN=40 step 150 python3 benchmarks/topk_probe.py "$tl/examples"
if [ -n "$part" ]; then
  TAILN=70 step 300 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --part "$part" -j 14 \
    --deadline 270 --out "$out/suite"
fi
} 2>&1 | tee "$out/on_chip_checks.log"
