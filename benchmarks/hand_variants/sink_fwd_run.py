"""TileLang's attention-sink forward (examples/attention_sink/example_mha_sink_fwd_bhsd) at one shape, four
calls, through real TileLang or, with ``--tile2triton``, the kernel tile2triton generates (for Nsight Compute:
sink_fwd_ncu.sh).  ``--source DIR`` also writes the kernel's source (TileLang's CUDA or tile2triton's Triton).

    python3 benchmarks/hand_variants/sink_fwd_run.py EXAMPLES B H SEQ_Q SEQ_KV WINDOW|none [--tile2triton] [--source DIR]
"""

import os
import sys

if "--tile2triton" in sys.argv:
    from tile2triton.cli import install_tilelang_alias

    install_tilelang_alias()
import torch  # noqa: E402

examples, b, h, sq, skv, window = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
window = None if window == "none" else int(window)
sys.path.insert(0, os.path.join(examples, "attention_sink"))
import example_mha_sink_fwd_bhsd as example  # noqa: E402

kernel = example.flashattn(b, h, sq, skv, 128, window, block_M=128, block_N=128, num_stages=2, threads=256)
inputs = example.gen_inputs(b, h, sq, skv, 128, dtype=torch.float16)
for _ in range(4):
    out = kernel(*inputs)
torch.cuda.synchronize()
ref = example.ref_program(*inputs, window, dtype=torch.float16)
print(
    "sink ran", "tile2triton" if "--tile2triton" in sys.argv else "tilelang", "max err", float((out - ref).abs().max())
)
if "--source" in sys.argv:
    folder = sys.argv[sys.argv.index("--source") + 1]
    impl = "t2t" if "--tile2triton" in sys.argv else "tl"
    name = f"sink_{impl}_{b}x{h}_{sq}_{skv}_w{window}.{'py' if impl == 't2t' else 'cu'}"
    with open(os.path.join(folder, name), "w") as f:
        f.write(kernel.get_kernel_source())
