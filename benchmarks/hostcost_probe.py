"""Host cost of TileLang's ``sparse_gqa_decode_varlen_indice`` regression case, per call and per part,
at the suite's shape and at other shapes (issue 23: the variants run timed tile2triton 78.6 us event /
10.3 us kernel at batch 4, cache 3072, where the suite's batch 1, cache 2048 gave 11.8 / 7.6).

    PYTHONPATH=. python3 benchmarks/hostcost_probe.py [EXAMPLES] [--impl tile2triton|tilelang]
                                                      [--host-only] [--profile N]

EXAMPLES is TileLang's examples folder (default /tmp/tl/examples).  Each shape runs the example's own
``run_regression_perf(**shape)`` in a child process (as the suite does), with its ``do_bench``
replaced by a probe that takes the timed callable (``sparse_kernel(Q, K, V, block_indices,
cache_seqlens)``, the module's ``forward``) and prints one row:

* ``host us``: 300 calls back to back, ``time.perf_counter``, then one synchronize; per call, median
  of 5 rounds (``--host-only``: the thread's CPU time, least of 25 rounds);
* ``event us``: ``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")`` (the
  suite's timer, L2 flushed); ``kernel us``: the CUDA time of one call's kernels (torch.profiler,
  as the suite's ``kernel_ms``); ``-`` with ``--host-only``;
* ``num_split``: what the example's heuristic chose (the ``T.dynamic`` size of the workspaces);
* the call's parts, host us each: ``heuristic`` (the example's num_splits_heuristic),
  ``alloc`` (its two ``torch.empty`` workspaces), ``factory`` (the ``flashattn(...)`` lookup),
  ``kernel`` (``kernel(...)`` on workspaces made once);
* ``kernel(...) parts`` (tile2triton, generated launcher): that call taken apart (``_launch_parts``):
  ``checks`` (the launcher with its launches made no-ops), ``addresses`` (the launches as it makes
  them), ``run`` (the same through ``CompiledKernel.run``), ``c`` (Triton 3.6's C launcher alone);
* ``path`` (tile2triton): ``gen`` when the generated launcher served the calls, else ``generic``;
  ``run`` how many launches in the timed calls (after 5 warm-up calls) went through
  ``JITFunction.run`` (0: every launch found its compiled kernel), ``gc`` the garbage collections
  during them.

``--host-only`` runs on any machine: CUDA faked (benchmarks/launch_cost.py's ``fake_cuda(h200=True)``: Triton
compiles for sm_90 offline, launches do nothing) and the example's ``device="cuda"`` tensors made on
the CPU; outputs are not computed.  On the GPU the first call's output is checked against a float64
torch reference of the example's attention (max abs error printed).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import os
import pstats
import statistics
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)
EXAMPLE = "blocksparse_attention/example_tilelang_sparse_gqa_decode_varlen_indice.py"
# the regression suite's call (regression_example_blocksparse_attention.py), the variants run's, and
# the example's own defaults
SHAPES = {
    "suite": {"batch": 1, "max_cache_seqlen": 2048},
    "variant": {"batch": 4, "max_cache_seqlen": 3072},
    "defaults": {"batch": 8, "max_cache_seqlen": 8192},
    "one_split": {"batch": 16, "max_cache_seqlen": 1024},  # num_split 1: an int Triton makes a constant
}


# ----------------------------------------------------------------------------- the CPU stand-in
_FACTORIES = ("randn", "randint", "full", "empty", "zeros", "ones", "randperm", "arange", "rand", "tensor", "linspace")


class cpu_for_cuda:
    """``device="cuda"`` in torch's factories made on the CPU (fake_cuda passes those off as CUDA),
    ``torch.cuda.get_device_properties`` an H200's SM count, ``synchronize`` a no-op."""

    def __enter__(self):
        import torch

        self.saved = {name: getattr(torch, name) for name in _FACTORIES}
        self.saved_cuda = (torch.cuda.get_device_properties, torch.cuda.synchronize, torch.Tensor.cuda)

        def on_cpu(factory):
            def make(*args, **kwargs):
                if "device" in kwargs and str(kwargs["device"]).startswith("cuda"):
                    kwargs["device"] = "cpu"
                return factory(*args, **kwargs)

            return make

        for name, factory in self.saved.items():
            setattr(torch, name, on_cpu(factory))
        torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
            multi_processor_count=132, major=9, minor=0, name="NVIDIA H200"
        )
        torch.cuda.synchronize = lambda *a, **k: None
        torch.Tensor.cuda = lambda self, *a, **k: self
        return self

    def __exit__(self, *exc):
        import torch

        for name, factory in self.saved.items():
            setattr(torch, name, factory)
        torch.cuda.get_device_properties, torch.cuda.synchronize, torch.Tensor.cuda = self.saved_cuda


