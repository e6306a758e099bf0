# session 56: TILE2TRITON_ROW_SPLIT_WAVES (runtime/tuning._rows_split's wave rule) on and off
source .tl/setup.sh
export PYTHONPATH=. TILELANG_EXAMPLES=$(realpath .tlx/examples)
for run in "sink 256" "mha 256"; do
  set -- $run
  for w in 1 0; do
    echo "## $1 threads $2 waves=$w"
    TILE2TRITON_ROW_SPLIT_WAVES=$w timeout 120 python3 benchmarks/row_split_probe.py .tlx/examples --rows 128 --jobs 14 --sweep waves --source $1 --threads $2 2>&1 | tail -13
  done
done
for case in flash_attention/regression_example_flash_attention.py:regression_example_mha_fwd_bhsd@1 \
    flash_attention/regression_example_flash_attention.py:regression_example_mha_fwd_bshd@1 \
    attention_sink/regression_attention_sink.py:regression_example_mha_sink_fwd_bhsd@2 \
    attention_sink/regression_attention_sink.py:regression_example_mha_sink_fwd_bhsd_sliding_window@2; do
  timeout 100 python3 benchmarks/env_variants.py ".tlx/examples/${case%%:*}" "${case#*:}" TILE2TRITON_ROW_SPLIT_WAVES=0 "" TILE2TRITON_ROW_SPLIT_WAVES=0 "" 2>&1 | tail -4
done
