"""Dequantizing GEMM: fp16 activations x int4 weights packed two per byte (TileLang's
examples/dequantize_gemm style).

B_packed is (N, K // 2): byte ``B_packed[n, k // 2]`` holds weight ``(n, k)`` in its low nibble
for even k and its high nibble for odd k. Inside the K loop a T.Parallel unpacks the shared tile
with shifts and masks into an fp16 tile, which the gemm uses transposed; a per-output-channel
scale is applied in the epilogue.

* ``signed=False``: uint8 storage, unsigned nibbles with zero point 8: w = ((b >> s) & 0xF) - 8.
* ``signed=True``: int8 storage, two's-complement nibbles, sign-extended with an arithmetic shift
  in int32: w = (int32(b) << (28 - s)) >> 28.

Run: python examples/dequant_gemm.py
"""

import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit(out_idx=[-1])
def dequant_matmul(M, N, K, block_M, block_N, block_K, signed=False, in_dtype="float16", accum_dtype="float"):
    assert K % 2 == 0 and block_K % 2 == 0
    storage_dtype = "int8" if signed else "uint8"

    @T.prim_func
    def main(
        A: T.Tensor[(M, K), in_dtype],
        B_packed: T.Tensor[(N, K // 2), storage_dtype],
        Scale: T.Tensor[(N,), in_dtype],
        C: T.Tensor[(M, N), in_dtype],
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K // 2), storage_dtype)
            B_dequant = T.alloc_fragment((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B_packed[bx * block_N, ko * block_K // 2], B_shared)
                for i, j in T.Parallel(block_N, block_K):
                    if signed:
                        # move the nibble to the top of an int32, then shift back arithmetically
                        B_dequant[i, j] = T.cast(
                            (T.cast(B_shared[i, j // 2], "int32") << (28 - (j % 2) * 4)) >> 28, in_dtype
                        )
                    else:
                        B_dequant[i, j] = T.cast((B_shared[i, j // 2] >> ((j % 2) * 4)) & 0xF, in_dtype) - 8
                T.gemm(A_shared, B_dequant, C_local, transpose_B=True)

            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = C_local[i, j] * Scale[bx * block_N + j]
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def pack_int4(w, signed):
    """w: (N, K) integer weights in [-8, 7] -> (N, K // 2) bytes, even k in the low nibble."""
    nib = (w if signed else w + 8).to(torch.int32) & 0xF
    packed = nib[:, 0::2] | (nib[:, 1::2] << 4)
    if signed:
        return torch.where(packed >= 128, packed - 256, packed).to(torch.int8)
    return packed.to(torch.uint8)


def check(device=None, M=70, N=72, K=200, block_M=32, block_N=32, block_K=32, signed=False):
    """Run at sizes that are not multiples of the tiles; return the max abs error."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kernel = dequant_matmul(M, N, K, block_M, block_N, block_K, signed)
    a = torch.randn(M, K, device=device).half()
    w = torch.randint(-8, 8, (N, K), device=device)
    scale = (torch.rand(N, device=device) * 0.1 + 0.01).half()
    c = kernel(a, pack_int4(w, signed), scale)
    ref = (a.double() @ w.double().T) * scale.double()
    torch.testing.assert_close(c.double(), ref, atol=2e-2, rtol=1e-2)
    return (c.double() - ref).abs().max().item()


def main():
    torch.manual_seed(0)
    for signed in (False, True):
        err = check(signed=signed)
        print(f"signed={signed}: ok max_err={err:.3g}")


if __name__ == "__main__":
    main()
