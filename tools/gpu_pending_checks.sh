#!/usr/bin/env bash
# What session 13 saw on the GPU and could not look at again (its device time ran out), one call (< 5 minutes on
# an H200):
#     bash tools/gpu_pending_checks.sh TILELANG_CHECKOUT SITE OUT
# TILELANG_CHECKOUT: a TileLang source tree (examples/, testing/; minference's ops/kernels.cpp too); SITE: where real
# TileLang is installed (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where logs go.
# (Session 12's checks, the first version of this script, all ran in session 13: gpu_logs/2026-12-02_s13_pending_checks.log.)
# What each step answers:
#  1. the suite's flash_decoding and attention_sink files again: session 13's run timed example_gqa_decode,
#     example_mha_inference and example_mha_sink_fwd_bhsd at 0.70x, 0.50x and 0.66x on event time with their kernel
#     time unchanged (session 11: 1.20x, 1.03x, 0.90x), on a host that also slowed TileLang's short cases up to
#     elevenfold; with CUDA faked their calls cost what they did (benchmarks/host_calls_probe.py). Equal again here:
#     the run's host. Low again: profile the call (step 3's --profile shows how);
#  2. example_mha_inference's kernel time (1.02x -> 0.90x between the two runs, its source unchanged but for one
#     correctly rounded division per output element): the same files' kernel column;
#  3. benchmarks/hostcost_probe.py --profile 25: sparse_gqa_decode_varlen_indice's kernel(...) took 39.2 us of host
#     time a call against TileLang's 15.0 at the suite's shape (24.9 vs 16.0 at the variant's) in session 13's
#     probe, 14.4 us with CUDA faked.
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
TAILN=20 step 200 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --files flash_decoding attention_sink \
  -j 12 --deadline 170 --out "$out/suite"
TAILN=60 PYTHONPATH=. step 60 python3 benchmarks/hostcost_probe.py "$tl/examples" --profile 25
PYTHONPATH="$site" step 40 python3 benchmarks/hostcost_probe.py "$tl/examples" --impl tilelang
} 2>&1 | tee "$out/pending_checks.log"
