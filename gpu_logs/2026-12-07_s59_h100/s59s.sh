# session 59: the snake order (TILE2TRITON_SNAKE_ORDER) on the causal backward of the second variant set, on and off
source .tl/setup.sh >/dev/null 2>&1
export PYTHONPATH=. TILELANG_EXAMPLES=$PWD/.tlx/examples
nvidia-smi --query-gpu=name --format=csv,noheader
timeout ${LIMIT:-44} python3 benchmarks/env_variants.py .tlx/examples/flash_attention/regression_example_flash_attention.py \
  regression_example_mha_bwd_bshd@2 "" TILE2TRITON_SNAKE_ORDER=0 "" TILE2TRITON_SNAKE_ORDER=0
