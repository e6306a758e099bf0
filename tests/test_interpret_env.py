"""A process that sets TRITON_INTERPRET=1 itself: repeated tile2triton calls and plain Triton
kernels interpreted after them keep working (Triton's library flavour is restored to the one
the process asked for, not to the compiler's)."""

import os
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton, triton.language as tl
    import tile2triton as tilelang, tile2triton.language as T

    @tilelang.jit(out_idx=[-1])
    def rowsum(M, N):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
            with T.Kernel(M, threads=128) as bx:
                acc = T.alloc_fragment((1,), "float32")
                T.clear(acc)
                for j in T.serial(N):
                    acc[0] += A[bx, j]
                C[bx] = acc[0]
        return main

    @triton.jit
    def plain(X, Y):
        i = tl.arange(0, 8)
        tl.store(Y + i, tl.sum(tl.load(X + i)) + tl.zeros([8], tl.float32))

    k = rowsum(5, 7)
    a = torch.randn(5, 7)
    for _ in range(3):
        torch.testing.assert_close(k(a), a.sum(1))
    x, y = torch.randn(8), torch.full((8,), float("nan"))
    plain[(1,)](x, y)
    torch.testing.assert_close(y, x.sum().expand(8))
    print("ok")
    """
)


def test_process_wide_triton_interpret(tmp_path):
    script = tmp_path / "interpret_env.py"  # kernels need a source file
    script.write_text(_SCRIPT)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")
