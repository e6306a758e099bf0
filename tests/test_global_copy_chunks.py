"""TILE2TRITON_GLOBAL_COPY_CHUNKS (passes/global_copy_chunks.py): a global-to-global T.copy larger than the
block holds in registers runs as a loop of exact parts of its region (a non-power-of-two dim cut into its
powers of two first), with the region's own bounds: rows past the tensor's end stay masked, nothing outside
the region is written.  Each kernel runs under the interpreter (or CUDA) against torch; outputs start as NaN
(the region's copy must fill every element it covers) or as a sentinel outside the region."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.passes.global_copy_chunks import chunk_global_copies

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def postprocess(rows, width, block, threads=128):
    """A sparse MLA backward's postprocess: fp32 -> fp16 rows of ``width`` columns, ``block`` rows a program,
    the last block partial; the copy writes columns 1 .. width of a (width + 2)-column output."""

    @T.prim_func
    def main(A: T.Tensor((rows, width), "float32"), B: T.Tensor((rows, width + 2), "float16")):
        with T.Kernel(T.ceildiv(rows, block), threads=threads) as bx:
            T.copy(A[bx * block : (bx + 1) * block, :], B[bx * block : (bx + 1) * block, 1 : width + 1])

    return main


@pytest.mark.parametrize(
    "rows, width, block",
    [
        (150, 144, 40),  # 144 = 128 + 16: two parts, each whole (64 x 128 padded: 64 elements a thread)
        (75, 200, 48),  # 200 has parts below 16: kept whole, 16-row chunks of 256 padded columns
        (37, 96, 64),  # 64 x 128 padded fits: copied as written
    ],
)
def test_global_copy_matches_torch(rows, width, block):
    kernel = tilelang.compile(postprocess(rows, width, block))
    a = torch.randn(rows, width, device=DEV)
    b = torch.full((rows, width + 2), float("nan"), device=DEV, dtype=torch.float16)
    b[:, 0] = 7.0
    b[:, -1] = -7.0
    kernel(a, b)
    torch.testing.assert_close(b[:, 1:-1].float(), a.half().float(), rtol=0, atol=0)
    assert (b[:, 0] == 7.0).all() and (b[:, -1] == -7.0).all()  # outside the region: untouched


def _copies_and_loops(rows, width, block):
    func = tilelang.compile(postprocess(rows, width, block)).prim_func
    (kernel,) = func.kernels
    body = chunk_global_copies(kernel, warps=4).body
    from tile2triton import ir

    stmts = list(ir.walk(body))
    return [s for s in stmts if isinstance(s, ir.Copy)], [s for s in stmts if isinstance(s, ir.For)]


def test_parts_and_chunks():
    copies, loops = _copies_and_loops(150, 144, 40)
    assert [c.src.extents for c in copies] == [(40, 128), (40, 16)] and not loops  # two parts, each fits
    copies, loops = _copies_and_loops(75, 200, 48)
    assert [c.src.extents for c in copies] == [(16, 200)]  # no parts of 16 or more: 256 padded columns
    assert [lp.stop.value for lp in loops] == [3]  # 16 rows a chunk: 16 x 256 within 64 a thread of 128
    copies, loops = _copies_and_loops(37, 96, 64)
    assert len(copies) == 1 and not loops  # fits: as written


def test_switch_off_keeps_the_tile(monkeypatch):
    monkeypatch.setenv("TILE2TRITON_GLOBAL_COPY_CHUNKS", "0")
    source = tilelang.compile(postprocess(150, 144, 40)).get_kernel_source()
    assert source.count("tl.store(") == 1
    monkeypatch.delenv("TILE2TRITON_GLOBAL_COPY_CHUNKS")
    assert tilelang.compile(postprocess(150, 144, 40)).get_kernel_source().count("tl.store(") == 2


def test_within_one_tensor_kept_whole():
    """Regions of one tensor may overlap: the copy stays one tile, every element read before any is written."""

    @T.prim_func
    def main(A: T.Tensor((200, 300), "float32")):
        with T.Kernel(1, threads=128) as bx:
            T.copy(A[bx * 64 : bx * 64 + 64, :], A[bx * 64 + 32 : bx * 64 + 96, :])

    (kernel,) = tilelang.compile(main).prim_func.kernels
    assert chunk_global_copies(kernel, warps=4) is kernel
    a = torch.randn(200, 300, device=DEV)
    want = a.clone()
    want[32:96] = a[0:64]
    tilelang.compile(main)(a)
    torch.testing.assert_close(a, want, rtol=0, atol=0)