# ----------------------------------------------------------------------------- one shape (child)
def _closure(fn) -> dict:
    return {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())}


def _host_us(fn, sync, host_only: bool) -> float:
    for _ in range(20):
        fn()
    sync()
    clock = time.thread_time if host_only else time.perf_counter
    rounds = []
    for _ in range(25 if host_only else 5):
        t0 = clock()
        for _ in range(300):
            fn()
        rounds.append((clock() - t0) / 300 * 1e6)
        sync()
    return min(rounds) if host_only else statistics.median(rounds)


def _reference(Q, K, V, block_indices, cache_seqlens, block_size):
    """The example's ref_program_torch in float64, without einops."""
    import torch

    batch, heads, dim = Q.shape
    heads_kv = K.shape[2]
    group = heads // heads_kv
    q = Q.double().reshape(batch, heads_kv, group, dim)
    k, v = K.double().permute(0, 2, 1, 3), V.double().permute(0, 2, 1, 3)  # b h s d
    scores = torch.einsum("bhgd,bhsd->bhgs", q, k)
    keep = torch.zeros(batch, heads_kv, K.shape[1], dtype=torch.bool, device=Q.device)
    for b in range(batch):
        for h in range(heads_kv):
            for i in block_indices[b, h].tolist():
                if i >= 0:
                    keep[b, h, i * block_size : (i + 1) * block_size] = True
    keep &= torch.arange(K.shape[1], device=Q.device)[None, None, :] < cache_seqlens[:, None, None].long()
    scores = scores.masked_fill(~keep[:, :, None, :], float("-inf")) / math.sqrt(dim)
    out = torch.einsum("bhgs,bhsd->bhgd", torch.softmax(scores, dim=-1), v)
    return out.reshape(batch, heads, -1)


