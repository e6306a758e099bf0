#!/usr/bin/env bash
# Nsight Compute's view of TileLang's sparse MLA backward (examples/deepseek_v32/sparse_mla_bwd.py, the bwd
# kernel) at the suite's shape (S=256, SKV=512, H=64, topk=256), through real TileLang and through tile2triton:
# duration, registers, local-memory (spill) traffic, issue stalls per cause, memory throughput; and TileLang's
# generated CUDA source for reading beside ours. On the GPU machine, from the repo root, after sourcing
# .tl/setup.sh (TileLang in /tmp/tlsite, its examples in .tlx):  bash benchmarks/mlabwd_ncu.sh OUT
set -u
out=${1:-/tmp/mlabwd_ncu}
mkdir -p "$out"
cat > /tmp/mlabwd_ncu_run.py <<'PY'
import sys
import torch
impl, out = sys.argv[1], sys.argv[2]
if impl == "tile2triton":
    from tile2triton.cli import install_tilelang_alias
    install_tilelang_alias()
sys.path.insert(0, ".tlx/examples/deepseek_v32")
import sparse_mla_bwd as m
from sparse_mla_fwd import sparse_mla_fwd_interface
torch.manual_seed(1)
B, S, SKV, H, HKV, DQKV, DV, topk = 1, 256, 512, 64, 1, 576, 512, 256
q = torch.randn((B, S, H, DQKV), dtype=torch.bfloat16, device="cuda")
kv = torch.randn((B, SKV, HKV, DQKV), dtype=torch.bfloat16, device="cuda")
do = torch.randn((B, S, H, DV), dtype=torch.bfloat16, device="cuda")
indices = torch.full((B, S, HKV, topk), SKV, dtype=torch.int32, device="cuda")
for t in range(S):
    i_i = torch.randperm(max(1, t))[:topk]
    indices[0, t, 0, : len(i_i)] = i_i
o, lse = sparse_mla_fwd_interface(q, kv, indices)
for _ in range(3):
    m.sparse_mla_bwd(q, kv, o, do, indices, lse)
torch.cuda.synchronize()
if impl == "tilelang":
    try:
        delta = m.preprocess(o, do)
        dkv = torch.zeros_like(kv, dtype=torch.float32)
        k = m.bwd.compile(q, kv, do, indices, lse, delta, dkv, H, 512, DQKV - 512, topk, 1, None, True)
        open(f"{out}/tilelang_bwd.cu", "w").write(k.get_kernel_source())
    except Exception as e:  # the source is a reading aid; the timing above stands without it
        print("no source:", type(e).__name__, e)
PY
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
for impl in tilelang tile2triton; do
  echo "### $impl"
  site=$([ $impl = tilelang ] && echo /tmp/tlsite || echo .)
  PYTHONPATH=$site timeout 150 "$NCU" --kernel-name regex:'^bwd' --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,smsp__inst_executed.sum,lts__t_sectors_op_red.sum,sm__sass_inst_executed_op_shared_ld.sum,sm__sass_inst_executed_op_shared_st.sum" \
    python3 /tmp/mlabwd_ncu_run.py $impl "$out" 2>&1 | tee "$out/ncu_$impl.txt" | grep -E "Duration|Registers Per|Warp Cycles|Achieved Occ|Memory Throughput|Compute \(SM\)|stalled|Block Size|Shared Memory|local_op|inst_executed|sectors_op_red|ERR|no source" \
    | sed -E "s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//" | awk 'NF && $NF != "0" && $NF != "0.00"' | head -50
done
