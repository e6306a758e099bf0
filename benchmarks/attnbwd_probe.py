"""Attention backward's main kernel (dK/dV, dQ by atomics) under the lowering choices in question.

TileLang's examples at their ``run_regression_perf`` sizes (issue 23's attention-backward group),
run unmodified through tile2triton.  Per case and variant: the main kernel's median time
(``triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")``, us), the largest
|difference| of dQ, dK, dV against torch (fp32 reference, scaled by their max), and the compiled
kernel's registers / spills / shared memory.  Variants:

* ``default``: tile2triton as it is (launch from runtime/tuning.py's heuristic);
* ``no-tma-vectors``: ``TILE2TRITON_TMA_VECTORS=0``: one-axis boxes (lse, Delta) through pointers;
* ``no-descriptors``: ``TILE2TRITON_TENSOR_DESCRIPTORS=0``: no in-kernel TMA descriptors at all
  (each program builds one per tensor at its start: 4 tensormap_create + fences per CTA);
  (equivalent here to ``TILE2TRITON_TMA_MIN_TRIPS=17``: the loops run 8 times at S=512);
* ``host-descriptors``: ``TILE2TRITON_HOST_DESCRIPTORS=1``: the descriptors made on the host per
  call and passed as arguments (TileLang's ``__grid_constant__ CUtensorMap``s), none in-kernel;

The S=2048 rows (32 iterations a program) say whether descriptors pay off in longer loops.

What the rows decide (tile2triton/settings.py):

* ``TMA_MIN_TRIPS_DEFAULT``: 17 (loops of at most 16 iterations through pointers) if
  ``no-descriptors`` beats ``default`` on the S512 mha row and the gqa row; 0 (as now) otherwise;
  the S2048 pair says whether a higher bound would gain more;
* ``HOST_DESCRIPTORS_DEFAULT``: on if ``host-descriptors`` beats ``default`` on all three cases;
* ``TMA_VECTORS_DEFAULT``: off if ``no-tma-vectors`` beats ``default`` (and the ``host-descriptors
  no-tma-vectors`` row beats ``host-descriptors`` where host descriptors are chosen).

    PYTHONPATH=. python3 benchmarks/attnbwd_probe.py [TILELANG_EXAMPLES_DIR] [--cpu]

(default /work/tl/examples/flash_attention, else $TILELANG_EXAMPLES or ../tl/examples/flash_attention).
"""

from __future__ import annotations

import importlib
import os
import sys

import torch

LOG2E = 1.44269504
DEV = "cuda"  # --cpu: tiny sizes through Triton's interpreter, a smoke test of this script


def _examples_dir() -> str:
    given = [a for a in sys.argv[1:] if not a.startswith("--")]
    if given:
        return given[0]
    for d in (
        os.environ.get("TILELANG_EXAMPLES", ""),
        "/work/tl/examples/flash_attention",
        "../tl/examples/flash_attention",
    ):
        if d and os.path.isdir(d):
            return d
    raise SystemExit("pass TileLang's examples/flash_attention folder")


def _reference(q, k, v, do, layout, groups):
    """fp32 gradients of softmax(q k^T / sqrt(d)) v, and lse (log2 domain), Delta, in the kernel's layout."""
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    a, b, c = (x.transpose(1, 2) if layout == "bshd" else x for x in (qf, kf, vf))  # -> b h s d
    b, c = b.repeat_interleave(groups, 1), c.repeat_interleave(groups, 1)
    s = a @ b.transpose(-1, -2) / q.shape[-1] ** 0.5
    o = torch.softmax(s, -1) @ c
    g = do.float().transpose(1, 2) if layout == "bshd" else do.float()
    dq, dk, dv = torch.autograd.grad(o, (qf, kf, vf), g)
    lse = (torch.logsumexp(s, -1) * LOG2E).detach().contiguous()
    delta = (o * g).sum(-1).detach().contiguous()
    return dq, dk, dv, lse, delta


def _err(got, ref) -> float:
    return ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()


def mha(ex, layout, B=1, H=16, S=512, D=64):
    shape = (B, H, S, D) if layout == "bhsd" else (B, S, H, D)
    q, k, v, do = (torch.randn(shape, device=DEV, dtype=torch.half) for _ in range(4))
    dq_r, dk_r, dv_r, lse, delta = _reference(q, k, v, do, layout, 1)
    main = ex.flashattn_bwd(B, H, S, D, False, 64, 64 if D <= 64 else 32)
    dq = torch.zeros(shape, device=DEV, dtype=torch.float32)
    dk, dv = torch.full_like(q, float("nan")), torch.full_like(q, float("nan"))
    args = (q, k, v, do, lse, delta, dq, dk, dv)

    def check(kernel):
        dq.zero_()
        kernel(*args)
        return max(_err(dq, dq_r), _err(dk, dk_r), _err(dv, dv_r))

    return main, args, check


