#!/usr/bin/env bash
# What session 14 could not run on the GPU (its device machine could not be started after its first three
# calls), one call (about 5 minutes on an H200):
#     bash tools/gpu_pending_checks.sh TILELANG_CHECKOUT SITE OUT
# TILELANG_CHECKOUT: a TileLang source tree (examples/, testing/; minference's ops/kernels.cpp too); SITE: where real
# TileLang is installed (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where logs go.
# (Session 13's checks, the previous version of this script, ran in session 14: gpu_logs/2026-12-02_s14_pending_checks.log.)
# What each step answers:
#  1. TILE2TRITON_SHARED_DIVISORS (off): are its quotients div.rn.f32's bit for bit on the GPU (the test runs the
#     kernel with the switch off and on, over every float32 magnitude and the special values)?
#  2. what does it save (benchmarks/division_probe.py: per-element div_rn, shared divisor, fast math; the two exact
#     forms must agree)?  Session 14's sweeps put the per-element div_rn at 1-8 us of the sink forward's short
#     shapes.  If 1 passes and 2 shows a saving, turn it on (settings.SHARED_DIVISORS_DEFAULT, lower.py's
#     LoweringOptions default) and re-time the suite's flash_decoding and flash_attention files (step 3 does, with
#     it on): example_mha_inference's kernel ratio fell 1.02x -> 0.90x when division became correctly rounded.
set -u
tl=$1
site=$2
out=$3
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda PYTHONUNBUFFERED=1
t0=$(date +%s)
step() { local lim=$1; shift; echo "### $* (limit ${lim}s, at $(( $(date +%s) - t0 ))s)"; timeout "$lim" "$@" 2>&1 | tail -"${TAILN:-30}"; }
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TAILN=8 TILE2TRITON_TEST_DEVICE=cuda PYTHONPATH=. step 90 python3 -m pytest -q tests/test_rounding_like_nvcc.py -p no:cacheprovider
TAILN=12 PYTHONPATH=. step 150 python3 benchmarks/division_probe.py
TAILN=24 TILE2TRITON_SHARED_DIVISORS=1 step 200 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" \
  --files flash_decoding flash_attention/ -j 12 --deadline 170 --out "$out/suite"
} 2>&1 | tee "$out/pending_checks.log"
