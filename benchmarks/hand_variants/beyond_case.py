"""One case of a regression file (TileLang's or benchmarks/beyond_suite's) run once through real TileLang, or with
``--tile2triton`` through tile2triton: a process for Nsight Compute to profile (beyond_ncu.sh).

    PYTHONPATH=TILELANG_SITE TILELANG_EXAMPLES=CHECKOUT/examples python3 benchmarks/hand_variants/beyond_case.py FILE run_CASE
"""

import importlib.util
import sys

if "--tile2triton" in sys.argv:
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
path, case = sys.argv[1:3]
spec = importlib.util.spec_from_file_location("case", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(case, getattr(module, case)(), "ms")