def gqa(ex, B=1, H=32, S=256, Dqk=192, Dv=128, groups=16):
    hk = H // groups
    q = torch.randn(B, S, H, Dqk, device=DEV, dtype=torch.half)
    k = torch.randn(B, S, hk, Dqk, device=DEV, dtype=torch.half)
    v = torch.randn(B, S, hk, Dv, device=DEV, dtype=torch.half)
    do = torch.randn(B, S, H, Dv, device=DEV, dtype=torch.half)
    dq_r, dk_r, dv_r, lse, delta = _reference(q, k, v, do, "bshd", groups)
    main = ex.flashattn_bwd_split(B, H, S, Dqk, Dv, False, block_M=128, block_N=32, threads=256, num_stages=2,
                                  groups=groups)  # fmt: skip
    dq = torch.zeros(B, S, H, Dqk, device=DEV, dtype=torch.float32)
    dk = torch.full((groups, B, S, hk, Dqk), float("nan"), device=DEV, dtype=torch.half)
    dv = torch.full((groups, B, S, hk, Dv), float("nan"), device=DEV, dtype=torch.half)
    args = (q, k, v, do, lse, delta, dq, dk, dv)

    def check(kernel):
        dq.zero_()
        kernel(*args)
        return max(_err(dq, dq_r), _err(dk.float().sum(0), dk_r), _err(dv.float().sum(0), dv_r))

    return main, args, check


def _variant(main, env: dict, launch):
    """The main kernel compiled under ``env`` and ``launch`` (tuning.LaunchChoice or None)."""
    from tile2triton.runtime.kernel import JITKernel

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        kernel = JITKernel(main.prim_func, pass_configs=main.pass_configs, launch=launch or main.launch_choice)
        return kernel, saved
    except Exception:
        _restore(saved)
        raise


def _restore(saved):
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _compiled_info(kernel) -> str:
    """Registers, spills and shared memory of the compiled main kernel (informative only)."""
    try:
        for lowered in kernel._compiled.values():
            for direct in lowered.direct:
                for c in (direct.kernels or {}).values() if direct is not None else ():
                    return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
            for fn, *_ in lowered.launches:  # launched through JITFunction.run
                for cache in getattr(fn, "device_caches", {}).values():
                    for c in cache[0].values():
                        return f"regs {c.n_regs} spills {c.n_spills} smem {c.metadata.shared}"
    except Exception as exc:
        return f"(no info: {type(exc).__name__})"
    return "-"


def main() -> int:
    global DEV
    cpu = "--cpu" in sys.argv
    DEV = "cpu" if cpu else "cuda"
    if not cpu and not torch.cuda.is_available():
        print("needs a CUDA GPU (or --cpu)")
        return 1
    import triton
    import triton.testing

    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
    from tile2triton.runtime.tuning import LaunchChoice

    sys.path.insert(0, _examples_dir())
    bhsd = importlib.import_module("example_mha_bwd_bhsd")
    gqa_ex = importlib.import_module("example_gqa_bwd")
    torch.manual_seed(0)
    print(
        f"{torch.cuda.get_device_name() if not cpu else 'cpu'}, torch {torch.__version__}, triton {triton.__version__}"
    )
    small = (1, 2, 96, 32) if cpu else ()
    small_gqa = (1, 4, 96, 64, 32, 2) if cpu else ()
    no_vec = {"TILE2TRITON_TMA_VECTORS": "0"}
    no_desc = {"TILE2TRITON_TENSOR_DESCRIPTORS": "0"}
    host = {"TILE2TRITON_HOST_DESCRIPTORS": "1"}
    w8s2 = LaunchChoice(8, 2)
    cases = [
        ("mha_bwd_bhsd B1 H16 S512 D64", lambda: mha(bhsd, "bhsd", *small),
         [("default", {}, None), ("no-tma-vectors", no_vec, None), ("no-descriptors", no_desc, None),
          ("host-descriptors", host, None), ("host-descriptors no-tma-vectors", {**host, **no_vec}, None)]),
        ("mha_bwd_bhsd B1 H16 S2048 D64 (32 trips)", lambda: mha(bhsd, "bhsd", *(small or (1, 16, 2048, 64))),
         [("default", {}, None), ("no-descriptors", no_desc, None), ("host-descriptors", host, None)]),
        ("gqa_bwd B1 H32 S256 192/128 g16", lambda: gqa(gqa_ex, *small_gqa),
         # w8 s2: where the runtime's shared-memory refit lands from the heuristic's w8 s3 (254,528 B
         # on sm_90 with Dqk 192 padded to 256); given here so no row compiles twice
         [("default", {}, w8s2), ("no-descriptors", no_desc, w8s2), ("host-descriptors", host, w8s2)]),
    ]  # fmt: skip
    print("| case | variant | launch | us | err | compiled |")
    print("|---|---|---|---|---|---|")
    for name, build, variants in cases:
        try:
            main_k, args, check = build()
        except Exception as exc:
            print(f"| {name} | build failed: {type(exc).__name__}: {str(exc)[:200]} |")
            continue
        for label, env, launch in variants:
            try:
                kernel, saved = _variant(main_k, env, launch)
                try:
                    err = check(kernel)  # compiles here, under env
                finally:
                    _restore(saved)
                us = float("nan")
                if not cpu:
                    us = triton.testing.do_bench(lambda: kernel(*args), warmup=25, rep=100, return_mode="median") * 1e3
                chosen = kernel.launch_choice.label() if kernel.launch_choice is not None else "-"
                print(f"| {name} | {label} | {chosen} | {us:.2f} | {err:.1e} | {_compiled_info(kernel)} |", flush=True)
            except Exception as exc:
                print(f"| {name} | {label} | failed: {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
