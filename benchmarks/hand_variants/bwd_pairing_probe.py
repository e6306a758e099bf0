"""GPU probe (issue 23, session 59): is the causal attention backward's gap how its blocks share the SMs?

TileLang's example_mha_bwd_bshd ``flashattn_bwd``, causal, head dim 64, 2 x 8 x 1024 (block 64 x 64; 0.76x of
TileLang in every run since session 38).  Its grid (8 heads x 16 key tiles x 2 batches = 256 blocks) fits the
H100's 132 SMs at two blocks an SM all at once, and block ``by`` walks ``16 - by`` query tiles.  If the GPU hands
out blocks round-robin (block ``j`` and ``j + 132`` to one SM), launch order puts the heaviest blocks of both
batches on the same SMs: SMs 0-3 get two 16-tile blocks while the others average 8.2 tiles each.

Text edits of the generated kernel, each a bijection of the grid (the blocks ranked heaviest first, ``rank``
mapped back to ``bx, by, bz``), timed with do_bench (median, L2 flushed):

- ``base``: as generated (launch order);
- ``snake``: the first 132 launch slots take ranks 0-131, the rest ranks from the lightest up, so an SM holding
  block ``j`` and ``j + 132`` gets one heavy and one light block (round-robin dispatch);
- ``pairs``: launch slots ``2i`` and ``2i + 1`` take ranks ``i`` and ``N - 1 - i`` (an SM filled to two blocks before
  the next: depth-first dispatch);
- ``lightfirst``: ranks in reverse (the lightest first).

Then ``where``: the base kernel once more with each block's SM (``%smid``) and its start and end
(``%globaltimer``, ns) stored, printed as the SM of each launch slot and, per SM, its blocks' tiles and end.
dK, dV of each variant are compared with ``base``'s.  From the project root on the GPU machine:

    PYTHONPATH=. python3 benchmarks/hand_variants/bwd_pairing_probe.py .tlx/examples
"""

import os
import re
import sys

# the base is launch order: the snake order (on since this probe) would already be in the generated kernel
os.environ.setdefault("TILE2TRITON_SNAKE_ORDER", "0")

import torch

B, H, N, D, BLOCK = 2, 8, 1024, 64, 64
TILES = N // BLOCK
BLOCKS = H * TILES * B

PIDS = re.compile(r"(\s*)bx = tl\.program_id\(0\)\n\s*by = tl\.program_id\(1\)\n\s*bz = tl\.program_id\(2\)\n")


def remapped(src: str, rank_expr: str) -> str:
    """The kernel with its block indices taken from ``rank`` (heaviest first: ``by`` ascending), ``rank`` an
    expression of the launch slot ``slot``."""

    def repl(m):
        pad = m.group(1).lstrip("\n")
        lines = [
            f"slot = tl.program_id(0) + {H} * tl.program_id(1) + {H * TILES} * tl.program_id(2)",
            f"rank = {rank_expr}",
            f"by = rank // {H * B}",
            f"bx = rank % {H}",
            f"bz = rank // {H} % {B}",
        ]
        return "\n" + "".join(f"{pad}{line}\n" for line in lines)

    out, n = PIDS.subn(repl, src)
    assert n == 1, "the kernel's block indices were not found"
    return out


def with_timeline(src: str) -> str:
    """``base`` storing each block's SM, start and end (ns) at its launch slot in the extra ``Where`` argument."""
    src = src.replace("def flash_bwd_kernel(Q,", "def flash_bwd_kernel(Where, Q,", 1)
    m = PIDS.search(src)
    pad = m.group(1).lstrip("\n")
    probe = (
        f"{pad}slot = tl.program_id(0) + {H} * tl.program_id(1) + {H * TILES} * tl.program_id(2)\n"
        f'{pad}t_start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)\n'
        f'{pad}sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)\n'
    )
    src = src[: m.end()] + probe + src[m.end() :]
    # the end: after the last store of the kernel
    last = src.rstrip().rsplit("\n", 1)
    end = (
        f'\n{pad}t_end = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)\n'
        f"{pad}tl.store(Where + slot * 3, sm.to(tl.int64))\n"
        f"{pad}tl.store(Where + slot * 3 + 1, t_start)\n"
        f"{pad}tl.store(Where + slot * 3 + 2, t_end)\n"
    )
    return last[0] + "\n" + last[1] + end


def variants(src: str) -> dict:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    snake = f"tl.where(slot < {sms}, slot, {BLOCKS - 1} - (slot - {sms}))"
    pairs = f"tl.where(slot % 2 == 0, slot // 2, {BLOCKS - 1} - slot // 2)"
    return {
        "base": src,
        "snake": remapped(src, snake),
        "pairs": remapped(src, pairs),
        "lightfirst": remapped(src, f"{BLOCKS - 1} - slot"),
    }


def main(examples: str) -> None:
    from bwd_causal_variants import built, time_variants
    from variant_tools import kernel_from_source

    args, module, launch, descs = built(examples)
    time_variants(variants(module.source), "bwd_pairing", args, launch, descs, repeats=2)
    grid = (H, TILES, B)
    try:
        fn = kernel_from_source(with_timeline(module.source), "bwd_pairing_where", launch.name)
        where = torch.zeros(BLOCKS * 3, dtype=torch.int64, device="cuda")
        for _ in range(3):  # the last of three calls (warm)
            fn[grid](where, *args, *descs, num_warps=launch.num_warps)
        torch.cuda.synchronize()
        w = where.view(BLOCKS, 3).cpu()
        t0 = w[:, 1].min().item()
        print("SM of launch slots 0-31:", w[:32, 0].tolist())
        print("SM of launch slots 132-163:", w[132:164, 0].tolist())
        per_sm = {}
        for slot in range(BLOCKS):
            by = slot // H % TILES
            per_sm.setdefault(int(w[slot, 0]), []).append(
                (TILES - by, (w[slot, 1] - t0) / 1000, (w[slot, 2] - t0) / 1000)
            )
        loads = sorted(
            ((sum(t for t, _, _ in b), max(e for _, _, e in b), sm, b) for sm, b in per_sm.items()), reverse=True
        )
        print(f"SMs used {len(per_sm)}; kernel span {(w[:, 2].max() - t0).item() / 1000:.2f} us")
        for tiles, end, sm, b in loads[:6] + loads[-3:]:
            desc = ", ".join(f"{t} tiles {s:.1f}-{e:.1f}" for t, s, e in b)
            print(f"  SM {sm:3d}: {tiles:3d} tiles, ends {end:6.2f} us: {desc}")
    except Exception as e:  # noqa: BLE001
        print(f"where failed: {type(e).__name__}: {str(e)[:300]}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(sys.argv[1])
