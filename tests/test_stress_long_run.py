"""Long runs: host memory stays bounded over many launches of one kernel (CI runs a few thousand on
the interpreter; `T2T_LONG_RUN=100000` runs the documented long run)."""

import os

import torch
from stress_kernels import scale_add

DEVICE = os.environ.get("TILE2TRITON_TEST_DEVICE", "cpu")
LAUNCHES = int(os.environ.get("T2T_LONG_RUN", "2000"))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_host_memory_is_bounded_over_many_launches():
    kernel = scale_add(0)
    a, b = torch.randn(100, device=DEVICE), torch.randn(100, device=DEVICE)
    for _ in range(300):  # warm-up: compile, caches, allocator pools
        out = kernel(a, b)
    before = _rss_bytes()
    for _ in range(LAUNCHES):
        out = kernel(a, b)
    grown = _rss_bytes() - before
    torch.testing.assert_close(out, 2 * a + b)
    assert grown < 0.05 * before, (
        f"RSS grew {grown / 2**20:.1f} MiB over {LAUNCHES} launches ({before / 2**20:.0f} MiB)"
    )


COMPILES = int(os.environ.get("T2T_LONG_COMPILES", "40"))


def test_host_memory_per_compiled_variant_is_bounded():
    """Distinct static variants (each a new prim_func, Triton module and launcher): what one more
    variant costs stays flat, so compiles do not leak beyond the kernels the caches keep
    (`T2T_LONG_COMPILES=1000` for the long run)."""
    from stress_kernels import row_sum

    x = torch.randn(8, 24, device=DEVICE)
    for m in range(1, 6):  # warm-up: the first compiles load Triton's and tile2triton's code
        row_sum(m, 24)(x[:m])
    before = _rss_bytes()
    for k in range(COMPILES):
        m = 6 + k
        xs = torch.randn(m, 24, device=DEVICE)
        torch.testing.assert_close(row_sum(m, 24)(xs), xs.sum(1), atol=1e-4, rtol=1e-4)
    per_variant = (_rss_bytes() - before) / COMPILES
    assert per_variant < 2 * 2**20, f"{per_variant / 2**10:.0f} KiB of RSS per compiled variant"
