"""A vector atomic in a 2-D T.Parallel as one lane axis (codegen/local_loops._fused_lane_axis).

``T.atomic_addx4(dst[r, c0 + j * 4], src[r, j * 4])`` over ``T.Parallel(rows, n)`` adds the
elements ``c0 + m`` for ``m < 4 n`` of each row.  Where j and the lanes' loop k appear only as
``4 * j + k`` the generated atomic is one 2-D tile over those 4 n columns (contiguous, what Triton
coalesces into whole sectors); otherwise (a stride other than the vector's, a padded lane axis) the
trailing axis stays.  Every kernel runs under the interpreter (or CUDA) against a float64 torch
reference, rows gathered through an index list with a repeated and an out-of-range row."""

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def scatter_rows(N, R, C, C0, stride, lanes=4):
    """dst[Idx[r], C0 + j * stride + k] += src[r, j * lanes + k] for k < lanes, j < C // lanes."""
    add = T.atomic_addx4 if lanes == 4 else T.atomic_addx2
    width = C0 + (C // lanes - 1) * stride + lanes

    @T.prim_func
    def main(
        Src: T.Tensor((R, C), "float32"),
        Idx: T.Tensor((R,), "int32"),
        Dst: T.Tensor((N, width), "float32"),
    ):
        with T.Kernel(1, threads=128):
            acc = T.alloc_fragment((R, C), "float32")
            for r, c in T.Parallel(R, C):
                acc[r, c] = Src[r, c] * 3
            for r, j in T.Parallel(R, C // lanes):
                add(Dst[Idx[r], C0 + j * stride], acc[r, j * lanes])

    return main, width


def _reference(src, idx, base, C0, stride, lanes):
    out = base.double().clone()
    keep = (idx >= 0) & (idx < base.shape[0])
    for r in range(src.shape[0]):
        if not keep[r]:
            continue
        for j in range(src.shape[1] // lanes):
            cols = slice(C0 + j * stride, C0 + j * stride + lanes)
            out[idx[r], cols] += src[r, j * lanes : (j + 1) * lanes].double() * 3
    return out


def _run(N, R, C, C0, stride, lanes=4):
    torch.manual_seed(0)
    prim, width = scatter_rows(N, R, C, C0, stride, lanes)
    kernel = tilelang.compile(prim)
    src = torch.randn(R, C, device=DEV)
    idx = torch.randint(0, N, (R,), dtype=torch.int32, device=DEV)
    idx[1] = idx[0]  # two rows add into one
    idx[-1] = N + 2  # out of range: masked off
    base = torch.randn(N, width, device=DEV)
    dst = base.clone()
    kernel(src, idx, dst)
    assert_close(dst.cpu(), _reference(src.cpu(), idx.cpu(), base.cpu(), C0, stride, lanes), 1e-5, 1e-5)
    return "\n".join(line for line in kernel.get_kernel_source().splitlines() if not line.strip().startswith("#"))


@pytest.mark.parametrize("R, C, C0, lanes", [(23, 64, 0, 4), (13, 32, 40, 4), (7, 16, 9, 2)])
def test_vector_atomic_is_one_lane_axis(R, C, C0, lanes):
    src = _run(N=29, R=R, C=C, C0=C0, stride=lanes, lanes=lanes)
    atomic = next(line for line in src.splitlines() if "tl.atomic_add(" in line)
    assert "tl.reshape" not in atomic  # the accumulator as it is, not a [rows, n, lanes] view
    assert f"tl.arange(0, {C})[None, :]" in src and "[:, :, None]" not in src


@pytest.mark.parametrize("R, C, C0, stride", [(23, 64, 0, 8), (11, 48, 5, 4)])
def test_other_strides_and_padded_lanes_keep_the_trailing_axis(R, C, C0, stride):
    # stride 8: the columns are not one run; C // 4 = 12 lanes padded to 16: not one axis of 48
    src = _run(N=29, R=R, C=C, C0=C0, stride=stride)
    assert "[:, :, None]" in src
