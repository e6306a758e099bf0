"""Launch warps of two gemm-less TileLang examples over a sweep of shapes: the measurements behind
``runtime/tuning._reuse_warps`` (TILE2TRITON_REUSE_WARPS) and ``codegen/reductions._deferring_loop``
(TILE2TRITON_DEFER_REDUCES).

- ``rms``: examples/norm's ``rms_norm_splitk`` (fp32, 512-element tiles, 128 threads; a second pass over the
  row in reverse, which finds the first pass in L2 only while the resident blocks' rows fit there), rows of
  2048 to 32768 elements, 1024 and 8192 rows: the heuristic's choice and 4 to 32 warps forced.
- ``pool``: examples/dsa_hisa's ``fp8_native_block_mean_pooling`` (a 64-row fp8 tile summed over its rows
  into a column accumulator a step, 256 threads), dims 128 / 256, pooling blocks 128 / 256: the heuristic's
  choice and 2 to 8 warps forced, the deferred sum on and off.
- ``softmax``: examples/online_softmax (fp16 rows, a max / log-sum-exp pass over column blocks, then a pass
  writing the exponentials), 128 threads: the heuristic's choice and 4 to 16 warps forced.

Times: ``triton.testing.do_bench`` medians, us; each output against the first choice's (and rms against
torch).  With ``--tilelang`` (real TileLang's site on PYTHONPATH) the same shapes through TileLang, once
each.  From the repo root on the GPU:  PYTHONPATH=. TILELANG_EXAMPLES=.tlx/examples python3
benchmarks/reduce_warps_sweep.py [--tilelang]
"""

import os
import sys

import torch
from triton.testing import do_bench

TILELANG = "--tilelang" in sys.argv
if not TILELANG:
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    from tile2triton.runtime import tuning
ROOT = os.environ["TILELANG_EXAMPLES"]
sys.path[:0] = [os.path.join(ROOT, "norm"), os.path.join(ROOT, "dsa_hisa")]
import fp8_block_mean_pooling  # noqa: E402
import rms_norm  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "beyond_suite", "online_softmax"))
import regression_beyond_online_softmax as softmax_file  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "hand_variants"))
from variant_tools import fresh  # noqa: E402

RMS_SHAPES = [(8192, n) for n in (2048, 4096, 8192, 16384, 32768)] + [(1024, 8192), (2048, 16384)]
SOFTMAX_SHAPES = [(8192, 8192, 8192), (8192, 8192, 1024), (4096, 32768, 4096)]
POOL_SHAPES = [(131072, d, p) for d in (128, 256) for p in (128, 256)] + [(32768, 128, 128)]


def forced(choice):
    """The heuristic (None) or ``choice`` for every kernel compiled next."""
    heuristic = tuning.__dict__.setdefault("_sweep_original", tuning.heuristic)
    tuning.heuristic = heuristic if choice is None else (lambda func, target: choice)


def rms_cases():
    for m, n in RMS_SHAPES:
        a = torch.randn(m, n, device="cuda")
        ref = a.double() * torch.rsqrt(a.double().pow(2).mean(-1, keepdim=True) + 1e-12)
        make = lambda m=m, n=n: rms_norm.rms_norm_splitk.compile(M=m, N=n, blk_m=1, blk_k=512)  # noqa: E731
        yield f"rms {m}x{n}", rms_norm.rms_norm_splitk, make, (lambda k, a=a: k(a)), ref, [None, 4, 8, 16, 32], [""]


def pool_cases():
    for n, d, p in POOL_SHAPES:
        k = torch.randn(n, d, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        s = 0.1 + 0.01 * torch.rand(n, device="cuda")
        jit = fp8_block_mean_pooling.fp8_native_block_mean_pooling
        make = lambda k=k, s=s, d=d, p=p: jit.compile(k, s, dim=d, pooling_block_size=p)  # noqa: E731
        yield f"pool {n}x{d} p{p}", jit, make, (lambda kern, k=k, s=s: kern(k, s)), None, [None, 2, 4, 8], ["1", "0"]


def _softmax_call(example, m, n, x, block):
    """The example's kernel at (m, n): its X shape reads the module's M and N when it compiles."""
    example.M, example.N = m, n
    return lambda: example.softmax_kernel(x, BLOCK_M=1, BLOCK_N=block)


def softmax_cases():
    example = softmax_file.load_example()
    for m, n, block in SOFTMAX_SHAPES:
        x = torch.randn(m, n, dtype=torch.float16, device="cuda")
        ref = torch.softmax(x.double(), -1)
        jit = example.softmax_kernel
        make = lambda m=m, n=n, x=x, block=block: _softmax_call(example, m, n, x, block)  # noqa: E731
        yield f"softmax {m}x{n} b{block}", jit, make, (lambda k: k()), ref, [None, 4, 8, 16], [""]


def main() -> None:
    torch.manual_seed(0)
    for case in list(rms_cases()) + list(softmax_cases()) + list(pool_cases()):
        name, jit, make, call, ref, warps, defers = case
        if TILELANG:
            fresh(jit)
            kern = make()
            call(kern)
            print(
                f"{name:24s} tilelang      {do_bench(lambda: call(kern), warmup=25, rep=100) * 1000:9.2f} us",
                flush=True,
            )
            continue
        first = None
        for defer in defers:
            if defer:
                os.environ["TILE2TRITON_DEFER_REDUCES"] = defer
            for w in warps:
                forced(None if w is None else tuning.LaunchChoice(w))
                label = ("heuristic" if w is None else f"w{w}") + (f" defer={defer}" if defer else "")
                try:
                    fresh(jit)
                    kern = make()
                    out = call(kern)
                    out = out[0] if isinstance(out, (tuple, list)) else out
                    torch.cuda.synchronize()
                    err = (out.double() - (ref if ref is not None else first)).abs().max().item() if (
                        ref is not None or first is not None) else 0.0  # fmt: skip
                    first = out.double() if first is None else first
                    taken = kern.launch_choice.label() if getattr(kern, "launch_choice", None) else "?"
                    us = do_bench(lambda: call(kern), warmup=25, rep=100) * 1000
                    print(f"{name:24s} {label:18s} {us:9.2f} us  err {err:.1e}  ran {taken}", flush=True)
                except Exception as e:  # noqa: BLE001 - a choice that does not compile
                    print(f"{name:24s} {label:18s} failed: {type(e).__name__}: {str(e)[:120]}", flush=True)
        os.environ.pop("TILE2TRITON_DEFER_REDUCES", None)


if __name__ == "__main__":
    main()