class Probe:
    """The example's do_bench: measures the callable it is handed, once."""

    def __init__(self, example, host_only: bool, top: int):
        self.example, self.host_only, self.top = example, host_only, top
        self.row: dict = {}

    def __call__(self, fn, *args, **kwargs):
        import torch

        ex, host_only = self.example, self.host_only
        sync = (lambda: None) if host_only else torch.cuda.synchronize
        found = _closure(fn)
        model = found["sparse_kernel"]
        Q, K, V = found["Q"], found["K"], found["V"]
        block_indices, cache_seqlens = found["block_indices"], found["cache_seqlens"]
        row = self.row
        out = model(Q, K, V, block_indices, cache_seqlens)
        sync()
        if not host_only:
            ref = _reference(Q, K, V, block_indices, cache_seqlens, model.block_size)
            row["err"] = float((out.double() - ref).abs().max())
        # the forward's parts, as it computes them
        batch, heads, heads_kv, dim, dim_v = model.batch, model.heads, model.heads_kv, model.dim, model.dim_v
        selected = block_indices.shape[-1]
        m_blocks = (heads // heads_kv + model.block_H - 1) // model.block_H

        def heuristic():
            size = selected * model.block_size * (dim + dim_v) * 2
            return ex.num_splits_heuristic(
                batch * heads_kv * m_blocks, model.num_sm, selected, m_blocks, size, True, 128
            )

        num_split = heuristic()

        def alloc():
            torch.empty((batch, heads, num_split), dtype=torch.float32, device="cuda")
            torch.empty((batch, heads, num_split, dim_v), dtype=torch.float32, device="cuda")

        def factory():
            return ex.flashattn(batch, heads, heads_kv, dim, dim_v, block_N=model.block_size, block_H=model.block_H, num_stages=2, threads=128)  # fmt: skip

        kernel = factory()
        glse = torch.empty((batch, heads, num_split), dtype=torch.float32, device="cuda")
        partial = torch.empty((batch, heads, num_split, dim_v), dtype=torch.float32, device="cuda")

        def call():
            return kernel(Q, K, V, block_indices, cache_seqlens, glse, partial)

        row.update(num_split=num_split, selected=selected)
        for _ in range(5):  # each kernel's first call through the generated launcher keys it
            fn()
        runs = _count_runs()
        collections = sum(s["collections"] for s in gc.get_stats())
        row["host_us"] = round(_host_us(fn, sync, host_only), 2)
        row["run"] = runs()
        row["gc"] = sum(s["collections"] for s in gc.get_stats()) - collections
        row["parts"] = {
            name: round(_host_us(part, sync, host_only), 2)
            for name, part in (("heuristic", heuristic), ("alloc", alloc), ("factory", factory), ("kernel", call))
        }
        row["path"] = _path_of(kernel)
        if row["path"] == "gen":
            row["launch_parts"] = _launch_parts(kernel, call, sync, host_only)
        if not host_only:
            import triton.testing

            sys.path.insert(0, os.path.join(HERE, "tilelang_regression_suite"))
            from child import kernel_ms  # the suite's kernel time

            row["event_us"] = round(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3, 2)
            row["kernel_us"] = round(kernel_ms(fn) * 1e3, 2)
        if self.top:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(300):
                fn()
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(self.top)
            row["profile"] = "\n".join(line for line in s.getvalue().splitlines() if line.strip())
        return 1.0


def _launch_parts(kernel, call, sync, host_only: bool) -> dict:
    """tile2triton's ``kernel(...)`` taken apart, host us each: ``checks`` (the generated launcher with
    its launches made no-ops: checks, output, keys), ``addresses`` (each launch's
    ``DirectLaunch.launch_addresses``), ``run`` (each compiled kernel's ``CompiledKernel.run``: Triton's
    Python launcher and its C one), ``c`` (the C launch function alone, as ``launch_entry`` calls it:
    Triton 3.6; ``-`` where it keeps Triton's launcher),
    ``stream`` (the driver's current-stream call), all for the call's launches together."""
    from tile2triton.runtime.launcher import DirectLaunch, launch_entry

    original, seen = DirectLaunch.launch_addresses, []

    def record(self, grid, key, args):
        seen.append((self, grid, key, args))
        return original(self, grid, key, args)

    DirectLaunch.launch_addresses = record
    try:
        call()
        DirectLaunch.launch_addresses = lambda self, grid, key, args: True
        checks = _host_us(call, sync, host_only)
    finally:
        DirectLaunch.launch_addresses = original
    if any(d.scratch_bytes for d, *_ in seen):
        return {"launches": len(seen), "checks": round(checks, 2)}  # scratch: launch_addresses allocates it

    def addresses():
        for d, grid, key, args in seen:
            d.launch_addresses(grid, key, args)

    # the compiled kernels' own arguments: the launcher's, then the size multiples launch_addresses adds
    launches = [
        (d, grid, key, (*args, *d.tails[key]) if d.multiples else args, d.kernels[key]) for d, grid, key, args in seen
    ]

    def run():
        for d, (g0, g1, g2), key, args, k in launches:
            k.run(g0, g1, g2, d.stream(key[0]), k.function, k.packed_metadata, None, None, None, *args)

    def stream():
        for d, _, key, _, _ in launches:
            d.stream(key[0])

    parts = {"launches": len(launches), "checks": checks, "addresses": _host_us(addresses, sync, host_only)}
    parts.update(run=_host_us(run, sync, host_only), stream=_host_us(stream, sync, host_only))
    # the C launch function alone, as launch_entry binds it (Triton 3.6's; "-" where it keeps the launcher)
    entries = [(d, grid, key, args, launch_entry(k, k.run)) for d, grid, key, args, k in launches]
    if entries and all(entry[0] is not k.run for (*_, k), (*_, entry) in zip(launches, entries)):

        def c_launch():
            for d, (g0, g1, g2), key, args, (launch, head) in entries:
                launch(g0, g1, g2, d.stream(key[0]), *head, *args)

        parts["c"] = _host_us(c_launch, sync, host_only)
    else:
        parts["c"] = "-"
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in parts.items()}


