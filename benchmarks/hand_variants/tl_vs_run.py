"""Real TileLang's vertical-slash kernel at the suite's shape, four calls (for ncu_sources.sh)."""

import sys

sys.path.insert(0, ".tlx/examples/minference")
import example_vertical_slash_sparse_attn as example  # noqa: E402

example.do_bench = lambda f, **kw: [f() for _ in range(4)]
example.run_regression_perf()
print("tilelang vs ran")
