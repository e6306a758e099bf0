"""GPU probe for TileLang's ``topk_selector`` (examples/deepseek_v32/topk_selector.py) through
tile2triton: the lowering of its scratch-backed shared atomics under the settings this branch adds
(one more candidate, relaxed-gpu, as an edit of the generated text).

Rows (each a source that tile2triton generates for sm_90 with these settings, launched here):

- ``before``: ``TILE2TRITON_SCRATCH_CTA_ATOMICS=0``, ``TILE2TRITON_SCRATCH_ATOMIC_BARRIERS=keep``
  (the lowering before this branch: Triton's default acq_rel/GPU-scope atomics, a barrier before
  every atomic that follows another on its buffer);
- ``before, relaxed-gpu``: that source with ``sem="relaxed", scope="gpu"`` on the scratch atomics
  (separates the fence from the scope);
- ``cta, keep``: block-scoped relaxed atomics, barriers kept;
- ``cta, reductions``: the branch's defaults: also no barrier between fire-and-forget atomics of
  one kind (the histograms);
- ``cta, atomics``: ``...BARRIERS=atomics``: also none before slot claims (``return_prev``);
- ``cta, reductions, per-lane claims``: ``TILE2TRITON_SCRATCH_BLOCK_CLAIMS=0``: a shared counter's
  claims as one atomic per lane instead of one per block plus a cumsum;
- ``cta, reductions, tl.histogram``: ``TILE2TRITON_SCRATCH_HISTOGRAM=1``: the histogram atomics
  as ``tl.histogram`` and one atomic per bin (the form removed in c7bdb4a, back behind a switch).
- ``cta, reductions, atomic loops vectorized``: ``TILE2TRITON_VECTORIZE_ATOMIC_LOOPS=1``: the
  histogram loop's ``for j in T.serial(4)`` (a branch and a fire-and-forget atomic) as a tile axis;
- ``cta, atomics, per-lane claims, vectorized``: every candidate switch at once.

Each row: ``triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")`` in
microseconds, the recall of ``torch.topk``'s index set (1.0000 expected), registers, spills and
shared memory of the compiled kernel.  Run from the worktree root on the GPU (< 50 s):

    PYTHONPATH=. python3 benchmarks/topk_probe.py [/path/to/tilelang/examples]
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def environment(**values):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def generated(jit, cta: str, barriers: str, claims: str = "1", histogram: str = "0", vectorize: str = "0") -> str:
    with environment(
        TILE2TRITON_SCRATCH_CTA_ATOMICS=cta,
        TILE2TRITON_SCRATCH_ATOMIC_BARRIERS=barriers,
        TILE2TRITON_SCRATCH_BLOCK_CLAIMS=claims,
        TILE2TRITON_SCRATCH_HISTOGRAM=histogram,
        TILE2TRITON_VECTORIZE_ATOMIC_LOOPS=vectorize,
    ):
        return jit.lowered_for("sm_90").source


def main() -> None:
    install_tilelang_alias()
    example = load_example()
    jit = example.tl_topk_impl.compile(topk=2048)
    (launch,) = jit.lowered(False).launches
    before = generated(jit, "0", "keep")
    default = generated(jit, "1", "reductions")
    variants = {
        "before": before,
        "before, relaxed-gpu": relax(before, "gpu"),
        "cta, keep": generated(jit, "1", "keep"),
        "cta, reductions": default,
        "cta, atomics": generated(jit, "1", "atomics"),
        "cta, reductions, per-lane claims": generated(jit, "1", "reductions", "0"),
        "cta, reductions, tl.histogram": generated(jit, "1", "reductions", histogram="1"),
        "cta, reductions, atomic loops vectorized": generated(jit, "1", "reductions", vectorize="1"),
        "cta, atomics, per-lane claims, vectorized": generated(jit, "1", "atomics", "0", vectorize="1"),
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
        rows.append((label, "tile2triton runtime (defaults)", bench(run_t2t), recall(index, x, topk), ""))
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
