"""GPU probe for TileLang's ``topk_selector`` (examples/deepseek_v32/topk_selector.py) through
tile2triton: the current lowering and candidate schedules for its scratch-backed shared atomics.

The candidates are the current generated source with one change each, applied to its text (so the
probe measures exactly the schedule the lowering would emit behind a switch):

- ``relaxed-cta``: every atomic on a scratch-backed shared buffer ``sem="relaxed", scope="cta"``
  (TileLang's shared atomicAdd is relaxed and block-local; tl.atomic_add defaults to acq_rel/gpu);
- ``relaxed-gpu``: the same with ``scope="gpu"`` (separates the fence from the scope);
- ``no-barriers-between-reds``: relaxed-cta plus no ``tl.debug_barrier()`` between two atomics on
  one scratch buffer whose previous values are unused (``red``: adds commute; the barrier stays
  after plain stores/loads);
- ``no-barriers-between-atomics``: the same also before atomics whose previous value is used (the
  slot claims);
- ``histogram``: no-barriers-between-reds plus the non-returning histogram atomics as ``tl.histogram``
  of the lanes' bins and one atomic per bin (the form removed in c7bdb4a, re-timed here).

Each row: ``triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")`` in
microseconds, the recall of ``torch.topk``'s index set (1.0000 expected), registers, spills and
shared memory of the compiled kernel.  Run from the worktree root on the GPU (< 50 s):

    PYTHONPATH=. python3 benchmarks/topk_probe.py [/path/to/tilelang/examples]
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tempfile
import time

import torch
import triton

from tile2triton.cli import install_tilelang_alias

EXAMPLES = sys.argv[1] if len(sys.argv) > 1 else "/work/tl/examples"
CASES = [(64, 32 * 1024, 2048), (32, 64 * 1024, 2048)]  # the suite's size, then one other


def load_example():
    path = os.path.join(EXAMPLES, "deepseek_v32", "topk_selector.py")
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("topk_selector", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ source variants
def scratch_views(src: str) -> set:
    return set(re.findall(r"^\s*(\w+) = \(?scratch\b", src, re.M))


def relax(src: str, scope: str) -> str:
    views = scratch_views(src)
    out = []
    for line in src.splitlines():
        m = re.search(r"tl\.atomic_add\((\w+)", line)
        if m and m.group(1) in views and "sem=" not in line:
            line = line.rstrip()
            assert line.endswith(")"), line
            line = line[:-1] + f', sem="relaxed", scope="{scope}")'
        out.append(line)
    return "\n".join(out) + "\n"


def _code_after(lines, i, n=4):
    """The next ``n`` non-comment lines after line ``i``."""
    got = []
    for line in lines[i + 1 :]:
        if line.strip().startswith("#"):
            continue
        got.append(line)
        if len(got) == n:
            break
    return got


def drop_atomic_barriers(src: str, results: bool) -> str:
    """Drop a barrier whose next statement is an atomic (its only pending access: atomics); with
    ``results=False`` only before an atomic whose previous value is unused (a ``red``)."""
    lines = src.splitlines()
    keep = []
    for i, line in enumerate(lines):
        if line.strip() == "tl.debug_barrier()":
            after = _code_after(lines, i)
            atomic = next((k for k, a in enumerate(after) if "tl.atomic_add(" in a), None)
            plain = any(("tl.load(" in a or "tl.store(" in a) for a in after[: atomic if atomic is not None else 0])
            returns = atomic is not None and "= tl.atomic_add(" in after[atomic]
            if atomic is not None and not plain and atomic <= 2 and (results or not returns):
                continue
        keep.append(line)
    return "\n".join(keep) + "\n"


def histogram(src: str) -> str:
    """``tl.atomic_add(buf + bins, 1, mask=m, ...)`` (result unused) -> tl.histogram + one atomic per bin."""
    out = []
    for line in src.splitlines():
        m = re.match(r"(\s*)tl\.atomic_add\((\w+) \+ (\w+), 1, mask=(\w+)(.*)\)$", line)
        if m:
            ind, buf, bins, mask, rest = m.groups()
            out.append(f"{ind}{bins}_hist = tl.histogram({bins}.to(tl.int32), 512, mask={mask})")
            out.append(f"{ind}{bins}_bins = tl.arange(0, 512)")
            out.append(
                f"{ind}tl.atomic_add({buf} + {bins}_bins, {bins}_hist, mask=({bins}_hist > 0) & ({bins}_bins < 257){rest})"
            )
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def build(src: str, tag: str):
    path = os.path.join(tempfile.mkdtemp(prefix=f"topk_{tag}_"), f"topk_{tag.replace('-', '_')}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"topk_{tag.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.tl_topk_impl_kernel


# ------------------------------------------------------------------ timing
def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def recall(index, x, topk):
    ref = torch.topk(x, topk, dim=-1)[1]
    hits = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(index.cpu(), ref.cpu()))
    return hits / (x.shape[0] * topk)


def stats(compiled) -> str:
    try:
        return f"regs {compiled.n_regs:>3} spills {compiled.n_spills:>3} smem {compiled.metadata.shared:>6}"
    except Exception as exc:  # noqa: BLE001 - informative only
        return f"({type(exc).__name__})"


def main() -> None:
    install_tilelang_alias()
    example = load_example()
    jit = example.tl_topk_impl.compile(topk=2048)
    module = jit.lowered(False)
    (launch,) = module.launches
    base = module.source
    relaxed = relax(base, "cta")
    no_red_bar = drop_atomic_barriers(relaxed, results=False)
    variants = {
        "as emitted (own launch)": base,
        "relaxed-cta": relaxed,
        "relaxed-gpu": relax(base, "gpu"),
        "no-barriers-between-reds": no_red_bar,
        "no-barriers-between-atomics": drop_atomic_barriers(relaxed, results=True),
        "histogram": histogram(no_red_bar),
    }
    start = time.time()
    rows = []
    for batch, seq_len, topk in CASES:
        torch.manual_seed(1)
        x = torch.randn(batch, seq_len, dtype=torch.float32, device="cuda")
        starts = torch.zeros(batch, dtype=torch.int32, device="cuda")
        ends = torch.full((batch,), seq_len, dtype=torch.int32, device="cuda")
        index = torch.zeros(batch, topk, dtype=torch.int32, device="cuda")
        label = f"b={batch} seq={seq_len} k={topk}"

        def run_t2t():
            example.tl_topk_impl(x, index, starts, ends)

        index.fill_(-1)
        run_t2t()
        rows.append((label, "tile2triton (current)", bench(run_t2t), recall(index, x, topk), ""))
        scratch = torch.empty(batch * launch.scratch_bytes, dtype=torch.uint8, device="cuda")
        for tag, src in variants.items():
            try:
                kern = build(src, tag)

                def run(kern=kern):
                    return kern[(batch,)](x, index, starts, ends, batch, seq_len, scratch, num_warps=launch.num_warps)

                index.fill_(-1)
                compiled = run()
                torch.cuda.synchronize()
                rows.append((label, tag, bench(run), recall(index, x, topk), stats(compiled)))
            except Exception as exc:  # noqa: BLE001 - a failing candidate is a row, not the end
                rows.append((label, tag, float("nan"), float("nan"), f"{type(exc).__name__}: {str(exc)[:80]}"))
        rows.append((label, "torch.topk", bench(lambda: torch.topk(x, topk, dim=-1)), 1.0, ""))
    width = max(len(r[1]) for r in rows)
    print(f"{'case':<24} {'variant':<{width}} {'us':>9} {'recall':>7}  kernel")
    for label, tag, us, rec, info in rows:
        print(f"{label:<24} {tag:<{width}} {us:>9.1f} {rec:>7.4f}  {info}")
    print(f"({time.time() - start:.0f} s; {torch.cuda.get_device_name()}, triton {triton.__version__})")


if __name__ == "__main__":
    main()
