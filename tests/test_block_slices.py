"""A register tile read at an aligned block of one dim (``T.copy(acc[:4, :], O_shared)`` of a
64-row fragment, ``acc[i + 8, j]``) as a ``tl.reshape`` and a select over the blocks
(TILE2TRITON_BLOCK_SLICES), instead of a one-hot over every row for each lane: flash_decoding's
gqa_decode kept a [4, 128, 64] tile for it and spilled (sm_90: 255 registers, 61 STL -> 167, none)."""

import pytest
import torch
from t2t_util import assert_close, poison

import tile2triton as tilelang
import tile2triton.language as T


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def rows_of_fragment(M, N, rows, start, L, via_copy=True):
    """Each program: a ``rows`` x N fragment (x * 2 + 1), and rows start .. start + L of it out."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), O: T.Tensor((T.ceildiv(M, rows) * L, N), "float32")):
        with T.Kernel(T.ceildiv(M, rows), threads=128) as bx:
            xf = T.alloc_fragment((rows, N), "float32")
            part = T.alloc_shared((L, N), "float32")
            T.copy(X[bx * rows, 0], xf)
            for i, j in T.Parallel(rows, N):
                xf[i, j] = xf[i, j] * 2.0 + 1.0
            if via_copy:
                T.copy(xf[start : start + L, :], part)
            else:
                for i, j in T.Parallel(L, N):
                    part[i, j] = xf[i + start, j]
            T.copy(part, O[bx * L, 0])

    return main


def _reference(x, rows, start, L):
    M, N = x.shape
    blocks = -(-M // rows)
    padded = torch.zeros(blocks * rows, N, dtype=torch.float64)  # rows past M load as 0
    padded[:M] = x.double().cpu()
    padded = padded * 2 + 1
    return padded.view(blocks, rows, N)[:, start : start + L].reshape(blocks * L, N)


# (M, N, rows, start, L): prefix blocks, an offset block, rows not a power of two, an offset that is
# not a multiple of the block (the one-hot select stays)
CASES = [(70, 48, 64, 0, 4), (45, 24, 32, 8, 4), (50, 40, 48, 16, 8), (37, 20, 16, 2, 4)]


@pytest.mark.parametrize("M,N,rows,start,L", CASES)
@pytest.mark.parametrize("via_copy", [True, False])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_block_slice_read(dev, monkeypatch, M, N, rows, start, L, via_copy, switch):
    monkeypatch.setenv("TILE2TRITON_BLOCK_SLICES", switch)
    monkeypatch.setenv("TILE2TRITON_SPLIT_DIMS", "0")  # the fragment whole, as the code checks below read it
    torch.manual_seed(M * N + start)
    # a fresh jit per test: kernels are cached per argument set, and the switch is read when lowering
    kernel = tilelang.jit(rows_of_fragment)(M, N, rows, start, L, via_copy)
    x = torch.randn(M, N, device=dev)
    out = poison((-(-M // rows) * L, N), device=dev)
    kernel(x, out)
    assert_close(out, _reference(x, rows, start, L), atol=1e-6, rtol=1e-6)
    code = _code(kernel)
    padded = 1 << (rows - 1).bit_length()  # the fragment's tile rows
    blocked = f"tl.reshape(xf, ({padded // L}, {L}, " in code
    aligned = start % L == 0 and rows % L == 0
    assert blocked == (switch == "1" and aligned), code
