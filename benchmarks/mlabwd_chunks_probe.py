"""GPU probe (issue 23, sparse MLA backward): does splitting the head dim into column chunks stop the spills?

Session 17's Nsight Compute run (benchmarks/mlabwd_ncu.sh) of the suite's shape: TileLang's bwd kernel
171 us, 255 registers, 50 MB of local-memory loads; tile2triton's 288 us, 255 registers, 534 MB
(long-scoreboard stalls 5.85 against 1.74 per issued instruction).  The accumulators of one program
(dQ 64 x 512 fp32: 128 registers a thread at 8 warps; dKV^T 512 x 32: 64; the tails, P and dP) fill
the register file.  TileLang keeps the 32-row dKV product as mma.sync streaming its operands from
shared memory in K steps; the Triton kernel holds the whole dKV accumulator and then converts it
for the atomics.

Here: the hand-written Triton kernel of benchmarks/mlabwd_probe.py (``hand-T``: dKV as the transposed
product, one atomic of the whole accumulator) against the same kernel with the 512-wide head dim in
NC column chunks (Q, dO, KV and dQ as NC blocks of 512/NC columns, dKV computed and added chunk by
chunk, so that only one chunk's dKV is live).  Outputs checked against a float32 torch reference.

    PYTHONPATH=. python3 benchmarks/mlabwd_chunks_probe.py
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import triton  # noqa: E402
from mlabwd_probe import BS, DEV, DT, D, H, err, hand_case, inputs  # noqa: E402


def chunked_source(nc: int) -> str:
    """The chunked kernel's source for nc column chunks (Triton has no lists of tensors: one name a chunk)."""
    w = D // nc
    cs = range(nc)
    lines = [
        "import triton",
        "import triton.language as tl",
        "",
        "",
        "@triton.jit",
        "def chunked_bwd(Q, KV, dO, Idx, Lse, Delta, dKV, dQ, SKV, scale_log2, scale, H: tl.constexpr,"
        " D: tl.constexpr, DT: tl.constexpr, TOPK: tl.constexpr, BS: tl.constexpr):",
        "    s = tl.program_id(0)",
        "    h = tl.arange(0, H)[:, None]",
        f"    c = tl.arange(0, {w})[None, :]",
        "    dt = tl.arange(0, DT)[None, :]",
        "    qrow = Q + s * H * (D + DT) + h * (D + DT)",
        "    dorow = dO + s * H * D + h * D",
        "    qt = tl.load(qrow + D + dt)",
        "    lse = tl.load(Lse + s * H + h)",
        "    delta = tl.load(Delta + s * H + h)",
        "    acc_dqt = tl.zeros([H, DT], tl.float32)",
    ]
    for k in cs:
        lines += [f"    q{k} = tl.load(qrow + {k * w} + c)", f"    do{k} = tl.load(dorow + {k * w} + c)",
                  f"    acc_dq{k} = tl.zeros([H, {w}], tl.float32)"]  # fmt: skip
    lines += [
        "    for i in tl.range(0, TOPK, BS):",
        "        ind = tl.load(Idx + s * TOPK + i + tl.arange(0, BS))",
        "        inb = (ind >= 0) & (ind < SKV)",
        "        kvrow = KV + ind[:, None] * (D + DT)",
        "        kvt = tl.load(kvrow + D + dt, mask=inb[:, None], other=0)",
        "        p = tl.broadcast_to(tl.where((ind <= s)[None, :], 0.0, -float('inf')), (H, BS))",
    ]
    for k in cs:
        lines += [f"        kv{k} = tl.load(kvrow + {k * w} + c, mask=inb[:, None], other=0)",
                  f"        p = tl.dot(q{k}, tl.trans(kv{k}), p)"]  # fmt: skip
    lines += ["        p = tl.dot(qt, tl.trans(kvt), p)", "        p = tl.exp2(p * scale_log2 - lse)",
              "        dp = tl.dot(do0, tl.trans(kv0))"]  # fmt: skip
    lines += [f"        dp = tl.dot(do{k}, tl.trans(kv{k}), dp)" for k in cs if k]
    lines += [
        "        ds = (p * (dp - delta) * scale).to(tl.bfloat16)",
        "        p16 = p.to(tl.bfloat16)",
        "        acc_dqt = tl.dot(ds, kvt, acc_dqt)",
        "        dst = dKV + ind[:, None] * (D + DT)",
        "        tl.atomic_add(dst + D + dt, tl.trans(tl.dot(tl.trans(qt), ds)), mask=inb[:, None], sem='relaxed')",
    ]
    for k in cs:
        lines += [f"        acc_dq{k} = tl.dot(ds, kv{k}, acc_dq{k})",
                  f"        part = tl.trans(tl.dot(tl.trans(do{k}), p16, tl.dot(tl.trans(q{k}), ds)))",
                  f"        tl.atomic_add(dst + {k * w} + c, part, mask=inb[:, None], sem='relaxed')"]  # fmt: skip
    lines += ["    out = dQ + s * H * (D + DT) + h * (D + DT)", "    tl.store(out + D + dt, acc_dqt.to(tl.bfloat16))"]
    lines += [f"    tl.store(out + {k * w} + c, acc_dq{k}.to(tl.bfloat16))" for k in cs]
    return "\n".join(lines) + "\n"


