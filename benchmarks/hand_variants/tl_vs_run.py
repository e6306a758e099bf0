"""The vertical-slash kernel at the suite's shape, four calls (for Nsight Compute: ncu_sources.sh,
vs_ncu.sh): real TileLang's, or with ``--tile2triton`` the kernel tile2triton generates now."""

import sys

if "--tile2triton" in sys.argv:
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
sys.path.insert(0, ".tlx/examples/minference")
import example_vertical_slash_sparse_attn as example  # noqa: E402

example.do_bench = lambda f, **kw: [f() for _ in range(4)]
example.run_regression_perf()
print("vs ran", "tile2triton" if "--tile2triton" in sys.argv else "tilelang")
