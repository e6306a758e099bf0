"""Host overhead of calling a tile2triton kernel vs calling its generated Triton kernel directly.

A tiny copy kernel (one 256-element block), so the GPU time is negligible and what is measured
is the host path: argument checks, output allocation, grid evaluation and Triton's own launch.
Each row is the median over >= 1000 calls (wall clock per call, no synchronisation inside the
loop; the stream is synchronised every 100 calls so the launch queue never fills up).

Rows:
  triton direct          fn[grid](a, b, ...) with `b` preallocated
  triton direct + empty  torch.empty for the output, then fn[grid](...)  (what tile2triton does)
  tile2triton JITKernel  kernel(a) (lazy style, out_idx=[-1]; allocates the output)
  tile2triton inplace    kernel(a, b) (no outputs, so it compares with "triton direct")
  tile2triton eager      eager_fn(a) (eager style: binds T.const from a.shape each call)
  tile2triton dynamic    kernel(a) with T.dynamic N (reads N from the shape)

Run on a GPU: PYTHONPATH=. python benchmarks/launch_overhead.py
On a CPU it runs through Triton's interpreter with few iterations (a smoke test; the numbers
then mostly measure the interpreter).

``--host-only`` (any machine; CPU tensors unless ``--device cuda``) measures only tile2triton's own Python: each
kernel's Triton function gets a no-op ``run`` before its first call (``fn[grid](...)`` and the
runtime's generated launcher both end in ``run``), and every row is compared with that same
no-op called directly (plus ``torch.empty`` where the kernel allocates an output).
TRITON_INTERPRET=1 is set for the process so that a warm interpreted launch takes the same
path as a GPU launch (no per-call switch into the interpreter); what remains different from
the GPU path is the device test (``is_cpu`` instead of ``is_cuda``/``get_device``) and the
interpreted branch's TRITON_INTERPRET check.  Expect the GPU host's numbers to be lower by the
ratio of the two machines' single-thread speed.
"""

import argparse
import os
import platform
import statistics
import sys
import time

import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.ir.evaluate import host_fn
from tile2triton.runtime.cache import interpreter_mode

BLOCK = 256


