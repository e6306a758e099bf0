#!/usr/bin/env bash
# Session 17's GPU checks of TILE2TRITON_LICM_GUARD (codegen/rules.keeps_invariants_in_loop), one call (about
# 8 minutes on an H200):
#     source .tl/setup.sh && bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT
# TILELANG_CHECKOUT: a TileLang source tree (examples/); SITE: where real TileLang is installed
# (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where logs go.
# What it answers: do the guard's tests and the sparse-MLA tests pass on CUDA; what do the suite's files with
# attention-forward loops (an operand stored before the loop: the guard's other candidates) read with it; and
# sparse_mla_bwd at the variants' other shape.  (The deepseek_v32, flash_attention and attention_sink files
# were timed with it in the same session: gpu_logs/2026-12-03_s17_licm_suite.log.)
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
TAILN=6 TILE2TRITON_TEST_DEVICE=cuda step 120 python3 -m pytest -q -p no:cacheprovider --tb=line tests/test_licm_guard.py \
  tests/test_transposed_gemms.py tests/test_perf_sparse_mla.py tests/test_column_split.py
TAILN=20 step 300 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --files blocksparse_attention \
  seer_attention deepseek_nsa flash_decoding deepseek_mla minference -j 14 --deadline 260 --out "$out/files"
TAILN=10 step 140 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --variants --files deepseek_v32 -j 12 \
  --deadline 120 --out "$out/variants"
} 2>&1 | tee "$out/pending_checks.log"
