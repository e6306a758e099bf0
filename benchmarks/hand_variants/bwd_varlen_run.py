"""TileLang's varlen GQA backward (examples/flash_attention/example_gqa_bwd_tma_reduce_varlen's ``flashattn_bwd_split``)
at the suite's shape (1 x 32 heads x 256 tokens, 16 query heads a key head, head dims 192 / 128), four calls, at one
tiling, through real TileLang or, with ``--tile2triton``, the kernel tile2triton generates (for Nsight Compute:
bwd_varlen_ncu.sh).  ``--source DIR`` also writes the kernel's source (TileLang's CUDA or tile2triton's Triton).
tile2triton's row split (``TILE2TRITON_ROW_SPLIT_BACKWARD``, on) runs the 128-row tiling as two 64-row halves; set it
to 0 to run a tiling as written.

    python3 benchmarks/hand_variants/bwd_varlen_run.py EXAMPLES ROWS THREADS [--tile2triton] [--source DIR]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if "--tile2triton" in sys.argv:
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
import torch  # noqa: E402
from bwd_row_split_probe import build, inputs  # noqa: E402

SHAPE = ((256,), 32, 16, 192, 128, False)  # the suite's call: 64 blocks of 128 key rows

examples, rows, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
device = "cuda" if torch.cuda.is_available() else "cpu"
kernel = build("tile2triton" if "--tile2triton" in sys.argv else "tilelang", examples, SHAPE, (rows, threads))
ins, outs = inputs(SHAPE, device)
for _ in range(4):
    kernel(*ins, *outs)
if device == "cuda":
    torch.cuda.synchronize()
impl = "t2t" if "--tile2triton" in sys.argv else "tl"
print("bwd varlen ran", impl, f"{rows} rows, {threads} threads, dQ max {float(outs[0].abs().max()):.3g}")
if "--source" in sys.argv:
    folder = sys.argv[sys.argv.index("--source") + 1]
    name = f"bwd_varlen_{impl}_{rows}x{threads}.{'py' if impl == 't2t' else 'cu'}"
    with open(os.path.join(folder, name), "w") as f:
        f.write(kernel.get_kernel_source())