@tilelang.jit(out_idx=[-1])
def copy_static(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            T.copy(A[bx * BLOCK : bx * BLOCK + BLOCK], B[bx * BLOCK : bx * BLOCK + BLOCK])

    return main


@tilelang.jit
def copy_inplace(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            T.copy(A[bx * BLOCK : bx * BLOCK + BLOCK], B[bx * BLOCK : bx * BLOCK + BLOCK])

    return main


@tilelang.jit(out_idx=[-1])
def copy_dynamic():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            T.copy(A[bx * BLOCK : bx * BLOCK + BLOCK], B[bx * BLOCK : bx * BLOCK + BLOCK])

    return main


@tilelang.jit
def copy_eager(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
        T.copy(A[bx * BLOCK : bx * BLOCK + BLOCK], B[bx * BLOCK : bx * BLOCK + BLOCK])
    return B


def _direct(kernel, interpret: bool):
    """The generated Triton function and a way to call it exactly as the runtime does."""
    launcher = kernel._compile(interpret)  # noqa: SLF001 - the benchmark needs the raw Triton function
    fn, static, grid_fns, _positions, num_warps = launcher.launches[0]
    return fn, static, grid_fns, num_warps


def bench(fn, n: int, sync) -> float:
    """Median seconds per call of fn() over n calls."""
    for _ in range(min(50, n)):
        fn()
    sync()
    times = []
    perf = time.perf_counter
    for i in range(n):
        t0 = perf()
        fn()
        times.append(perf() - t0)
        if i % 100 == 99:
            sync()
    sync()
    return statistics.median(times)


_ROUNDS = 5


def _interleaved(cases: dict, iters: int, sync, interpret_direct: bool = False) -> dict:
    """Per case the median of _ROUNDS rounds, the cases interleaved so that drift hits all alike."""
    samples = {name: [] for name in cases}
    for _ in range(_ROUNDS):
        for name, case in cases.items():
            ctx = interpreter_mode(True) if interpret_direct and name.startswith("direct") else None
            if ctx:
                ctx.__enter__()
            try:
                samples[name].append(bench(case, max(1, iters // _ROUNDS), sync))
            finally:
                if ctx:
                    ctx.__exit__(None, None, None)
    return {name: statistics.median(v) for name, v in samples.items()}


def _print_rows(rows) -> None:
    import triton

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
    print(f"# device: {gpu}; torch {torch.__version__}; triton {triton.__version__}; "
          f"python {platform.python_version()}")  # fmt: skip
    print(f"| {'call':<48} | {'median us':>10} | {'added us':>9} |")
    print(f"|{'-' * 50}|{'-' * 12}|{'-' * 11}|")
    for name, t, added in rows:
        extra = f"{added * 1e6:9.2f}" if added is not None else f"{'':9}"
        print(f"| {name:<48} | {t * 1e6:10.2f} | {extra} |")


def _noop(*args, grid=None, warmup=False, **kwargs):
    """Stands in for a Triton function's ``run`` (the launch itself) in --host-only mode."""
    return None


def host_only(iters: int, n: int, device: str) -> int:
    """Median host time per call with the Triton launch replaced by a no-op."""
    interpret = device == "cpu"
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    a = torch.randn(n, device=device)
    b = torch.empty(n, device=device)
    k_static, k_inplace, k_dynamic = copy_static(n), copy_inplace(n), copy_dynamic()
    k_eager = copy_eager.compile(a)
    launches = {}
    for name, k in (("static", k_static), ("inplace", k_inplace), ("dynamic", k_dynamic), ("eager", k_eager)):
        fn, static, grid_fns, num_warps = _direct(k, interpret)
        # the instance attribute shadows the method, before the first call: every launch ends here
        fn.run = _noop
        launches[name] = (static, num_warps)
    # first calls (not timed): the kernels become warm, as after their first real launch
    assert k_static(a).shape == a.shape and k_dynamic(a).shape == a.shape and copy_eager(a).shape == a.shape
    assert k_inplace(a, b) is None
    grid, nw = launches["inplace"]
    dgrid = (-(-n // BLOCK),)
    dnw = launches["dynamic"][1]

    def direct():
        _noop(a, b, grid=grid, warmup=False, num_warps=nw)

    def direct_empty():
        out = torch.empty(n, dtype=torch.float32, device=a.device)
        _noop(a, out, grid=grid, warmup=False, num_warps=nw)

    def direct_dynamic():
        out = torch.empty(n, dtype=torch.float32, device=a.device)
        _noop(a, out, n, grid=dgrid, warmup=False, num_warps=dnw)

    cases = {
        "direct": direct, "direct_empty": direct_empty, "direct_dyn": direct_dynamic,
        "inplace": lambda: k_inplace(a, b), "jit": lambda: k_static(a), "eager": lambda: copy_eager(a),
        "dyn": lambda: k_dynamic(a),
    }  # fmt: skip
    t = _interleaved(cases, iters, lambda: None)
    rows = [
        ("no-op run(a, b, grid=...)", t["direct"], None),
        ("torch.empty + no-op run", t["direct_empty"], None),
        ("torch.empty + no-op run (dynamic: + n)", t["direct_dyn"], None),
        ("tile2triton inplace (vs no-op)", t["inplace"], t["inplace"] - t["direct"]),
        ("tile2triton JITKernel out_idx (vs empty + no-op)", t["jit"], t["jit"] - t["direct_empty"]),
        ("tile2triton eager (vs empty + no-op)", t["eager"], t["eager"] - t["direct_empty"]),
        ("tile2triton dynamic (vs empty + no-op dynamic)", t["dyn"], t["dyn"] - t["direct_dyn"]),
    ]
    print(f"# host-only launch overhead (Triton launch replaced by a no-op): {n} fp32 elements on {device}; "
          f"per row the median of {_ROUNDS} interleaved rounds, each the median of {max(1, iters // _ROUNDS)} calls")  # fmt: skip
    _print_rows(rows)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=None, help="calls per row (default 5000 on GPU, 20 on CPU)")
    parser.add_argument("--n", type=int, default=BLOCK, help="elements copied (default one block)")
    parser.add_argument("--host-only", action="store_true",
                        help="Triton launch replaced by a no-op: tile2triton's own host time")  # fmt: skip
    parser.add_argument("--device", default="cpu", help="--host-only: the tensors' device (default cpu)")
    args = parser.parse_args(argv)
    if args.host_only:
        return host_only(args.iters or 5000, args.n, args.device)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    iters = args.iters or (5000 if cuda else 20)
    interpret = not cuda
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    n = args.n

    a = torch.randn(n, device=device)
    b = torch.empty(n, device=device)
    k_static = copy_static(n)
    k_inplace = copy_inplace(n)
    k_dynamic = copy_dynamic()
    assert torch.equal(k_static(a), a) and torch.equal(k_dynamic(a), a) and torch.equal(copy_eager(a), a)
    fn, static, _, num_warps = _direct(k_inplace, interpret)
    grid = static
    dfn, _, dgrid_fns, dwarps = _direct(k_dynamic, interpret)
    dgrid = tuple(host_fn(g)({k_dynamic.prim_func.sizes[0]: n}) if callable(host_fn(g)) else host_fn(g)
                  for g in k_dynamic._compile(interpret).module.launches[0].grid)  # fmt: skip

    def direct():
        fn[grid](a, b, num_warps=num_warps)

    def direct_empty():
        out = torch.empty(n, device=device)
        fn[grid](a, out, num_warps=num_warps)

    def direct_dynamic():
        out = torch.empty(n, device=device)
        dfn[dgrid](a, out, n, num_warps=dwarps)

    def direct_run():
        fn.run(a, b, grid=grid, warmup=False, num_warps=num_warps)

    cases = {
        "direct": direct, "direct_run": direct_run, "direct_empty": direct_empty, "direct_dyn": direct_dynamic,
        "jit": lambda: k_static(a), "inplace": lambda: k_inplace(a, b), "eager": lambda: copy_eager(a),
        "dyn": lambda: k_dynamic(a),
    }  # fmt: skip
    t = _interleaved(cases, iters, sync, interpret_direct=interpret)
    rows = [
        ("triton direct: fn[grid](a, b)", t["direct"], None),
        ("triton direct: fn.run(a, b, grid=...)", t["direct_run"], None),
        ("triton direct + torch.empty", t["direct_empty"], None),
        ("tile2triton inplace (vs direct)", t["inplace"], t["inplace"] - t["direct"]),
        ("tile2triton JITKernel (vs direct + empty)", t["jit"], t["jit"] - t["direct_empty"]),
        ("tile2triton eager (vs direct + empty)", t["eager"], t["eager"] - t["direct_empty"]),
        ("triton direct dynamic + torch.empty", t["direct_dyn"], None),
        ("tile2triton dynamic (vs direct dynamic)", t["dyn"], t["dyn"] - t["direct_dyn"]),
    ]
    print(
        f"# launch overhead: {n} fp32 elements; per row the median of {_ROUNDS} interleaved rounds, "
        f"each the median of {max(1, iters // _ROUNDS)} calls" + ("" if cuda else " (Triton interpreter)")
    )
    _print_rows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
