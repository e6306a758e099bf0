"""Kernels that synchronise inside a block, launched once each on the GPU, for compute-sanitizer's
racecheck and synccheck (tools/gpu_sanitize.sh): thread-view kernels exchanging through shared memory,
a warp-specialized producer/consumer ring (T.alloc_barrier sections), and both Gluon attention
routes (row split: flash attention; column split: MLA decode) at shapes they take on sm_90.

    compute-sanitizer --tool racecheck python3 tools/sanitize_kernels.py [NAME ...]
"""

import sys

import torch

sys.path.insert(0, "tests")
from test_gluon_attention import attention  # noqa: E402
from test_gluon_fullcol import DIM, PE_DIM, mla_decode  # noqa: E402
from test_thread_view import shared_reverse, stencil, tree_sum  # noqa: E402
from test_warp_sections import ring_sum, ring_sum_ref  # noqa: E402

import tile2triton  # noqa: E402


def thread_view():
    a = torch.randn(384, device="cuda")
    b = torch.empty_like(a)
    shared_reverse(384, 128)(a, b)
    assert torch.equal(b.cpu(), a.cpu().view(-1, 128).flip(1).reshape(-1))
    m = torch.randn(5, 300, device="cuda")
    torch.testing.assert_close(tree_sum(5, 300, 128)(m).cpu().double(), m.cpu().double().sum(1), atol=1e-4, rtol=1e-5)
    s = torch.empty(200, device="cuda")
    stencil(200, 64)(torch.randn(200, device="cuda"), s)


def warp_sections():
    a = torch.randn(6, 700, device="cuda")
    torch.testing.assert_close(ring_sum(6, 700, 2)(a).cpu().double(), ring_sum_ref(a), atol=1e-3, rtol=1e-4)


def gluon_rows():
    kernel = tile2triton.compile(attention(1, 2, 300, 128, True, "bshd"), out_idx=[3])
    assert kernel.get_kernel_source().startswith("# Gluon"), "the row-split route was not taken"
    q, k, v = (torch.randn(1, 300, 2, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    kernel(q, k, v, torch.zeros(300, device="cuda"))


def gluon_columns():
    kernel = tile2triton.compile(mla_decode(1, 64, 200))
    assert kernel.get_kernel_source().startswith("# Gluon"), "the column-split route was not taken"
    shapes = ((1, 64, DIM), (1, 64, PE_DIM), (1, 200, 1, DIM), (1, 200, 1, PE_DIM), (1, 64, DIM))
    kernel(*(torch.randn(s, device="cuda", dtype=torch.float16) for s in shapes))


CASES = {
    "thread_view": thread_view,
    "warp_sections": warp_sections,
    "gluon_rows": gluon_rows,
    "gluon_columns": gluon_columns,
}

if __name__ == "__main__":
    for name in sys.argv[1:] or CASES:
        CASES[name]()
        torch.cuda.synchronize()
        print("ran", name, flush=True)
