"""Seed 000: a 1-D copy in TileLang's eager style, once in the block view and once in the
thread view, as written in the seed.

Run: python examples/seed_copy.py
"""
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit
def tl_copy_1d_parallel(A, BLOCK_N: int):  # pyright: ignore[reportRedeclaration]
    # The host/declaration part of TileLang script.
    N = T.const("N")
    A: T.Tensor[(N,), T.float16]
    B = T.empty((N,), T.float16)

    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=256) as bx:
        offs = bx * BLOCK_N
        T.copy(A[offs : offs + BLOCK_N], B[offs : offs + BLOCK_N])

    return B


@tilelang.jit
def tl_copy_1d_parallel_thread_view(A, BLOCK_N: int):  # pyright: ignore[reportRedeclaration]
    # The host/declaration part of TileLang script.
    N = T.const("N")
    A: T.Tensor[(N,), T.float16]
    B = T.empty((N,), T.float16)

    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=256) as bx:
        tx = T.get_thread_binding(0)

        for i in T.serial(T.ceildiv(BLOCK_N, 256)):
            idx = bx * BLOCK_N + i * 256 + tx
            B[idx] = A[idx]

    return B


def check(device=None, N=None, BLOCK_N=1024):
    """Run both views on a size that is not a multiple of the block; raise on a mismatch."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    N = N or (1024 * 1024 if device == "cuda" else 5000)
    a = torch.randn(N, dtype=torch.float16, device=device)
    results = {}
    for name, fn in (("block view", tl_copy_1d_parallel), ("thread view", tl_copy_1d_parallel_thread_view)):
        try:
            b = fn(a, BLOCK_N)
            torch.testing.assert_close(b, a, atol=0, rtol=0)
            results[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - report each view separately
            results[name] = f"FAILED: {type(exc).__name__}: {exc}"
    return results


def main():
    torch.manual_seed(0)
    results = check()
    for name, status in results.items():
        print(f"{name}: {status}")
    if any(s != "ok" for s in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
