"""Host cost of a whole call, in the three shapes TileLang scripts call kernels in.

TileLang's regression suite has short kernels whose event time is the host's: the GPU waits for
the call's Python (nsa_fwd_decode, sparse_gqa_decode_varlen_indice, mha_inference).  Their three
call shapes, here with small kernels of the same structure (each reads a parameter through a TMA
copy in a pipelined loop, so host-made tensor descriptors are in play):

  (a) eager   ``gather(X, Idx, block=32, selected=2)``: an eager ``@tilelang.jit`` kernel
              (``T.const`` sizes, a ``T.empty`` output) called with compile-time keywords, as
              ``native_sparse_attention(Q, K, V, idx, dim=D, block_size=..., ...)`` is;
  (b) lazy    ``split_sum(B, H, D, block=32, threads=128)`` then ``kernel(X, Lens, Part)``: a lazy
              factory called on every use (cached), a workspace made by the caller with
              ``torch.empty``, ``T.dynamic`` sizes, two ``T.Kernel`` blocks;
  (c) profiler ``kernel(X)`` of a prim_func with two ``T.Kernel`` blocks and a ``T.alloc_global``
              workspace (what ``profiler.do_bench()`` times).

Each also as ``kernel(...)`` of its ``JITKernel`` alone (``... kernel only``), so the difference is
the front's (the eager entry, the factory lookup, the caller's allocation).  Per row:

* ``err``: the largest |difference| from a float64 torch reference (the first call's output; ``-``
  with ``--host-only``, whose launches compute nothing);
* ``host us``: 300 calls back to back timed with ``time.perf_counter`` (then one synchronize), per
  call, median of 5 rounds (``--host-only``: the thread's CPU time, the least of 25 rounds);
* ``event us``: ``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")``, L2
  flushed between calls, as the regression suite times;
* ``path``: ``gen`` when the kernel's generated launcher serves the call (else ``generic``), and per
  launch ``ptr`` (no host descriptors), ``descN:enc`` (N descriptors encoded once per tensor) or
  ``descN:obj`` (``TensorDescriptor`` objects Triton encodes per call).

Variants run in child processes, environment set first (tile2triton/settings.py):
``default`` and ``TILE2TRITON_HOST_DESCRIPTORS=0``; ``--env K=V ...`` adds one more; ``--base DIR``
runs each on the tile2triton tree DIR too (``base ...`` rows: before and after a change, one table).

    PYTHONPATH=. python3 benchmarks/call_cost.py [--profile N] [--env K=V ...] [--base DIR]
    PYTHONPATH=. python3 benchmarks/call_cost.py --host-only    # any machine: no GPU needed

``--host-only`` runs the same calls on the CPU with CUDA faked (benchmarks/launch_cost.py's
``fake_cuda(h200=True)``: Triton compiles for sm_90 offline, the launches do nothing): the Python of a call
only, with ``--profile N`` the N functions of most own time.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time

import torch

import tile2triton as tilelang
import tile2triton.language as T

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK = 32


@tilelang.jit
def gather(X, Idx, block=BLOCK, selected=2):
    """Out[b, h] = the sum of the ``selected`` blocks of ``block`` rows of X[b, :, h] that Idx[b, h] names."""
    batch, seq_len, heads, dim = T.const("batch, seq_len, heads, dim")
    X: T.Tensor([batch, seq_len, heads, dim], T.float16)
    Idx: T.Tensor([batch, heads, selected], T.int32)
    Out = T.empty([batch, heads, block, dim], T.float32)
    with T.Kernel(batch, heads, threads=128) as (b, h):
        X_s = T.alloc_shared([block, dim], T.float16)
        acc = T.alloc_fragment([block, dim], T.float32)
        T.clear(acc)
        for k in T.Pipelined(selected, num_stages=2):
            i_s = Idx[b, h, k]
            T.copy(X[b, i_s * block : (i_s + 1) * block, h, :], X_s)
            for i, j in T.Parallel(block, dim):
                acc[i, j] += X_s[i, j]
        T.copy(acc, Out[b, h, :, :])
    return Out


@tilelang.jit(out_idx=[-1])
def split_sum(batch, heads, dim, block=BLOCK, threads=128):
    """Out[b, h] = the sum of X[b, :Lens[b], h]'s blocks of ``block`` rows: n_split programs per (b, h)
    sum their share into Part (the caller's workspace), a second kernel sums the shares."""
    n_split = T.dynamic("n_split")
    seq = T.dynamic("seq")

    @T.prim_func
    def main(
        X: T.Tensor([batch, seq, heads, dim], T.float16),
        Lens: T.Tensor([batch], T.int32),
        Part: T.Tensor([batch, heads, n_split, block, dim], T.float32),
        Out: T.Tensor([batch, heads, block, dim], T.float32),
    ):
        with T.Kernel(batch, heads, n_split, threads=threads) as (b, h, s):
            X_s = T.alloc_shared([block, dim], T.float16)
            acc = T.alloc_fragment([block, dim], T.float32)
            T.clear(acc)
            per = T.ceildiv(Lens[b], block * n_split)
            for k in T.Pipelined(per, num_stages=2):
                T.copy(X[b, (s * per + k) * block : (s * per + k + 1) * block, h, :], X_s)
                for i, j in T.Parallel(block, dim):
                    acc[i, j] += X_s[i, j]
            T.copy(acc, Part[b, h, s, :, :])
        with T.Kernel(batch, heads, threads=threads) as (b, h):
            total = T.alloc_fragment([block, dim], T.float32)
            T.clear(total)
            for s in T.serial(n_split):
                for i, j in T.Parallel(block, dim):
                    total[i, j] += Part[b, h, s, i, j]
            T.copy(total, Out[b, h, :, :])

    return main


@tilelang.jit(out_idx=[-1])
def split_sum_workspace(batch, seq, heads, dim, n_split, block=BLOCK, threads=128):
    """``split_sum`` with static sizes and its shares in a ``T.alloc_global`` workspace."""

    @T.prim_func
    def main(X: T.Tensor([batch, seq, heads, dim], T.float16), Out: T.Tensor([batch, heads, block, dim], T.float32)):
        Part = T.alloc_global([batch, heads, n_split, block, dim], T.float32)
        per = T.ceildiv(seq, block * n_split)
        with T.Kernel(batch, heads, n_split, threads=threads) as (b, h, s):
            X_s = T.alloc_shared([block, dim], T.float16)
            acc = T.alloc_fragment([block, dim], T.float32)
            T.clear(acc)
            for k in T.Pipelined(per, num_stages=2):
                T.copy(X[b, (s * per + k) * block : (s * per + k + 1) * block, h, :], X_s)
                for i, j in T.Parallel(block, dim):
                    acc[i, j] += X_s[i, j]
            T.copy(acc, Part[b, h, s, :, :])
        with T.Kernel(batch, heads, threads=threads) as (b, h):
            total = T.alloc_fragment([block, dim], T.float32)
            T.clear(total)
            for s in T.serial(n_split):
                for i, j in T.Parallel(block, dim):
                    total[i, j] += Part[b, h, s, i, j]
            T.copy(total, Out[b, h, :, :])

    return main


def block_sums(x: torch.Tensor) -> torch.Tensor:
    """[B, S, H, D] -> [B, H, BLOCK, D]: the sum of the blocks of BLOCK rows, in float64."""
    b, s, h, d = x.shape
    return x.double().reshape(b, s // BLOCK, BLOCK, h, d).sum(1).permute(0, 2, 1, 3)


def cases(dev: str) -> list:
    """(name, call, kernel, reference output) per row; sizes small enough that the host dominates."""
    gen = torch.Generator().manual_seed(0)
    B, S, H, D, NS = 2, 192, 3, 16, 3  # S = NS * 2 blocks: every split sums two
    x = torch.randn(B, S, H, D, generator=gen).half().to(dev)
    idx = torch.stack([torch.randperm(S // BLOCK, generator=gen)[:2] for _ in range(B * H)]).to(torch.int32)
    idx = idx.reshape(B, H, 2).to(dev)
    blocks = x.double().reshape(B, S // BLOCK, BLOCK, H, D)
    picked = torch.stack([torch.stack([blocks[b, idx[b, h].long(), :, h].sum(0) for h in range(H)]) for b in range(B)])
    lens = torch.full((B,), S, dtype=torch.int32, device=dev)

    def eager():
        return gather(x, idx, block=BLOCK, selected=2)

    def lazy():
        part = torch.empty((B, H, NS, BLOCK, D), dtype=torch.float32, device=dev)
        return split_sum(B, H, D, block=BLOCK, threads=128)(x, lens, part)

    kb = split_sum(B, H, D, block=BLOCK, threads=128)
    part = torch.empty((B, H, NS, BLOCK, D), dtype=torch.float32, device=dev)
    kc = split_sum_workspace(B, S, H, D, NS)
    eager()
    ka = gather.compile(x, idx, block=BLOCK, selected=2)
    return [
        ("(a) eager, keywords", eager, ka, picked),
        ("(a) eager kernel only", lambda: ka(x, idx), ka, picked),
        ("(b) lazy factory + torch.empty + call", lazy, kb, block_sums(x)),
        ("(b) lazy kernel only", lambda: kb(x, lens, part), kb, block_sums(x)),
        ("(c) alloc_global workspace, kernel(X)", lambda: kc(x), kc, block_sums(x)),
    ]


def path_of(kernel) -> str:
    """How the kernel's calls run now: the generated launcher or the generic path, and per launch
    its descriptors."""
    parts = ["gen" if hasattr(kernel._entry, "source") else "generic"]  # noqa: SLF001
    lowered = kernel._compiled.get(False)  # noqa: SLF001 - the GPU lowering
    for direct in lowered.direct if lowered is not None else ():
        if direct is None or not direct.descriptors:
            parts.append("ptr")
        else:
            kind = "enc" if any(e is not None for e in direct.encoded.values()) else "obj"
            parts.append(f"desc{len(direct.descriptors)}:{kind}")
    return " ".join(parts)


def profile_of(fn, top: int, calls: int = 300) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(top)
    return "\n".join(line for line in s.getvalue().splitlines() if line.strip())


def measure(dev: str, top: int) -> list:
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    rows = []
    for name, fn, kernel, ref in cases(dev):
        out = fn()
        sync()
        err = None  # faked launches compute nothing
        if dev == "cuda":
            err = float((out.double() - ref).abs().max()) if out.shape == ref.shape else float("inf")
        for _ in range(20):
            fn()
        sync()
        clock = time.perf_counter if dev == "cuda" else time.thread_time  # a shared CI host: CPU time
        rounds = []
        for _ in range(5 if dev == "cuda" else 25):
            t0 = clock()
            for _ in range(300):
                fn()
            rounds.append((clock() - t0) / 300 * 1e6)
            sync()
        host = statistics.median(rounds) if dev == "cuda" else min(rounds)  # a shared CI host: its least noisy
        event = None
        if dev == "cuda":
            import triton.testing

            event = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
        row = {"case": name, "err": err, "host_us": round(host, 2), "event_us": event and round(event, 2)}
        row["path"] = path_of(kernel)
        if top:
            row["profile"] = profile_of(fn, top)
        rows.append(row)
    return rows


def child(top: int, host_only: bool) -> None:
    if host_only:
        sys.path.insert(0, HERE)
        from launch_cost import fake_cuda

        with fake_cuda(h200=True):  # as on the H200: its launch choices and passes
            rows = measure("cpu", top)
    else:
        rows = measure("cuda", top)
    for row in rows:
        print("ROW " + json.dumps(row), flush=True)


VARIANTS = {"default": {}, "HOST_DESCRIPTORS=0": {"TILE2TRITON_HOST_DESCRIPTORS": "0"}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host-only", action="store_true", help="no GPU: the calls' Python, CUDA faked")
    p.add_argument("--profile", type=int, default=0, help="cProfile: the N functions of most own time")
    p.add_argument("--env", nargs="*", default=[], help="K=V ...: one more variant")
    p.add_argument("--base", default="", help="a tile2triton tree (PYTHONPATH) to run every variant on too, first")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(a.profile, a.host_only)
        return 0
    variants = dict(VARIANTS)
    if a.env:
        variants[" ".join(a.env)] = dict(kv.split("=", 1) for kv in a.env)
    if not a.host_only and not torch.cuda.is_available():
        print("no CUDA device: use --host-only")
        return 1
    what = "the CPU, CUDA faked (launches do nothing)" if a.host_only else torch.cuda.get_device_name()
    import triton

    print(f"# {what}; torch {torch.__version__}; triton {triton.__version__}")
    print("| case | variant | err | host us | event us | path |\n|---|---|---|---|---|---|")
    profiles = []
    runs = [(f"base {name}", {**env, "PYTHONPATH": a.base}) for name, env in variants.items()] if a.base else []
    for variant, env in runs + list(variants.items()):
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--profile", str(a.profile)]
        cmd += ["--host-only"] if a.host_only else []
        r = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
        rows = [json.loads(line[4:]) for line in r.stdout.splitlines() if line.startswith("ROW ")]
        if r.returncode or not rows:
            print(f"| {variant} FAILED rc={r.returncode} | | | | | {(r.stdout + r.stderr)[-600:]!r} |")
            continue
        for row in rows:
            event = "-" if row["event_us"] is None else f"{row['event_us']:.2f}"
            err = "-" if row["err"] is None else f"{row['err']:.1e}"
            print(f"| {row['case']} | {variant} | {err} | {row['host_us']:.2f} | {event} | {row['path']} |")
            if row.get("profile"):
                profiles.append(f"\n## {row['case']} [{variant}]\n{row['profile']}")
    print("".join(profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
