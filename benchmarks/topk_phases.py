"""Where topk_selector's time goes, and what Triton can reach for its first pass (a 256-bin
histogram of each row).  GPU probe; from the repo root on the H200 (< 60 s):

    PYTHONPATH=. python3 benchmarks/topk_phases.py /path/to/tilelang/examples

Part 1, phases: the source tile2triton generates for TileLang's ``topk_selector`` (defaults), cut
after each phase (the rest of the kernel dropped; the index it writes is then incomplete, only
the time counts): the first histogram pass, then the collect pass, then the whole kernel.

Part 2, the first pass by hand in idiomatic Triton, each checked exactly against a torch
histogram of the same bins (``ok``):

- ``atomics, source order``: one global atomic per element, lanes striding 4 elements (the
  source's ``input_base = s * 4096 + tx * 4``), 32 warps: the default lowering's shape;
- ``atomics, coalesced``: the same with consecutive lanes on consecutive elements;
- ``tl.histogram CHUNK``: a register histogram per chunk of CHUNK elements, summed across the
  row's loop, stored once;
- ``one-hot dot CHUNK``: bins as (high 4 bits, low 4 bits); a 16 x CHUNK one-hot of the high
  bits times a CHUNK x 16 one-hot of the low bits on the tensor cores counts the 256 bins.

Times: ``triton.testing.do_bench`` medians in microseconds.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time

import torch
import triton
import triton.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))


def _probe(examples: str):
    """benchmarks/topk_probe.py, reading TileLang's examples from ``examples``."""
    spec = importlib.util.spec_from_file_location("topk_probe", os.path.join(HERE, "topk_probe.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.EXAMPLES = examples
    return module


@triton.jit
def _bins(v):
    """topk_selector's convert_to_uint16: the top byte of an order-preserving fp16 key."""
    h = v.to(tl.float16).to(tl.uint16, bitcast=True)
    h = tl.where(v < 0, ~h & 0xFFFF, h | 0x8000)
    return (h >> 8).to(tl.int32)


@triton.jit
def hist_atomics(x, hist, L, COALESCED: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    tx = tl.arange(0, 1024)
    for s in range(0, tl.cdiv(L, 4096)):
        for j in range(4):
            if COALESCED:
                idx = s * 4096 + j * 1024 + tx
            else:
                idx = s * 4096 + tx * 4 + j
            inside = idx < L
            v = tl.load(x + b * L + idx, mask=inside, other=0.0)
            tl.atomic_add(hist + b * 256 + _bins(v), 1, mask=inside, sem="relaxed", scope="cta")


@triton.jit
def hist_register(x, hist, L, CHUNK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    counts = tl.zeros([256], tl.int32)
    outside = 0
    for s in range(0, tl.cdiv(L, CHUNK)):
        idx = s * CHUNK + tl.arange(0, CHUNK)
        inside = idx < L
        v = tl.load(x + b * L + idx, mask=inside, other=0.0)
        counts += tl.histogram(tl.where(inside, _bins(v), 0), 256)
        outside += tl.sum((~inside).to(tl.int32))
    bins = tl.arange(0, 256)
    counts -= tl.where(bins == 0, outside, 0)
    tl.store(hist + b * 256 + bins, counts)


@triton.jit
def hist_onehot_dot(x, hist, L, CHUNK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    r16 = tl.arange(0, 16)
    acc = tl.zeros([16, 16], tl.float32)
    for s in range(0, tl.cdiv(L, CHUNK)):
        idx = s * CHUNK + tl.arange(0, CHUNK)
        inside = idx < L
        v = tl.load(x + b * L + idx, mask=inside, other=0.0)
        k = _bins(v)
        high = tl.where(inside, k >> 4, 16)  # 16: no row, the element is not counted
        a = (r16[:, None] == high[None, :]).to(tl.float16)
        c = ((k & 15)[:, None] == r16[None, :]).to(tl.float16)
        acc = tl.dot(a, c, acc)
    tl.store(hist + b * 256 + r16[:, None] * 16 + r16[None, :], acc.to(tl.int32))


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def reference_bins(x):
    bits = x.half().view(torch.int16).to(torch.int32) & 0xFFFF
    bits = torch.where(x < 0, ~bits & 0xFFFF, bits | 0x8000)
    return (bits >> 8).long()


def phases(probe, rows):
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    example = probe.load_example()
    jit = example.tl_topk_impl.compile(topk=2048)
    (launch,) = jit.lowered(False).launches
    with probe.environment(TILE2TRITON_ON_CHIP_SCRATCH="0", TILE2TRITON_SIZE_MULTIPLES="0"):  # the global form
        full = jit.lowered_for("sm_90").source
    cuts = {"first histogram pass": "topk_selector.py:84:", "+ collect pass": "topk_selector.py:125:"}
    variants = {}
    for tag, marker in cuts.items():
        lines = full.splitlines()
        at = next(i for i, line in enumerate(lines) if marker in line)
        variants[tag] = "\n".join(lines[:at]) + "\n"
    variants["whole kernel"] = full
    for batch, seq_len, topk in probe.CASES:
        torch.manual_seed(1)
        x = torch.randn(batch, seq_len, dtype=torch.float32, device="cuda")
        starts = torch.zeros(batch, dtype=torch.int32, device="cuda")
        ends = torch.full((batch,), seq_len, dtype=torch.int32, device="cuda")
        index = torch.zeros(batch, topk, dtype=torch.int32, device="cuda")
        scratch = torch.zeros(batch * launch.scratch_bytes, dtype=torch.uint8, device="cuda")
        for tag, src in variants.items():
            kern = probe.build(src, tag)

            def run(kern=kern):
                return kern[(batch,)](x, index, starts, ends, batch, seq_len, scratch, num_warps=launch.num_warps)

            try:
                run()
                torch.cuda.synchronize()
                rows.append((f"b={batch} L={seq_len}", f"phase: {tag}", bench(run), ""))
            except Exception as exc:  # noqa: BLE001 - a row, not the end
                rows.append((f"b={batch} L={seq_len}", f"phase: {tag}", float("nan"), f"{type(exc).__name__}"))


def first_pass(rows):
    for batch, seq_len in ((64, 32768), (32, 65536), (48, 24000)):
        torch.manual_seed(1)
        x = torch.randn(batch, seq_len, dtype=torch.float32, device="cuda")
        ref = torch.stack([torch.bincount(r, minlength=256) for r in reference_bins(x)]).to(torch.int32)
        hist = torch.zeros(batch, 256, dtype=torch.int32, device="cuda")
        cands = {
            "atomics, source order, 32 warps": (hist_atomics, dict(COALESCED=False, num_warps=32), True),
            "atomics, coalesced, 32 warps": (hist_atomics, dict(COALESCED=True, num_warps=32), True),
        }
        for chunk in (1024, 4096):
            for warps in (8, 32):
                cands[f"tl.histogram {chunk}, {warps} warps"] = (
                    hist_register,
                    dict(CHUNK=chunk, num_warps=warps),
                    False,
                )
        for chunk in (512, 1024, 2048):
            for warps in (4, 8):
                cands[f"one-hot dot {chunk}, {warps} warps"] = (
                    hist_onehot_dot,
                    dict(CHUNK=chunk, num_warps=warps),
                    False,
                )
        for tag, (kern, kw, zeroed) in cands.items():

            def run(kern=kern, kw=kw, zeroed=zeroed):
                if zeroed:
                    hist.zero_()
                kern[(batch,)](x, hist, seq_len, **kw)

            try:
                hist.fill_(-1)
                run()
                torch.cuda.synchronize()
                ok = "ok" if torch.equal(hist, ref) else "MISMATCH"
                rows.append((f"b={batch} L={seq_len}", f"pass 1: {tag}", bench(run), ok))
            except Exception as exc:  # noqa: BLE001
                rows.append(
                    (f"b={batch} L={seq_len}", f"pass 1: {tag}", float("nan"), f"{type(exc).__name__}: {str(exc)[:60]}")
                )


def main() -> None:
    start = time.time()
    rows: list = []
    probe = _probe(sys.argv[1] if len(sys.argv) > 1 else "/work/tl/examples")
    phases(probe, rows)
    first_pass(rows)
    width = max(len(r[1]) for r in rows)
    print(f"{'case':<16} {'variant':<{width}} {'us':>8}  check")
    for label, tag, us, info in rows:
        print(f"{label:<16} {tag:<{width}} {us:>8.1f}  {info}")
    print(f"({time.time() - start:.0f} s; {torch.cuda.get_device_name()}, triton {triton.__version__})")


if __name__ == "__main__":
    main()