def _count_runs():
    """A counter of JITFunction.run calls from now on (launches that missed their compiled kernel)."""
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return lambda: None
    original, count = JITFunction.run, [0]

    def run(self, *args, **kwargs):
        count[0] += 1
        return original(self, *args, **kwargs)

    JITFunction.run = run
    return lambda: count[0]


def _path_of(kernel) -> str:
    entry = getattr(kernel, "_entry", None)
    if entry is None:
        return "-"  # TileLang
    return "gen" if hasattr(entry, "source") else "generic"


def child(examples: str, impl: str, shape: dict, host_only: bool, top: int) -> None:
    folder = os.path.join(examples, os.path.dirname(EXAMPLE))
    sys.path.insert(0, folder)
    if impl == "tile2triton":
        from tile2triton.cli import install_tilelang_alias

        install_tilelang_alias()
    try:
        import einops  # noqa: F401 - the example imports it for its reference only
    except ImportError:
        sys.modules["einops"] = types.SimpleNamespace(rearrange=None, einsum=None)
    import importlib

    if host_only:
        sys.path.insert(0, HERE)
        from launch_cost import fake_cuda

        with fake_cuda(h200=True), cpu_for_cuda():
            row = _run(importlib, shape, host_only, top)
    else:
        row = _run(importlib, shape, host_only, top)
    print("ROW " + json.dumps(row), flush=True)


def _run(importlib, shape: dict, host_only: bool, top: int) -> dict:
    ex = importlib.import_module(os.path.basename(EXAMPLE)[:-3])
    probe = Probe(ex, host_only, top)
    ex.do_bench = probe
    ex.run_regression_perf(**shape)
    return probe.row


# ----------------------------------------------------------------------------- the table
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("examples", nargs="?", default="/tmp/tl/examples")
    p.add_argument("--impl", default="tile2triton", choices=("tile2triton", "tilelang"))
    p.add_argument("--host-only", action="store_true", help="no GPU: the calls' Python, CUDA faked")
    p.add_argument("--profile", type=int, default=0, help="cProfile: the N functions of most own time")
    p.add_argument("--shapes", nargs="*", default=["suite", "variant"], choices=sorted(SHAPES))
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(os.path.abspath(a.examples), a.impl, SHAPES[a.child], a.host_only, a.profile)
        return 0
    print(f"# {EXAMPLE} through {a.impl}{' (host only: CUDA faked)' if a.host_only else ''}")
    print("| shape | num_split | host us | event us | kernel us | heuristic | alloc | factory | kernel(...) | path | run | gc | err |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    profiles = []
    for name in a.shapes:
        cmd = [sys.executable, os.path.abspath(__file__), a.examples, "--impl", a.impl, "--child", name]
        cmd += ["--profile", str(a.profile)] + (["--host-only"] if a.host_only else [])
        env = dict(os.environ)
        if a.impl == "tile2triton":
            env["PYTHONPATH"] = os.pathsep.join(x for x in (PROJECT, env.get("PYTHONPATH", "")) if x)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        rows = [json.loads(line[4:]) for line in r.stdout.splitlines() if line.startswith("ROW ")]
        if r.returncode or not rows:
            print(f"| {name} FAILED rc={r.returncode} | {(r.stdout + r.stderr)[-800:]!r} |")
            continue
        row = rows[0]
        parts = row["parts"]
        shape = ", ".join(f"{k}={v}" for k, v in SHAPES[name].items())
        cells = [
            f"{name} ({shape})",
            row["num_split"],
            row["host_us"],
            row.get("event_us", "-"),
            row.get("kernel_us", "-"),
        ]
        cells += [
            parts["heuristic"],
            parts["alloc"],
            parts["factory"],
            parts["kernel"],
            row["path"],
            row["run"],
            row["gc"],
        ]
        cells += [f"{row['err']:.1e}" if "err" in row else "-"]
        print("| " + " | ".join(str(c) for c in cells) + " |")
        if row.get("launch_parts"):
            print(
                f"|   {name} kernel(...) parts: " + ", ".join(f"{k} {v}" for k, v in row["launch_parts"].items()) + " |"
            )
        if row.get("profile"):
            profiles.append(f"\n## {name}\n{row['profile']}")
    print("".join(profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