_kernels: dict = {}


def load_kernel(name: str, source: str):
    """The ``chunked_bwd`` of ``source``, written to a module file named ``name`` (once a name)."""
    if name not in _kernels:
        path = Path(tempfile.mkdtemp()) / f"{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        _kernels[name] = module.chunked_bwd
    return _kernels[name]


def chunked_kernel(nc: int):
    return load_kernel(f"mlabwd_chunked_{nc}", chunked_source(nc))


def chunked_case(S, SKV, topk, x, nc, warps=8, stages=1, kernel=None):
    """``kernel`` (default: the ``nc``-chunk kernel) timed at one size, its error checked."""
    kernel = kernel or chunked_kernel(nc)
    dkv = torch.zeros(1, SKV, 1, D + DT, dtype=torch.float32, device=DEV)
    dq = torch.full_like(x["q"], float("nan"))
    sm_scale = (D + DT) ** -0.5

    def run():
        kernel[(S,)](x["q"], x["kv"], x["do"], x["idx"], x["lse"], x["delta"], dkv, dq, SKV,
                     sm_scale * 1.44269504, sm_scale, H=H, D=D, DT=DT, TOPK=topk, BS=BS,
                     num_warps=warps, num_stages=stages)  # fmt: skip

    run()
    dkv.zero_()
    run()
    e = err(dq, dkv, x)
    ms = triton.testing.do_bench(run, warmup=25, rep=200, return_mode="median")
    compiled = list(kernel.device_caches[torch.cuda.current_device()][0].values())[-1]
    return (
        ms,
        e,
        f"w{warps} s{stages} regs {compiled.n_regs} spills {compiled.n_spills} smem {compiled.metadata.shared}",
    )


def main() -> None:
    t0 = time.time()
    print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'size':<22} {'variant':<26} {'ms':>8} {'max rel err':>12}  note")
    for size in [(256, 512, 256), (512, 2048, 512), (384, 1024, 384)]:
        x = inputs(*size)
        label = "S={} SKV={} k={}".format(*size)
        plan = [
            ("hand-T", lambda: hand_case(*size, x, 1)),
            ("hand-T 2 stages", lambda: hand_case(*size, x, 1, stages=2)),
        ]
        for nc in (2, 4):
            for st in (1, 2):
                plan.append(
                    (f"chunks {nc} x {D // nc}, {st} st", lambda nc=nc, st=st: chunked_case(*size, x, nc, stages=st))
                )
        run_plan(label, plan)
    print(f"total {time.time() - t0:.1f} s")


def run_plan(label: str, plan: list, width: int = 26) -> None:
    """Time each ``(name, case)`` of ``plan`` (a case returns ms, error, note) and print its row; a
    variant that fails to build or run prints why and the next one runs."""
    for name, fn in plan:
        try:
            ms, e, note = fn()
            print(f"{label:<22} {name:<{width}} {ms:8.4f} {e:12.2e}  {note}", flush=True)
        except Exception as exc:
            print(f"{label:<22} {name:<{width}} failed: {type(exc).__name__}: {str(exc)[:100]}", flush=True)


if __name__ == "__main__":
    main()
