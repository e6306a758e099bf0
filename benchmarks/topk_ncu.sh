#!/usr/bin/env bash
# Nsight Compute's view of TileLang's topk_selector (examples/deepseek_v32/topk_selector.py) at the suite's
# 64 x 32768, topk 2048, through real TileLang and through tile2triton: duration, issue stalls per cause,
# memory throughput. On the GPU machine, from the repo root, after sourcing .tl/setup.sh (TileLang in
# /tmp/tlsite, its examples in .tlx):  bash benchmarks/topk_ncu.sh
set -u
cat > /tmp/topk_ncu_run.py <<'PY'
import sys
import torch
impl = sys.argv[1]
if impl == "tile2triton":
    from tile2triton.cli import install_tilelang_alias
    install_tilelang_alias()
sys.path.insert(0, ".tlx/examples/deepseek_v32")
from topk_selector import tl_topk
torch.manual_seed(1)
x = torch.randn(64, 32768, device="cuda")
starts = torch.zeros(64, dtype=torch.int32, device="cuda")
ends = torch.full((64,), 32768, dtype=torch.int32, device="cuda")
for _ in range(3):
    tl_topk(x, starts, ends, 2048)
torch.cuda.synchronize()
PY
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
for impl in tilelang tile2triton; do
  echo "### $impl"
  site=$([ $impl = tilelang ] && echo /tmp/tlsite || echo .)
  PYTHONPATH=$site timeout 120 "$NCU" --kernel-name regex:topk --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    python3 /tmp/topk_ncu_run.py $impl 2>&1 | grep -E "Duration|Registers Per|Warp Cycles|Achieved Occ|Memory Throughput|Compute \(SM\)|stalled|Block Size|ERR" \
    | sed -E "s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//" | awk 'NF && $NF != "0" && $NF != "0.00"' | head -45
done
