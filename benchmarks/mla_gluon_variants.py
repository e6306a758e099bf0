"""MLA decode written by hand in Gluon: the experiments behind codegen/gluon_fullcol.py.

Two 4-warp consumer partitions split S's and O's columns (TileLang's ``GemmWarpPolicy.FullCol``) and
trade row partials and P halves through shared memory and mbarriers; one warp loads with TMA.
Variants (``gpu_logs/2026-12-01_s7_gluon_mla.log``):
- ``SUM_EXCHANGE``: trade the row sum every iteration (what the route generates), or keep a
  per-consumer partial sum and trade it once after the loop;
- ``OVERLAP``: issue the next S before P V (P's single shared tile then serialises the consumers).

On an H200 (sm_90, Triton with Gluon), from the repo root:

    PYTHONPATH=. python benchmarks/mla_gluon_variants.py        # the four variants and the tl lowering
    python benchmarks/mla_gluon_variants.py --offline           # compile them for sm_90 here (no GPU)

The kernel is a template (sizes and the Triton version's names filled in), written to a temporary
module so that Gluon can read its source.
"""

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

KERNEL = '''
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait,
)


@gluon.jit
def _exchange(val, buf, ready, j, c: gl.constexpr, layout: gl.constexpr):
    """Write this consumer's row partials, wait for the other's, return them."""
    slot = (j % 2) * 2
    buf.index(slot + c).store(val)
    gl.BARRIER()
    mbarrier.arrive(ready.index(j % 2), count=1)
    mbarrier.wait(ready.index(j % 2), (j // 2) & 1)
    return buf.index(slot + 1 - c).load(layout)


@gluon.jit
def _scores(q_lo, q_hi, q_pe, kv_lo, kv_hi, kpe, c: gl.constexpr, s_layout: gl.constexpr):
    rows: gl.constexpr = 32
    acc = gl.zeros([64, 32], gl.float32, s_layout)
    acc = warpgroup_mma(q_lo, kv_lo.slice(c * rows, rows, dim=0).permute((1, 0)), acc, use_acc=False, is_async=True)
    acc = warpgroup_mma(q_hi, kv_hi.slice(c * rows, rows, dim=0).permute((1, 0)), acc, is_async=True)
    acc = warpgroup_mma(q_pe, kpe.slice(c * rows, rows, dim=0).permute((1, 0)), acc, is_async=True)
    return acc


@gluon.jit
def _softmax(s_acc, m, logsum, m_buf, s_buf, m_ready, s_ready, j, scale, c: gl.constexpr, row_s: gl.constexpr,
             SUM_EXCHANGE: gl.constexpr):
    m_prev = m
    m_local = gl.max(s_acc, axis=1)
    m_other = _exchange(m_local, m_buf, m_ready, j, c, row_s)
    m = gl.maximum(m_prev, gl.maximum(m_local, m_other))
    r_scale = gl.exp2(m_prev * scale - m * scale)
    p = gl.exp2(s_acc * scale - (m * scale)[:, None])
    sum_local = gl.sum(p, axis=1)
    if SUM_EXCHANGE:
        sum_other = _exchange(sum_local, s_buf, s_ready, j, c, row_s)
        logsum = logsum * r_scale + (sum_local + sum_other)
    else:
        logsum = logsum * r_scale + sum_local
    return m, logsum, p, r_scale


@gluon.jit
def _put_p(p, p_smem, p_ready, p_free, j, c: gl.constexpr):
    mbarrier.wait(p_free, (j & 1) ^ 1)  # both consumers are done reading P(j-1)
    p_smem.index(c).store(p.to(gl.float16))
    fence_async_shared()
    gl.BARRIER()
    mbarrier.arrive(p_ready, count=1)


@gluon.jit
def _issue_pv(acc_o, p_smem, kv_lo_ring, kv_hi_ring, st, c: gl.constexpr):
    if c == 0:
        v = kv_lo_ring.index(st).reshape([64, 256])
    else:
        v = kv_hi_ring.index(st).reshape([64, 256])
    acc_o = warpgroup_mma(p_smem.index(0), v.slice(0, 32, dim=0), acc_o, is_async=True)
    acc_o = warpgroup_mma(p_smem.index(1), v.slice(32, 32, dim=0), acc_o, is_async=True)
    return acc_o


@gluon.jit
def mla_consumer(Out, bid, hid, q_lo, q_hi, q_pe, kv_lo_ring, kv_hi_ring, kpe_ring, p_smem, m_buf, s_buf,
                 q_ready, kv_ready, kv_free, m_ready, s_ready, p_ready, p_free, scale,
                 c: gl.constexpr, SUM_EXCHANGE: gl.constexpr, OVERLAP: gl.constexpr):
    n: gl.constexpr = SEQ // 64
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 256, 16])
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    acc_o = gl.zeros([64, 256], gl.float32, o_layout)
    logsum = gl.zeros([64], gl.float32, row_s)
    m = gl.full([64], -float("inf"), gl.float32, row_s)
    mbarrier.wait(q_ready, 0)
    if OVERLAP:
        mbarrier.wait(kv_ready.index(0), 0)
        s_acc = _scores(q_lo, q_hi, q_pe, kv_lo_ring.index(0).reshape([64, 256]), kv_hi_ring.index(0).reshape([64, 256]),
                        kpe_ring.index(0).reshape([64, 64]), c, s_layout)
        s_acc = warpgroup_mma_wait(0, deps=(s_acc,))
        m, logsum, p, r_scale = _softmax(s_acc, m, logsum, m_buf, s_buf, m_ready, s_ready, 0, scale, c, row_s, SUM_EXCHANGE)
        _put_p(p, p_smem, p_ready, p_free, 0, c)
        for j in range(1, n):
            st = j % 2
            prev = (j - 1) % 2
            mbarrier.wait(kv_ready.index(st), (j // 2) & 1)
            s_acc = _scores(q_lo, q_hi, q_pe, kv_lo_ring.index(st).reshape([64, 256]), kv_hi_ring.index(st).reshape([64, 256]),
                            kpe_ring.index(st).reshape([64, 64]), c, s_layout)
            mbarrier.wait(p_ready, (j - 1) & 1)
            acc_o = _issue_pv(acc_o, p_smem, kv_lo_ring, kv_hi_ring, prev, c)
            s_acc = warpgroup_mma_wait(2, deps=(s_acc,))
            m, logsum, p, r_scale = _softmax(s_acc, m, logsum, m_buf, s_buf, m_ready, s_ready, j, scale, c, row_s, SUM_EXCHANGE)
            acc_o = warpgroup_mma_wait(0, deps=(acc_o,))
            mbarrier.arrive(kv_free.index(prev), count=1)
            mbarrier.arrive(p_free, count=1)
            acc_o = acc_o * gl.convert_layout(r_scale, row_o)[:, None]
            _put_p(p, p_smem, p_ready, p_free, j, c)
        last = (n - 1) % 2
        mbarrier.wait(p_ready, (n - 1) & 1)
        acc_o = _issue_pv(acc_o, p_smem, kv_lo_ring, kv_hi_ring, last, c)
        acc_o = warpgroup_mma_wait(0, deps=(acc_o,))
        mbarrier.arrive(kv_free.index(last), count=1)
    else:
        for j in range(n):
            st = j % 2
            mbarrier.wait(kv_ready.index(st), (j // 2) & 1)
            s_acc = _scores(q_lo, q_hi, q_pe, kv_lo_ring.index(st).reshape([64, 256]), kv_hi_ring.index(st).reshape([64, 256]),
                            kpe_ring.index(st).reshape([64, 64]), c, s_layout)
            s_acc = warpgroup_mma_wait(0, deps=(s_acc,))
            m, logsum, p, r_scale = _softmax(s_acc, m, logsum, m_buf, s_buf, m_ready, s_ready, j, scale, c, row_s, SUM_EXCHANGE)
            _put_p(p, p_smem, p_ready, p_free, j, c)
            acc_o = acc_o * gl.convert_layout(r_scale, row_o)[:, None]
            mbarrier.wait(p_ready, j & 1)
            acc_o = _issue_pv(acc_o, p_smem, kv_lo_ring, kv_hi_ring, st, c)
            acc_o = warpgroup_mma_wait(0, deps=(acc_o,))
            mbarrier.arrive(kv_free.index(st), count=1)
            mbarrier.arrive(p_free, count=1)
    if not SUM_EXCHANGE:
        logsum = logsum + _exchange(logsum, s_buf, s_ready, n, c, row_s)
    acc_o = acc_o / gl.convert_layout(logsum, row_o)[:, None]
    rows = hid * 64 + gl.arange(0, 64, layout=row_o)
    cols = c * 256 + gl.arange(0, 256, layout=gl.SliceLayout(0, o_layout))
    gl.store(Out + bid.to(gl.int64) * (HEADS * 512) + rows[:, None] * 512 + cols[None, :], acc_o.to(gl.float16))


@gluon.jit
def mla_loader(bid, hid, q_desc, qpe_desc, kv_desc, kpe_desc, q_lo, q_hi, q_pe, kv_lo_ring, kv_hi_ring, kpe_ring,
               q_ready, kv_ready, kv_free):
    n: gl.constexpr = SEQ // 64
    mbarrier.expect(q_ready, 2 * q_desc.block_type.nbytes + qpe_desc.block_type.nbytes)
    tma.TMA_LOAD(q_desc, [bid, hid * 64, 0], q_ready, q_lo)
    tma.TMA_LOAD(q_desc, [bid, hid * 64, 256], q_ready, q_hi)
    tma.TMA_LOAD(qpe_desc, [bid, hid * 64, 0], q_ready, q_pe)
    for j in range(n):
        st = j % 2
        ph = (j // 2) & 1
        mbarrier.wait(kv_free.index(st), ph ^ 1)
        bar = kv_ready.index(st)
        mbarrier.expect(bar, 2 * kv_desc.block_type.nbytes + kpe_desc.block_type.nbytes)
        tma.TMA_LOAD(kv_desc, [bid, j * 64, 0, 0], bar, kv_lo_ring.index(st))
        tma.TMA_LOAD(kv_desc, [bid, j * 64, 0, 256], bar, kv_hi_ring.index(st))
        tma.TMA_LOAD(kpe_desc, [bid, j * 64, 0, 0], bar, kpe_ring.index(st))


@gluon.jit
def mla_kernel(Q, Q_pe, KV, K_pe, Out, scale, SUM_EXCHANGE: gl.constexpr, OVERLAP: gl.constexpr):
    hid = gl.program_id(0)
    bid = gl.program_id(1)
    n: gl.constexpr = SEQ // 64
    q_desc = tma.make_tensor_descriptor(Q, [BATCH, HEADS, 512], [HEADS * 512, 512, 1], [1, 64, 256], gl.NVMMASharedLayout.get_default_for([1, 64, 256], gl.float16))
    qpe_desc = tma.make_tensor_descriptor(Q_pe, [BATCH, HEADS, 64], [HEADS * 64, 64, 1], [1, 64, 64], gl.NVMMASharedLayout.get_default_for([1, 64, 64], gl.float16))
    kv_desc = tma.make_tensor_descriptor(KV, [BATCH, SEQ, 1, 512], [SEQ * 512, 512, 512, 1], [1, 64, 1, 256], gl.NVMMASharedLayout.get_default_for([1, 64, 1, 256], gl.float16))
    kpe_desc = tma.make_tensor_descriptor(K_pe, [BATCH, SEQ, 1, 64], [SEQ * 64, 64, 64, 1], [1, 64, 1, 64], gl.NVMMASharedLayout.get_default_for([1, 64, 1, 64], gl.float16))
    q_lo = gl.allocate_shared_memory(gl.float16, [1, 64, 256], q_desc.layout)
    q_hi = gl.allocate_shared_memory(gl.float16, [1, 64, 256], q_desc.layout)
    q_pe = gl.allocate_shared_memory(gl.float16, [1, 64, 64], qpe_desc.layout)
    kv_lo_ring = gl.allocate_shared_memory(gl.float16, [2, 1, 64, 1, 256], kv_desc.layout)
    kv_hi_ring = gl.allocate_shared_memory(gl.float16, [2, 1, 64, 1, 256], kv_desc.layout)
    kpe_ring = gl.allocate_shared_memory(gl.float16, [2, 1, 64, 1, 64], kpe_desc.layout)
    p_smem = gl.allocate_shared_memory(gl.float16, [2, 64, 32], gl.NVMMASharedLayout.get_default_for([64, 32], gl.float16))
    m_buf = gl.allocate_shared_memory(gl.float32, [4, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    s_buf = gl.allocate_shared_memory(gl.float32, [4, 64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    kv_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    kv_free = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    m_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    s_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    p_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    p_free = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(q_ready, count=1)
    mbarrier.init(p_ready, count=2)
    mbarrier.init(p_free, count=2)
    for i in gl.static_range(2):
        mbarrier.init(kv_ready.index(i), count=1)
        mbarrier.init(kv_free.index(i), count=2)
        mbarrier.init(m_ready.index(i), count=2)
        mbarrier.init(s_ready.index(i), count=2)
    q_lo2 = q_lo.reshape([64, 256])
    q_hi2 = q_hi.reshape([64, 256])
    q_pe2 = q_pe.reshape([64, 64])
    gl.warp_specialize(
        [
            (mla_consumer, (Out, bid, hid, q_lo2, q_hi2, q_pe2, kv_lo_ring, kv_hi_ring, kpe_ring, p_smem, m_buf, s_buf, q_ready, kv_ready, kv_free, m_ready, s_ready, p_ready, p_free, scale, 0, SUM_EXCHANGE, OVERLAP)),
            (mla_consumer, (Out, bid, hid, q_lo2, q_hi2, q_pe2, kv_lo_ring, kv_hi_ring, kpe_ring, p_smem, m_buf, s_buf, q_ready, kv_ready, kv_free, m_ready, s_ready, p_ready, p_free, scale, 1, SUM_EXCHANGE, OVERLAP)),
            (mla_loader, (bid, hid, q_desc, qpe_desc, kv_desc, kpe_desc, q_lo, q_hi, q_pe, kv_lo_ring, kv_hi_ring, kpe_ring,
                          q_ready, kv_ready, kv_free)),
        ],
        [4, 1],
        [240, 24],
    )
'''


