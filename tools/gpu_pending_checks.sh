#!/usr/bin/env bash
# What session 12 built and could not check on the GPU (its device time ran out), one call (< 4 minutes on an H200):
#     bash tools/gpu_pending_checks.sh TILELANG_CHECKOUT SITE OUT
# TILELANG_CHECKOUT: a TileLang source tree (examples/, testing/); SITE: where real TileLang is installed
# (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where the logs go.
# What confirms each change, and what to do then:
#  1. the GPU tests of the changed numerics and launches pass (float32 `/` as div_rn, T.sqrt as sqrt_rn, unary minus,
#     size multiples);
#  2. benchmarks/dynamic_probe.py: with TILE2TRITON_SIZE_MULTIPLES=1, example_dynamic at 3000 x 2600 x 1000 well below
#     the 0.115 ms it took (TileLang: 0.079), no MISMATCH at any shape, 4096^3 unchanged: then turn the switch on
#     (settings.SIZE_MULTIPLES_DEFAULT) and re-run the suite's variants;
#  3. the cast case at its other shape now passes its own check (div_rn), timed against TileLang;
#  4. the softmax and layernorm rows of the same-source table (one division per element) stay at ~1.00x;
#  5. benchmarks/hostcost_probe.py: host us per call of sparse_gqa_decode_varlen_indice at both shapes, on both sides.
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
TAILN=6 TILE2TRITON_TEST_DEVICE=cuda PYTHONPATH=. step 60 python3 -m pytest -q -k cuda -p no:cacheprovider \
  tests/test_rounding_like_nvcc.py tests/test_size_multiples.py tests/test_math.py tests/test_math_family.py \
  tests/test_constructs_rounding.py
PYTHONPATH=. step 60 python3 benchmarks/dynamic_probe.py
TAILN=12 step 90 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --variants --files cast -j 4 --out "$out/cast"
TAILN=6 PYTHONPATH="$site":. step 60 python3 benchmarks/vs_tilelang.py --rows 16,17 --rounds 1 --jobs 2
PYTHONPATH=. step 40 python3 benchmarks/hostcost_probe.py "$tl/examples"
PYTHONPATH="$site" step 40 python3 benchmarks/hostcost_probe.py "$tl/examples" --impl tilelang
} 2>&1 | tee "$out/pending_checks.log"
