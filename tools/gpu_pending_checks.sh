#!/usr/bin/env bash
# What sessions 17-20 left for the GPU: the whole suite on main, for BENCHMARKS.md's table from one run; which
# kernels the LICM guard, the index prefetch, the rows loaded once and the global-order barriers take (the generated
# sources that carry disable_licm / next_ / _row = / the barrier's comment); and, with "tests" among the parts, the CUDA run of the tests of
# the global-order pass (session 19: passes/order_global.py) and of the index prefetch, whose list-updating loop
# raced on the GPU before it, and of session 31's masks as float arithmetic (codegen/masks.py), with the kernels that
# take them.
# Two calls of under 10 minutes each, one half of the suite a call (the CUDA tests beside one of them if time allows):
#     source .tl/setup.sh && PART_LIMIT=585 PART_DEADLINE=520 bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT 1/2
#     source .tl/setup.sh && PART_LIMIT=585 PART_DEADLINE=520 bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT 2/2
# (with thirds, "tests 3/3" and "1/3 2/3" at the default 280 s a part, as sessions 18-33 ran it, cases miss the
# deadline once TileLang compiles cold: below)
# .tl (git-ignored, carried; `bash tools/carry_tilelang.sh TILELANG_CHECKOUT` makes it): setup.sh, which unpacks
# tl_src.tar.xz (TileLang's examples/) into .tlx and site.tar.xz (TileLang's wheels, unzipped) into /tmp/tlsite.
# TILELANG_CHECKOUT: a TileLang source tree (examples/); SITE: where real TileLang is installed
# (benchmarks/tilelang_regression.py's docstring says how to carry it); OUT: where logs go; PARTS: the suite's parts.
# Then, here: python3 benchmarks/tilelang_regression.py --summary r1 r2 (the part files of both calls).
# Two parts in one call no longer fit (session 36: a third of the suite takes 265 s with TileLang's cold compiles, so
# 13 cases missed a 250 s deadline); session 37 ran halves, one a call (PART_LIMIT=585
# PART_DEADLINE=520, parts "1/2" then "2/2"): 385 s and 340 s on an H100 (.tl's s37_part.sh did the same by hand).
# (Session 18's checks, the previous version of this script, had no "tests" part.)
# Part "split" (session 38, about 400 s): bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT split
# Part "digits" (session 41; session 42 ran its pieces by hand on an H100: BENCHMARKS.md, gpu_logs/2026-12-06_s42_h100/,
# which found gemm_sp's 3-stage race): the digit reads and writes
# (TILE2TRITON_DIGIT_READS) on the kernels whose generated source they changed, offline: both implementations on the
# suite's dequantize_gemm and gemm files and the beyond folders gemm_sp and gdn, then tile2triton alone with the
# switch on and off (about 450 s): bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT digits
# Part "s42" (session 42; session 43 ran its rms_norm_splitk edits and the folders dsa_hisa, norm, online_softmax and
# gdn, gpu_logs/2026-12-06_s43_h100/: gemm_sp and kda are what it would add, about 420 s): the beyond folders session 42's changes touch, both
# implementations (gemm_sp: at most 2 stages for its 128 x 128 x 64 config, codegen/gemm_kinds.register_a_race;
# norm, kda, dsa_hisa, gdn, online_softmax: unit axes as tl.reshape, TILE2TRITON_UNIT_RESHAPES), then
# rms_norm_splitk's store loop pipelined by text edits (benchmarks/hand_variants/source_edits.py):
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s42
# Part "s43" (session 43; session 44 ran it, on by default since 6836912; about 200 s): TILE2TRITON_TMA_PIPELINED_ONLY off and on, tile2triton alone, on
# every kernel whose generated source it changes offline (Triton 3.6, sm_90): the suite's three flash-attention
# backwards (their preprocess kernel's dot-less loop), block_mean_pooling and kda's chunk_bwd_intra and
# chunk_intra_token_parallel; it becomes the default if none is slower:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s43
# Part "s48" (session 48; session 49 ran it, 190 s on an H100: gpu_logs/2026-12-06_s49_h100/probes.md): TILE2TRITON_FEW_TRIP_STAGES on and off on the suite kernels it
# changes (both sink forwards, mha_fwd bhsd / bshd: 64 blocks of at most 2 key tiles, 3 -> 2 stages), and the varlen
# GQA backward (0.87x) with its loop split off and with the source's launch:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s48
# Part "s49" (session 49; session 50 ran it, 158 s on an H200: gpu_logs/2026-12-07_s50_h200/probes.md): TILE2TRITON_FEW_TRIP_STAGES on and off on the second variant set's
# attention-sink cases, both implementations (the rule now takes only grids of more blocks than SMs); then the causal
# varlen forward at that set's shape (0.83x) with its two loops' stages and its split edited as text:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s49
# Part "s50" (session 50; session 53 ran its parts by hand with the rule built, BENCHMARKS.md; about 400 s): the varlen GQA backward (0.88x in the suite) by text edits of its
# generated kernel (benchmarks/hand_variants/gqa_bwd_varlen_wrap_edits.json): its split loops each wrapped in
# `if start < stop:`, and the loop not split, wrapped and not; session 50's H100 probe (gqa_bwd_varlen_edits.json) put
# its gap on the register edge (see BENCHMARKS.md, "Session 50"); then the causal varlen forward (0.83x at the second
# variant set's shape) with its x axis reversed and its masked tail at 2 stages (varlen_fwd_order_edits.json);
# then TILE2TRITON_HEAVY_FIRST (codegen/block_order.py, off) off and on over a sweep of causal forward shapes
# (benchmarks/heavy_first_sweep.py), on in one group and with the heads in groups of 8 and 2
# (TILE2TRITON_HEAVY_FIRST_GROUP, session 51: the blocks running together then read fewer heads' K and V). Part "s50b" (about 300 s): the switch off and on (two pairs) on the six timed
# causal forwards of the suite and the second variant set it reorders (on by default since session 53: runs of ~2
# waves faster on the four causal forwards, slower nowhere past noise; pairs now time the default against =0):
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s50
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s50b
# Part "s55" (session 55, not yet run: the device time ran out; about 300 s): TILE2TRITON_ROW_SPLIT (passes/row_split.py,
# on) built after its probe: its CUDA tests, benchmarks/row_split_probe.py's 128-row source with the switch on and off
# (the pass's kernel is the probe's 64-row one up to index arithmetic, offline), then the four suite kernels it splits
# (both sink forwards, mha_fwd_bhsd / bshd: 64 blocks) off and on, two pairs; it stays on only if faster there:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s55
# Part "s56" (session 56, not yet run: the device time ran out; about 150 s): TILE2TRITON_ROW_SPLIT_WAVES (the launch
# heuristic's split past half a wave, runtime/tuning._rows_split) off and on where no call has timed it: the probe's
# 128-row tiles on 128 threads over 160-768 blocks (offline the same Triton as on 256 at the shapes checked), and
# example_mha_fwd_bshd at the second variant set's shape (384 blocks, causal, head dim 64, 2 x 24 x 1024: where the
# causal sink forward lost 6%), the one variant kernel it splits that session 56 did not time:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s56
# Part "s57" (session 57; session 58 ran it: fp4's passed, int4's test compared a CUDA output with a CPU reference,
# fixed offline and not re-run; the missed suite cases timed; about 250 s): the CUDA run of the casts that read one
# element of an int8 / uint8 register tile in a loop (registers.one_hot_pick converts the 32-bit tl.sum back; the
# tests failed on the GPU before), and the suite cases session 57's halves missed at their 300 s deadline:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s57
# Part "s58" (session 58 ran it through .tl/s58c.sh, about 40 s: TileLang 0.1.15 cannot build the examples, its T.gemm
# has no k_pack, so only tile2triton's times; BENCHMARKS.md "Session 58"): the beyond folder amd (TileLang's MI300
# flash attention, forward and backward, one config each) through both implementations:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s58
# Part "s59" (session 59; session 60 ran it, 201 s on an H100: snake 18% faster on the backward, 3% on the block-sparse
# attention, the sink backwards within noise, so it stays on; BENCHMARKS.md "Session 60"): TILE2TRITON_SNAKE_ORDER (codegen/block_order.py,
# on) on and off, two pairs, on every timed kernel it takes offline (sm_90, Triton 3.6): the causal backward of the second
# variant set (its index arithmetic timed as a text edit in session 59: 39.99 -> 33.35 us), the block-sparse attention of
# set 1 (240 blocks), and the attention-sink backwards' forward kernels (mha: the suite's and set 2's, gqa: sets 1 and 2):
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s59
# Part "s60" (session 60; run in session 61 on an H100, 246 s: the split 3-21% faster under half a wave, both suite
# backwards 6% faster, so TILE2TRITON_ROW_SPLIT_BACKWARD is on; BENCHMARKS.md "Session 61"): does an attention backward on a grid under
# one wave gain from key tiles of half the rows, as the forward's row split does (passes/row_split.py refuses a
# backward: dQ sums over the key rows, but only into an atomic add)?  benchmarks/bwd_row_split_probe.py times
# example_gqa_bwd_tma_reduce_varlen's flashattn_bwd_split (0.87x in the suite) at block_M 128 / 256 threads and 64 / 128
# over grids of 32-512 blocks, through both implementations; then the two suite backwards the pass's backward rows
# (TILE2TRITON_ROW_SPLIT_BACKWARD, on since then) take offline (sm_90, Triton 3.6: the varlen one's spills 212/200 -> 44/40
# bytes, example_gqa_bwd's 12/12 -> 0/0) with it off and on (the defaults), two pairs:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s60
# Part "s61" (session 61; about 200 s): the backward row split (on since session 61) off and on (the defaults), two
# pairs, on the two other suite backwards it takes offline (sm_90, Triton 3.6): the GQA attention-sink backward and its
# sliding window, whose dK / dV are tile atomics:
#     bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite OUT s61
set -u
tl=$1
site=$2
out=$3
parts=$4
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda PYTHONUNBUFFERED=1 PYTHONPATH=.
export TILE2TRITON_CACHE_DIR=/tmp/t2t_cache  # the generated sources, read below
t0=$(date +%s)
step() { local lim=$1; shift; echo "### $* (limit ${lim}s, at $(( $(date +%s) - t0 ))s)"; timeout "$lim" "$@" 2>&1 | tail -"${TAILN:-30}"; }
# SETTING against the defaults, two pairs, for each case FILE:FUNCTION (FILE under the examples; FUNCTION may end @SET)
switch_pairs() {
  local setting=$1 case
  shift
  for case in "$@"; do
    TAILN=4 step 100 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/env_variants.py \
      "$tl/examples/${case%%:*}" "${case#*:}" "$setting" "" "$setting" ""
  done
}
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ln -sfn "$(realpath "$tl")" /tmp/tl
for part in $parts; do
  if [ "$part" = split ]; then
    # session 38's loop split on comparisons decided either way (passes/split.py), not yet timed: the flash_attention
    # file at the second variant set's shapes (mha_fwd_varlen causal: 0.70x before it) and at the suite's (varlen
    # non-causal now splits at its last key tile: 1.10x before), then the launch-choice probe of the weakest
    # backward (benchmarks/hand_variants/launch_choices.py)
    for v in "--variants 2" ""; do
      TAILN=20 step 230 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --part 1/1 -j 14 --deadline 200 \
        --files flash_attention/ $v --out "$out/split${v:+_v2}"
    done
    TAILN=20 step 120 python3 benchmarks/hand_variants/launch_choices.py "$tl/examples" bwd_bshd
    continue
  fi
  if [ "$part" = digits ]; then
    TAILN=14 step 200 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --part 1/1 -j 14 --deadline 170 \
      --files dequantize_gemm gemm/ --out "$out/digits_suite"
    TAILN=26 step 230 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/tilelang_regression.py \
      benchmarks/beyond_suite --site "$site" --part 1/1 -j 14 --deadline 200 --files gemm_sp gdn --out "$out/digits_beyond"
    for case in dequantize_gemm/example_dequant_gemm_fp4_hopper dequantize_gemm/example_dequant_gemm_w4a8 \
        gemm/example_gemm_intrinsics; do
      (cd "$tl/examples/${case%/*}" && PYTHONPATH="$OLDPWD:." TAILN=4 step 120 python3 "$OLDPWD/benchmarks/env_variants.py" \
        "${case#*/}.py" run_regression_perf "" "TILE2TRITON_DIGIT_READS=0")
    done
    for case in gemm_sp/regression_beyond_gemm_sp.py:run_gemm_sp_main gdn/regression_beyond_gdn.py:run_chunk_o_bwd; do
      TAILN=4 step 100 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/env_variants.py \
        "benchmarks/beyond_suite/${case%:*}" "${case#*:}" "" "TILE2TRITON_DIGIT_READS=0"
    done
    continue
  fi
  if [ "$part" = s42 ]; then
    TAILN=40 step 330 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/tilelang_regression.py \
      benchmarks/beyond_suite --site "$site" --part 1/1 -j 14 --deadline 300 --warm-timeout 200 \
      --files gemm_sp norm online_softmax dsa_hisa kda/ gdn --out "$out/s42_beyond"
    TAILN=6 step 80 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/hand_variants/source_edits.py \
      benchmarks/beyond_suite/norm/regression_beyond_norm.py run_rms_norm_splitk rms_norm_splitk \
      benchmarks/hand_variants/rms_splitk_edits.json
    continue
  fi
  if [ "$part" = s43 ]; then
    for case in flash_attention/example_mha_bwd_bshd flash_attention/example_mha_bwd_bhsd flash_attention/example_gqa_bwd; do
      (cd "$tl/examples/${case%/*}" && PYTHONPATH="$OLDPWD:." TAILN=4 step 120 python3 "$OLDPWD/benchmarks/env_variants.py" \
        "${case#*/}.py" run_regression_perf "" "TILE2TRITON_TMA_PIPELINED_ONLY=1")
    done
    for case in dsa_hisa:run_block_mean_pooling kda:run_chunk_bwd_intra kda:run_chunk_intra_token_parallel; do
      TAILN=4 step 100 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/env_variants.py \
        "benchmarks/beyond_suite/${case%:*}/regression_beyond_${case%:*}.py" "${case#*:}" "" "TILE2TRITON_TMA_PIPELINED_ONLY=1"
    done
    continue
  fi
  if [ "$part" = s55 ]; then
    TAILN=3 step 90 env TILE2TRITON_TEST_DEVICE=cuda python3 -m pytest -q tests/test_row_split.py
    for mode in on off; do
      TAILN=14 step 150 env TILE2TRITON_ROW_SPLIT=$mode python3 benchmarks/row_split_probe.py "$tl/examples" --rows 128 --jobs 14
    done
    switch_pairs TILE2TRITON_ROW_SPLIT=off \
      attention_sink/regression_attention_sink.py:regression_example_mha_sink_fwd_bhsd \
      attention_sink/regression_attention_sink.py:regression_example_mha_sink_fwd_bhsd_sliding_window \
      flash_attention/regression_example_flash_attention.py:regression_example_mha_fwd_bhsd \
      flash_attention/regression_example_flash_attention.py:regression_example_mha_fwd_bshd
    continue
  fi
  if [ "$part" = s61 ]; then
    switch_pairs TILE2TRITON_ROW_SPLIT_BACKWARD=0 \
      attention_sink/regression_attention_sink.py:regression_example_gqa_sink_bwd_bhsd \
      attention_sink/regression_attention_sink.py:regression_example_gqa_sink_bwd_bhsd_sliding_window
    continue
  fi
  if [ "$part" = s60 ]; then
    TAILN=14 step 120 python3 benchmarks/bwd_row_split_probe.py "$tl/examples" --impl tile2triton --jobs 12
    TAILN=14 step 200 env PYTHONPATH="$site:." python3 benchmarks/bwd_row_split_probe.py "$tl/examples" --impl tilelang \
      --jobs 14
    switch_pairs TILE2TRITON_ROW_SPLIT_BACKWARD=0 \
      flash_attention/regression_example_flash_attention.py:regression_example_gqa_bwd_tma_reduce_varlen \
      flash_attention/regression_example_flash_attention.py:regression_example_gqa_bwd
    continue
  fi
  if [ "$part" = s59 ]; then
    switch_pairs TILE2TRITON_SNAKE_ORDER=0 \
      flash_attention/regression_example_flash_attention.py:regression_example_mha_bwd_bshd@2 \
      blocksparse_attention/regression_example_blocksparse_attention.py:regression_example_tilelang_block_sparse_attn@1 \
      attention_sink/regression_attention_sink.py:regression_example_mha_sink_bwd_bhsd \
      attention_sink/regression_attention_sink.py:regression_example_gqa_sink_bwd_bhsd@1 \
      attention_sink/regression_attention_sink.py:regression_example_gqa_sink_bwd_bhsd@2 \
      attention_sink/regression_attention_sink.py:regression_example_mha_sink_bwd_bhsd@2
    continue
  fi
  if [ "$part" = s58 ]; then
    TAILN=14 step 240 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/tilelang_regression.py \
      benchmarks/beyond_suite --site "$site" --part 1/1 -j 14 --deadline 210 --files amd --out "$out/s58_amd"
    continue
  fi
  if [ "$part" = s57 ]; then
    TAILN=4 step 120 env TILE2TRITON_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider tests/test_int4.py \
      tests/test_fp4.py
    TAILN=16 step 260 python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --part 1/1 -j 14 --deadline 230 \
      --files gemv/ linear_attention minference seer_attention warp_specialize --out "$out/s57_rest"
    continue
  fi
  if [ "$part" = s56 ]; then
    for w in 1 0; do
      TAILN=14 step 120 env TILE2TRITON_ROW_SPLIT_WAVES=$w python3 benchmarks/row_split_probe.py "$tl/examples" --rows 128 \
        --jobs 14 --sweep waves --source mha --threads 128
    done
    switch_pairs TILE2TRITON_ROW_SPLIT_WAVES=0 \
      flash_attention/regression_example_flash_attention.py:regression_example_mha_fwd_bshd@2
    continue
  fi
  if [ "$part" = s50b ]; then
    # TILE2TRITON_HEAVY_FIRST (codegen/block_order.py, on) off and on, two pairs, on every timed kernel it reverses
    # offline (sm_90): the causal forwards of the suite and of the second variant set
    switch_pairs TILE2TRITON_HEAVY_FIRST=0 \
      attention_sink/regression_attention_sink.py:regression_example_mha_sink_fwd_bhsd \
      attention_sink/regression_attention_sink.py:regression_example_mha_sink_fwd_bhsd@2 \
      blocksparse_attention/regression_example_blocksparse_attention.py:regression_example_tilelang_block_sparse_attn \
      flash_attention/regression_example_flash_attention.py:regression_example_mha_fwd_bshd@2 \
      flash_attention/regression_example_flash_attention.py:regression_example_gqa_fwd_bshd@2 \
      flash_attention/regression_example_flash_attention.py:regression_example_mha_fwd_varlen@2
    continue
  fi
  if [ "$part" = s50 ]; then
    TAILN=6 step 200 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/hand_variants/source_edits.py \
      "$tl/examples/flash_attention/regression_example_flash_attention.py" regression_example_gqa_bwd_tma_reduce_varlen \
      'flash_bwd$' benchmarks/hand_variants/gqa_bwd_varlen_wrap_edits.json
    # the causal varlen forward at the second set's shape (0.83x): its x axis reversed (a causal block's loop grows
    # with bx, the fastest axis; part s50b times the whole reordering, x slowest too) and its masked tail at 2 stages
    TAILN=6 step 150 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/hand_variants/source_edits.py \
      "$tl/examples/flash_attention/regression_example_flash_attention.py" "regression_example_mha_fwd_varlen@2" main \
      benchmarks/hand_variants/varlen_fwd_order_edits.json
    # TILE2TRITON_HEAVY_FIRST off and on over a sweep of causal forward shapes, up to keys and values past L2
    TAILN=12 step 300 python3 benchmarks/heavy_first_sweep.py "$tl/examples"
    continue
  fi
  if [ "$part" = s49 ]; then
    # the few-tile stage rule as session 49 narrowed it (grids of more blocks than SMs) on the second variant set's
    # attention-sink shapes, both implementations, rule on then off: its sliding-window forward (320 blocks of 3 key
    # tiles) is the one kernel there the rule takes
    for v in "" TILE2TRITON_FEW_TRIP_STAGES=0; do
      TAILN=10 step 230 env ${v:+"$v"} python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --part 1/1 -j 14 \
        --deadline 200 --variants 2 --files attention_sink --out "$out/s49${v:+_off}"
    done
    # the causal varlen forward at the variant set's shape (0.83x in session 49): its split loops' stages and the
    # split itself, by text edits of the generated kernel
    TAILN=8 step 240 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/hand_variants/source_edits.py \
      "$tl/examples/flash_attention/regression_example_flash_attention.py" "regression_example_mha_fwd_varlen@2" main \
      benchmarks/hand_variants/varlen_fwd_edits.json
    continue
  fi
  if [ "$part" = s48 ]; then
    # TILE2TRITON_FEW_TRIP_STAGES on / off (two pairs) on the four suite kernels it changes offline, then the varlen GQA
    # backward's loop split (off: SPLIT_MIN_TRIPS=1000) and the source's launch (TUNE=off)
    for case in attention_sink:example_mha_sink_fwd_bhsd attention_sink:example_mha_sink_fwd_bhsd_sliding_window \
        flash_attention:example_mha_fwd_bhsd flash_attention:example_mha_fwd_bshd; do
      file=$(ls "$tl/examples/${case%:*}"/regression_*.py)
      TAILN=4 step 90 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/env_variants.py "$file" \
        "regression_${case#*:}" "" TILE2TRITON_FEW_TRIP_STAGES=0 "" TILE2TRITON_FEW_TRIP_STAGES=0
    done
    TAILN=5 step 90 env TILELANG_EXAMPLES="$(realpath "$tl")/examples" python3 benchmarks/env_variants.py \
      "$tl/examples/flash_attention/regression_example_flash_attention.py" regression_example_gqa_bwd_tma_reduce_varlen \
      "" TILE2TRITON_SPLIT_MIN_TRIPS=1000 TILE2TRITON_TUNE=off "" TILE2TRITON_SPLIT_MIN_TRIPS=1000
    continue
  fi
  if [ "$part" = tests ]; then
    TAILN=8 step 200 python3 -m pytest -q -p no:cacheprovider tests/test_order_global.py tests/test_prefetch_indices.py tests/test_row_once.py \
      tests/test_arithmetic_masks.py
    continue
  fi
  k=${part%/*}
  # each case leaves its own files (JSON, samples): they stay in a scratch folder, only the part's table comes to
  # OUT (the device tool brings back only so many files: session 30 lost a part's JSON among them)
  limit=${PART_LIMIT:-280}
  TAILN=64 step "$limit" python3 benchmarks/tilelang_regression.py "$tl" --site "$site" --part "$part" -j 14 \
    --deadline "${PART_DEADLINE:-$((limit - 30))}" \
    --out "/tmp/pending_checks/r$k"
  mkdir -p "$out/r$k" && cp /tmp/pending_checks/r"$k"/part_*.json "$out/r$k/" 2>/dev/null
done
echo "### kernels the LICM guard took (generated sources with disable_licm)"
grep -l "disable_licm=True" -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
echo "### kernels with an index list read an iteration ahead (passes/prefetch_indices.py)"
grep -l "_now = next_" -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
echo "### kernels with a row of an index list loaded once (passes/row_once.py)"
grep -l "_row = tl.load(" -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
echo "### kernels with a barrier ordering a global buffer's accesses (passes/order_global.py)"
grep -l "every thread's earlier" -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
echo "### kernels computed in 128-column chunks (passes/column_chunks.py)"
grep -lE "_c1 = tl\.(load|zeros|dot)" -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
echo "### kernels with masks of 0 / -inf as float arithmetic (codegen/masks.py)"
grep -l "_neg_inf_unless(" -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
echo "### kernels with their query rows over twice the blocks (passes/row_split.py; the wave rule's too)"
grep -l "row_half = " -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
echo "### kernels dividing by a row's shared divisor (codegen/emit._div_rn_shared)"
grep -l "_div_rn_shared(" -r /tmp/t2t_cache 2>/dev/null | xargs -r head -qn1 | sort | uniq -c
} 2>&1 | tee "$out/pending_checks_$(echo "$parts" | tr -d ' /').log"
