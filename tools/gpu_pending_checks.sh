#!/usr/bin/env bash
# What session 16 could not run on the GPU (its 30 minutes ran out), one call (about 4 minutes on an H200):
#     source .tl/setup.sh && bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT
# TILELANG_CHECKOUT: a TileLang source tree (examples/); SITE: where real TileLang is installed
# (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where logs go.
# (Session 15's checks, the previous version of this script, ran in session 16: gpu_logs/2026-12-02_s16_gpu_checks.log.)
# What it answers: d5889e3 (passes/analysis.Ranges: unsigned dtypes, shifts, |/^, a loop variable's floor under an
# unbounded stop) drops bounds terms from masks, untimed.  Does topk_selector get faster than session 16's 31.1 us
# at 64 x 32768 (benchmarks/topk_probe.py), what does the deepseek_v32 file of the suite read (topk_selector 0.92x
# kernel in session 16's run), and do the tests whose masks changed pass on CUDA?
set -u
tl=$1
site=$2
out=$3
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda PYTHONUNBUFFERED=1 PYTHONPATH=.
t0=$(date +%s)
step() { local lim=$1; shift; echo "### $* (limit ${lim}s, at $(( $(date +%s) - t0 ))s)"; timeout "$lim" "$@" 2>&1 | tail -"${TAILN:-30}"; }
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ln -sfn "$(realpath "$tl")" /tmp/tl  # the tests that read TileLang's examples look there
TAILN=18 step 60 python3 benchmarks/topk_probe.py "$tl/examples" --no-histograms
TAILN=6 TILE2TRITON_TEST_DEVICE=cuda step 150 python3 -m pytest -q -p no:cacheprovider --tb=line tests/test_short_loops.py \
  tests/test_thread_storage_sync.py tests/test_warp_atomics.py tests/test_on_chip_scratch.py tests/test_thread_view.py
TAILN=12 step 200 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --files deepseek_v32 -j 12 \
  --deadline 170 --out "$out/deepseek"
} 2>&1 | tee "$out/pending_checks.log"
