"""T.use_swizzle remaps block indices (TileLang's rasterization): every block must still be visited once."""

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T


@tilelang.jit
def visit_count(gx, gy, panel, order):
    @T.prim_func
    def main(C: T.Tensor((gy, gx), "int32")):
        with T.Kernel(gx, gy, threads=32) as (bx, by):
            T.use_swizzle(panel, order=order)
            T.atomic_add(C[by, bx], 1)

    return main


@pytest.mark.parametrize(
    "gx, gy, panel, order", [(5, 7, 3, "row"), (6, 4, 4, "row"), (5, 7, 2, "column"), (3, 3, 8, "row")]
)
def test_swizzle_visits_every_block_once(dev, gx, gy, panel, order):
    counts = torch.zeros(gy, gx, dtype=torch.int32, device=dev)
    visit_count(gx, gy, panel, order)(counts)
    assert torch.equal(counts.cpu(), torch.ones(gy, gx, dtype=torch.int32))


def test_swizzle_is_in_the_generated_code():
    src = visit_count(5, 7, 3, "row").get_kernel_source(interpret=False)
    assert "panel_idx = block_idx // (3 * 5)" in src