def build(batch: int, heads: int, seq: int):
    """The kernel module for these sizes, with this Triton's names for the barrier and TMA load."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import tma

    src = KERNEL.replace("gl.BARRIER()", "gl.barrier()" if hasattr(gl, "barrier") else "gl.thread_barrier()")
    load = "tma.async_load(" if hasattr(tma, "async_load") else "tma.async_copy_global_to_shared("
    src = src.replace("tma.TMA_LOAD(", load)
    src = src.replace("BATCH", str(batch)).replace("HEADS", str(heads)).replace("SEQ", str(seq))
    name = f"mla_gluon_{batch}_{heads}_{seq}"
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


VARIANTS = [(se, ov) for se in (False, True) for ov in (True, False)]


def offline(batch: int = 2, heads: int = 128, seq: int = 256) -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    kernel = build(batch, heads, seq).mla_kernel
    for se, ov in VARIANTS:
        signature = {a: "*fp16" for a in kernel.arg_names}
        signature.update(scale="fp32", SUM_EXCHANGE="constexpr", OVERLAP="constexpr")
        consts = {(kernel.arg_names.index("SUM_EXCHANGE"),): se, (kernel.arg_names.index("OVERLAP"),): ov}
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(5)}
        compiled = triton.compile(
            GluonASTSource(kernel, signature, consts, attrs), target=GPUTarget("cuda", 90, 32), options={"num_warps": 4}
        )
        print(f"sum_exchange={se} overlap={ov}: {compiled.metadata.shared} bytes of shared memory")


def on_gpu() -> None:
    import torch
    import triton

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import vs_tilelang as V

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    b, h, s, d, pe = 128, 128, 8192, 512, 64
    softmax_scale = (d + pe) ** -0.5
    torch.manual_seed(0)
    shapes = ((b, h, d), (b, h, pe), (b, s, 1, d), (b, s, 1, pe))
    args = [torch.randn(*shape, device="cuda", dtype=torch.float16) for shape in shapes]
    ref = V.mla_decode_ref(*args, softmax_scale)
    kernel = build(b, h, s).mla_kernel
    out = torch.empty(b, h, d, device="cuda", dtype=torch.float16)

    def report(name, fn, result):
        result.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = ((result.float() - ref).norm() / ref.norm()).item()
        print(f"{name}: err={err:.2e} ms={triton.testing.do_bench(fn, warmup=100, rep=500):.4f}", flush=True)

    for se, ov in VARIANTS:
        launch = lambda se=se, ov=ov: kernel[(h // 64, b)](*args, out, softmax_scale * 1.44269504, se, ov, num_warps=4)  # noqa: E731
        report(f"gluon sum_exchange={se} overlap={ov}", launch, out)
    fe = V.load_kernels("t2t").frontend
    t2t = fe.jit(out_idx=[4], pass_configs={fe.PassConfigKey.TL_ENABLE_FAST_MATH: True})(
        V.load_kernels("t2t").mla_decode
    )
    compiled = t2t(b, h, s, d, pe, 64, 64, 256, softmax_scale)
    result = compiled(*args)
    err = ((result.float() - ref).norm() / ref.norm()).item()
    route = "Gluon" if compiled.get_kernel_source().startswith("# Gluon") else "tl"
    print(
        f"tile2triton ({route}): err={err:.2e} ms={triton.testing.do_bench(lambda: compiled(*args), warmup=100, rep=500):.4f}"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offline", action="store_true", help="compile the variants for sm_90 without a GPU")
    if ap.parse_args().offline:
        offline()
    else:
        on_gpu()
