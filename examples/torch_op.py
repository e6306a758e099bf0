"""A TileLang kernel as a PyTorch custom op: eager, torch.compile(fullgraph=True), autograd, opcheck.

On a CUDA machine the op is a torch.library.triton_op (Inductor sees the Triton kernel);
without CUDA it runs under Triton's interpreter as a torch.library.custom_op.

Run: python examples/torch_op.py
"""
import torch

import tile2triton
import tile2triton as tilelang
import tile2triton.language as T

M = T.dynamic("M")  # rows come from the input at run time


@tilelang.jit(out_idx=[-1])
def scale_rows(N, block_M=16):
    """B[i, j] = A[i, j] * w[j]  (a row-broadcast multiply, any number of rows)."""

    @T.prim_func
    def main(A: T.Tensor[(M, N), T.float32], w: T.Tensor[(N,), T.float32], B: T.Tensor[(M, N), T.float32]):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            for i, j in T.Parallel(block_M, N):
                B[bx * block_M + i, j] = A[bx * block_M + i, j] * w[j]

    return main


def setup_context(ctx, inputs, output):
    a, w = inputs
    ctx.save_for_backward(a, w)


def backward(ctx, grad):
    a, w = ctx.saved_tensors
    return grad * w, (grad * a).sum(0)


# torch.ops.t2t_example.scale_rows(A, w) -> B
scale_rows_op = tile2triton.register_op(
    "t2t_example::scale_rows", scale_rows(24), backward=backward, setup_context=setup_context
)


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(50, 24, device=device)
    w = torch.randn(24, device=device)

    out = torch.ops.t2t_example.scale_rows(a, w)  # eager
    torch.testing.assert_close(out, a * w)

    @torch.compile(fullgraph=True)
    def layer(x, w):
        return torch.ops.t2t_example.scale_rows(x, w).relu().sum(dim=1)

    torch.testing.assert_close(layer(a, w), (a * w).relu().sum(dim=1))

    a.requires_grad_(True)
    w.requires_grad_(True)
    scale_rows_op(a, w).pow(2).sum().backward()
    a2, w2 = a.detach().clone().requires_grad_(True), w.detach().clone().requires_grad_(True)
    (a2 * w2).pow(2).sum().backward()
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(w.grad, w2.grad)

    torch.library.opcheck(torch.ops.t2t_example.scale_rows.default, (a.detach(), w.detach()))
    print(torch.ops.t2t_example.scale_rows.default._schema)
    print("ok: eager, torch.compile(fullgraph=True), autograd and opcheck on", device)


if __name__ == "__main__":
    main()
