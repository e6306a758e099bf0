"""session 33: where the host time of sparse_gqa_decode_varlen_indice's call goes (event 0.29x, kernels 1.36x)."""
import cProfile, io, math, pstats, sys, time
sys.path.insert(0, ".")
from tile2triton.cli import install_tilelang_alias
install_tilelang_alias()
import torch
sys.path.insert(0, ".tlx/examples/blocksparse_attention")
import example_tilelang_sparse_gqa_decode_varlen_indice as ex

torch.manual_seed(42)
batch, heads, heads_kv, L, dim, dim_v, ratio, bs = 8, 32, 8, 8192, 128, 128, 0.8, 32
sel = int(math.ceil(L * (1 - ratio) / bs))
Q = torch.randn((batch, heads, dim), dtype=torch.float16, device="cuda")
K = torch.randn((batch, L, heads_kv, dim), dtype=torch.float16, device="cuda")
V = torch.randn((batch, L, heads_kv, dim_v), dtype=torch.float16, device="cuda")
seqlens = torch.randint(1, L, (batch,), dtype=torch.int32, device="cuda")
idx = torch.full((batch, heads_kv, sel), -1, dtype=torch.int32, device="cuda")
nvalid = torch.ceil(seqlens / bs).int()
for b in range(batch):
    for h in range(heads_kv):
        v = torch.randperm(int(nvalid[b]), device="cuda", dtype=torch.int32)[:sel]
        idx[b, h, : len(v)] = v
idx, _ = idx.sort(dim=-1, descending=True)
sk = ex.SparseFlashAttn(batch, heads, heads_kv, dim, dim_v, bs)
run = lambda: sk(Q, K, V, idx, seqlens)
for _ in range(100):
    run()
torch.cuda.synchronize()


def per_call(fn, n=3000):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


print(f"whole call: {per_call(run):.1f} us")
fa = ex.flashattn
kw = dict(block_N=bs, block_H=sk.block_H, num_stages=2, threads=128)
print(f"factory lookup flashattn(...): {per_call(lambda: fa(batch, heads, heads_kv, dim, dim_v, **kw)):.1f} us")
kern = fa(batch, heads, heads_kv, dim, dim_v, **kw)
glse = torch.empty((batch, heads, 16), dtype=torch.float32, device="cuda")
import inspect
src = inspect.getsource(ex.SparseFlashAttn.__call__)
print("num_split line:", [l.strip() for l in src.splitlines() if "num_split" in l][:2])
pr = cProfile.Profile()
pr.enable()
for _ in range(3000):
    run()
pr.disable()
torch.cuda.synchronize()
for key in ("tottime", "cumulative"):
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats(key).print_stats(28)
    print("\n".join(l for l in s.getvalue().splitlines() if l.strip())[:6000])
