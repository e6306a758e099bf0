"""GPU probe (issue 23, session 39): where the causal attention backward's time goes.

TileLang's example_mha_bwd_bshd ``flashattn_bwd``, causal, head dim 64, 2 x 8 x 1024 (block 64 x 64): session 38's
H100 run timed tile2triton's kernel at 0.0368 ms against TileLang's 0.0280 (0.76x), and session 39's launch-choice
probe (launch_choices.py) found every num_warps / num_stages / warp-specialize choice within 1% of the default, so the
kernel's code, not its launch, holds the gap.  Text edits of the kernel tile2triton generates now (its launch: grid
heads x row blocks x batch, the runtime's warps and host tensor descriptors), each timed with do_bench (median, L2
flushed):

- ``base``: as generated;
- ``nomask``: without the causal ``tl.where`` (what the mask costs; wrong on the diagonal block);
- ``split``: the loop split where the mask is decided (first iteration masked, the rest without it: what
  passes/split.py would emit for a comparison decided on a suffix of the iterations);
- ``store``: the dQ atomics as plain stores (what the atomics cost; wrong dQ);
- ``nodq``: without the dQ gemm and its atomics (what that part costs);
- ``s2`` / ``s1``: the loop's num_stages 2 / 1.

dK, dV of each variant are compared with ``base``'s (max abs difference).  ``--tilelang``: real TileLang's kernel
(PYTHONPATH with TileLang's site) at the same shape, timed the same way.  From the project root:

    PYTHONPATH=. python3 benchmarks/hand_variants/bwd_causal_variants.py .tlx/examples
    PYTHONPATH=/tmp/tlsite python3 benchmarks/hand_variants/bwd_causal_variants.py .tlx/examples --tilelang
"""

import os
import re
import sys

import torch
from triton.testing import do_bench

B, H, N, D, BLOCK = 2, 8, 1024, 64, 64


def inputs():
    torch.manual_seed(0)
    q = torch.randn(B, N, H, D, device="cuda", dtype=torch.half)
    k, v, do = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
    lse = torch.randn(B, H, N, device="cuda").abs() + 3
    delta = torch.randn(B, H, N, device="cuda")
    dq = torch.zeros(B, N, H, D, device="cuda", dtype=torch.float32)
    dk, dv = torch.empty_like(q), torch.empty_like(q)
    return q, k, v, do, lse, delta, dq, dk, dv


def loop_body(src: str):
    """(the loop's header line, its body lines, the line after it) of the generated kernel's k loop."""
    lines = src.splitlines()
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("for k in tl.range("))
    indent = len(lines[head]) - len(lines[head].lstrip())
    end = head + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    return lines, head, end


MASK = re.compile(r"^\s*qkT = tl\.where\(.*\n", re.M)
ATOMIC = re.compile(r"tl\.atomic_add\((dQ \+ \w+), (\w+), sem='relaxed'\)")


def variants(src: str) -> dict:
    out = {"base": src, "nomask": MASK.sub("", src), "store": ATOMIC.sub(r"tl.store(\1, \2)", src)}
    lines, head, end = loop_body(src)
    body = "\n".join(lines[head + 1 : end])
    nodq = re.sub(r"^\s*dq = tl\.(zeros|dot)\(.*\n", "", body + "\n", flags=re.M)
    nodq = re.sub(r"^\s*offs_\d+ = .*\n\s*tl\.atomic_add\(.*\n", "", nodq, flags=re.M)
    out["nodq"] = "\n".join(lines[: head + 1] + [nodq.rstrip("\n")] + lines[end:])
    header = lines[head]
    m = re.match(r"(\s*)for k in tl\.range\((\w+), (\w+), (.*)\):", header)
    pad, start, stop, kwargs = m.groups()
    split = [
        f"{pad}k_split = tl.minimum({start} + 1, {stop})",
        f"{pad}for k in tl.range({start}, k_split, {kwargs}):",
        body,
        f"{pad}for k in tl.range(k_split, {stop}, {kwargs}):",
        MASK.sub("", body + "\n").rstrip("\n"),
    ]
    out["split"] = "\n".join(lines[:head] + split + lines[end:])
    for s in (2, 1):
        out[f"s{s}"] = src.replace(header, re.sub(r"num_stages=\d", f"num_stages={s}", header))
    return out


def time_tilelang(examples: str) -> None:
    sys.path.insert(0, os.path.join(examples, "flash_attention"))
    import example_mha_bwd_bshd as ex

    kern = ex.flashattn_bwd(B, H, N, D, True, BLOCK, BLOCK)
    args = inputs()
    kern(*args)
    print(f"{'tilelang':10s} {do_bench(lambda: kern(*args), warmup=25, rep=200) * 1000:8.2f} us")


def built(examples: str):
    """The example's kernel through tile2triton (its own launch timed and printed as ``runtime``), its
    inputs, the module generated for sm_90, that module's launch and the host descriptors it takes."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    sys.path.insert(0, os.path.join(examples, "flash_attention"))
    import example_mha_bwd_bshd as ex

    kern = ex.flashattn_bwd(B, H, N, D, True, BLOCK, BLOCK)
    args = inputs()
    kern(*args)  # tile2triton's own launch (the runtime's choices), timed as the reference below
    print(f"{'runtime':10s} {do_bench(lambda: kern(*args), warmup=25, rep=200) * 1000:8.2f} us", flush=True)
    module = kern.lowered_for("sm_90")
    q, k, v, do, lse, delta, dq, dk, dv = args
    descs = [
        TensorDescriptor.from_tensor(q, [1, BLOCK, 1, D]),
        TensorDescriptor.from_tensor(lse, [1, 1, BLOCK]),
        TensorDescriptor.from_tensor(do, [1, BLOCK, 1, D]),
        TensorDescriptor.from_tensor(delta, [1, 1, BLOCK]),
    ]
    return args, module, module.launches[0], descs


def main(examples: str) -> None:
    args, module, launch, descs = built(examples)
    time_variants(variants(module.source), "bwd_causal", args, launch, descs)


def time_variants(sources: dict, prefix: str, args, launch, descs, repeats: int = 1) -> None:
    """Each edited source (name -> text) built and timed (do_bench median, ``repeats`` times) at the
    example's grid, its dK and dV compared with the first's."""
    from variant_tools import kernel_from_source

    q, k, v, do, lse, delta, dq, dk, dv = args
    ref = None
    for name, src in sources.items():
        fn = kernel_from_source(src, f"{prefix}_{name}", launch.name)
        grid = (H, N // BLOCK, B)

        def run():
            fn[grid](*args, *descs, num_warps=launch.num_warps)

        try:
            dq.zero_()
            run()
            torch.cuda.synchronize()
            got = (dk.float().clone(), dv.float().clone())
            ref = ref or got
            err = max((a - b).abs().max().item() for a, b in zip(got, ref))
            times = " ".join(f"{do_bench(run, warmup=25, rep=200) * 1000:8.2f}" for _ in range(repeats))
            print(f"{name:10s} {times} us  dK/dV vs base {err:.2e}", flush=True)
        except Exception as e:  # noqa: BLE001 (a variant that does not compile: say so, go on)
            print(f"{name:10s} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if "--tilelang" in sys.argv:
        time_tilelang(sys.argv[1])
    else:
        main(sys.argv[1])
