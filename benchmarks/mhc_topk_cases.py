"""Two cases of TileLang's performance-regression suite through tile2triton, against torch.

- ``mhc_pre`` (examples/deepseek_mhc/example_mhc_pre.py): the gemm + sqrsum kernel and the fused
  kernel, timed together as the suite times them, and each alone; torch reference ``mhc_pre_ref``.
- ``topk_selector`` (examples/deepseek_v32/topk_selector.py): the radix-select kernel; torch
  reference ``torch.topk``.

Each at the suite's sizes and one other size.  The example files are read from a TileLang
checkout (not copied here) with ``import tilelang`` resolved to tile2triton.  Timer:
``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")``.  Outputs are checked
against the references (max error for mhc_pre, recall of the top-k set for topk).

Run on a GPU (about a minute):
    PYTHONPATH=. python3 benchmarks/mhc_topk_cases.py /path/to/tilelang/examples
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import torch
import triton

from tile2triton.cli import install_tilelang_alias


def load(path: str, name: str):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def mhc_rows(m, n: int, hidden: int, hc: int = 4):
    data = m.generate_test_data(n=n, hc_mult=hc, hidden_size=hidden)
    residual, fn, scale, base = data["residual"], data["fn"], data["hc_scale"], data["hc_base"]
    hc3 = hc * 2 + hc * hc
    dev = residual.device
    post = torch.empty(n, hc, dtype=torch.float32, device=dev)
    comb = torch.empty(n, hc * hc, dtype=torch.float32, device=dev)
    layer = torch.empty(n, hidden, dtype=torch.bfloat16, device=dev)
    gemm_out = torch.empty(1, n, hc3, dtype=torch.float32, device=dev)
    sqrsum = torch.empty(1, n, dtype=torch.float32, device=dev)
    eps = (data["rms_eps"], data["hc_pre_eps"], data["hc_sinkhorn_eps"], data["hc_post_mult_value"])

    def gemm():
        m.mhc_pre_gemm_sqrsum_tilelang(
            residual.view(n, hc * hidden), fn, gemm_out.squeeze(0), sqrsum.squeeze(0), hc3, hc * hidden
        )

    def fuse():
        m.mhc_pre_big_fuse_tilelang(
            gemm_out, sqrsum, scale, base, residual, post, comb, layer, hidden, *eps, data["sinkhorn_repeat"], 1, hc
        )

    def both():
        gemm()
        fuse()

    both()
    ref = m.mhc_pre_ref(**data)
    err = max((a.reshape(b.shape).float() - b.float()).abs().max().item() for a, b in zip((post, comb, layer), ref))
    t_ref = bench(lambda: m.mhc_pre_ref(**data))
    label = f"mhc_pre n={n} hidden={hidden}"
    return [
        (label + " (both kernels)", bench(both), t_ref, f"max err {err:.2e}"),
        (label + " gemm_sqrsum", bench(gemm), None, ""),
        (label + " big_fuse", bench(fuse), None, ""),
    ]


def topk_rows(m, batch: int, seq_len: int, topk: int):
    torch.manual_seed(1)
    x = torch.randn(batch, seq_len, dtype=torch.float32, device="cuda")
    starts = torch.zeros(batch, dtype=torch.int32, device="cuda")
    ends = torch.full((batch,), seq_len, dtype=torch.int32, device="cuda")
    index = torch.zeros(batch, topk, dtype=torch.int32, device="cuda")

    def run():
        m.tl_topk_impl(x, index, starts, ends)

    run()
    ref = torch.topk(x, topk, dim=-1)[1]
    hits = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(index.cpu(), ref.cpu()))
    recall = hits / (batch * topk)
    label = f"topk_selector batch={batch} seq={seq_len} topk={topk}"
    return [(label, bench(run), bench(lambda: torch.topk(x, topk, dim=-1)), f"recall {recall:.4f}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="?", default="/work/tl/examples", help="a TileLang checkout's examples/")
    args = parser.parse_args()
    install_tilelang_alias()
    mhc = load(os.path.join(args.examples, "deepseek_mhc", "example_mhc_pre.py"), "example_mhc_pre")
    topk = load(os.path.join(args.examples, "deepseek_v32", "topk_selector.py"), "topk_selector")
    start = time.time()
    rows = []
    rows += mhc_rows(mhc, 2048, 4096)  # the suite's size
    rows += mhc_rows(mhc, 8192, 2560)
    rows += topk_rows(topk, 64, 32 * 1024, 2048)  # the suite's size
    rows += topk_rows(topk, 32, 64 * 1024, 2048)
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'tile2triton ms':>14}  {'torch ms':>9}  {'torch/t2t':>9}  check")
    for label, ours, ref, check in rows:
        ratio = f"{ref / ours:.2f}x" if ref is not None else ""
        ref_s = f"{ref:.4f}" if ref is not None else ""
        print(f"{label:<{width}}  {ours:>14.4f}  {ref_s:>9}  {ratio:>9}  {check}")
    print(f"({time.time() - start:.0f} s; {torch.cuda.get_device_name()}, triton {triton.__version__})")


if __name__ == "__main__":
    main()
