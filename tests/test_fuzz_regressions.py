"""Minimal programs for the open tile2triton bugs the grammar fuzzer found (tile2triton/oracle/fuzz.py).

Each is ``xfail(strict=True)`` while its bug is open, and named after its entry in
``tile2triton.oracle.fuzz.KNOWN_ISSUES`` (the generator redraws programs that would hit it).
With the fix, pytest reports XPASS as a failure: remove the marker and the KNOWN_ISSUES entry
together.  Each test checks tile2triton against the reference executor and against torch.
"""

import os
import pathlib
import subprocess
import sys

import pytest
import torch
from t2t_util import assert_close

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import ir
from tile2triton.oracle import reference

ROOT = pathlib.Path(__file__).resolve().parent.parent
_TRITON_DTYPE = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "bool": "i1",
                 "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e8m0fnu": "u8",
                 "float4_e2m1fn": "u8", "int4": "i8", "uint4": "u8"}  # fmt: skip


def compile_for_hopper(kernel, tmp_path) -> None:
    """Compile the kernel's GPU source (not the interpreter's) for sm_90 without a GPU, with
    tools/compile_check.py: Triton's type checks (loop-carried types, tl.dot's operand shapes) run
    there and not under the interpreter.  In a fresh process: the interpreter patches triton.language."""
    module = kernel.lowered(False)
    sigs = []
    for launch in module.launches:
        parts = []
        for a in launch.args:
            name = _TRITON_DTYPE.get(a.dtype.name, a.dtype.name.replace("uint", "u").replace("int", "i"))
            parts.append(f"{a.name}=*{name}" if isinstance(a, ir.Buffer) else f"{a.name}={name}")
        for desc, index, box in launch.host_descriptors:  # on a GPU with TMA: descriptors made on the host
            element = parts[index].split("=*", 1)[1]
            parts.append(f"{desc}=tensordesc<{element}[{','.join(str(e) for e in box)}]>")
        if launch.scratch_bytes:
            parts.append(f"{launch.scratch_param}=*u8")
        sigs.append(f"# sig {launch.name}: {' '.join(parts)}")
    path = tmp_path / "gpu_source.py"
    path.write_text(module.source + "\n" + "\n".join(sigs) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_check.py"), str(path)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------ block_cond_in_parallel
@tilelang.jit(out_idx=[-1])
def parity_of_block(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx % 2 == 1:  # block-uniform condition inside T.Parallel
                    C[bx * block + i] = A[bx * block + i]
                else:
                    C[bx * block + i] = -A[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1])
def guarded_rows(M, N, rows):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, rows), threads=128) as bx:
            for i in T.serial(rows):
                if bx * rows + i < M:  # a serial loop's row guard around T.Parallel
                    for j in T.Parallel(N):
                        C[bx * rows + i, j] = A[bx * rows + i, j] * 2.0

    return main


@tilelang.jit(out_idx=[-1])
def row_sums_dynamic(rows):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((12, N), "float32"), C: T.Tensor((12,), "float32")):
        with T.Kernel(12 // rows, threads=128) as bx:
            R = T.alloc_fragment((rows,), "float32")
            T.fill(R, 0.5)
            for k in range(N):
                for i in T.Parallel(rows):
                    R[i] += A[bx * rows + i, k]  # rows always in bounds: the load's mask is `k < N`
            T.copy(R, C[bx * rows])

    return main


def test_lane_independent_load_mask_interpreter():
    a = torch.randn(12, 37)
    kernel = row_sums_dynamic(4)
    assert_close(kernel(a), a.double().sum(1) + 0.5, 1e-5, 1e-5)


def test_row_guard_of_a_serial_loop_around_parallel_interpreter():
    a = torch.randn(7, 8)  # a power-of-two row: the mask is the row guard alone
    kernel = guarded_rows(7, 8, 3)
    assert_close(kernel(a), a.double() * 2, 0, 0)
    assert reference.compare(kernel, a.cpu()).ok  # the reference executor runs on the CPU


def test_block_condition_inside_parallel_interpreter():
    a = torch.randn(21)
    kernel = parity_of_block(21, 8)
    out = kernel(a)
    sign = torch.tensor([-1.0 if (k // 8) % 2 == 0 else 1.0 for k in range(21)])
    assert_close(out, a.double() * sign, 0, 0)
    assert reference.compare(kernel, a.cpu()).ok  # the reference executor runs on the CPU


# ------------------------------------------------------------------ scan_unit_dim
@tilelang.jit(out_idx=[-1])
def scan_tile(R, C_, dim, op):
    @T.prim_func
    def main(A: T.Tensor((R, C_), "float32"), C: T.Tensor((R, C_), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((R, C_), "float32")
            T.copy(A[0, 0], F)
            if op == "sum":
                T.cumsum(F, dim=dim)
            else:
                T.cummax(F, dim=dim)
            T.copy(F, C[0, 0])

    return main


@pytest.mark.parametrize(
    "shape, dim", [((1, 20), 0), ((1, 20), 1), ((20, 1), 0), ((20, 1), 1)], ids=["1x20-d0", "1x20-d1", "20x1-d0", "20x1-d1"]
)
@pytest.mark.parametrize("op", ["sum", "max"])
def test_scan_of_a_tile_with_a_unit_dim(dev, shape, dim, op):
    a = torch.randn(*shape, device=dev)
    kernel = scan_tile(*shape, dim, op)
    out = kernel(a)
    ref = a.double().cumsum(dim) if op == "sum" else a.double().cummax(dim).values
    assert_close(out, ref, 1e-5, 1e-5)


# ------------------------------------------------------------------ one_lane_guarded_sum
@tilelang.jit(out_idx=[-1])
def row_sums_one_row_per_block():
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, 9), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=128) as bx:
            R = T.alloc_fragment((1,), "float32")
            T.fill(R, 0.5)
            for i in T.Parallel(1):
                for k in range(9):
                    if bx + i < M:  # a guard that value ranges cannot decide (M is dynamic)
                        R[i] += A[bx + i, k]
            T.copy(R, C[bx])

    return main


def test_guarded_sum_into_a_one_element_fragment(dev, tmp_path):
    """A one-element fragment is a scalar (tl.full([], ...)): the guarded update's (1,)-shaped lane
    condition is reduced to a scalar too, or the loop-carried R turns into a block."""
    a = torch.randn(7, 9, device=dev)
    kernel = row_sums_one_row_per_block()
    assert_close(kernel(a), a.double().sum(1) + 0.5, 1e-5, 1e-5)
    compile_for_hopper(kernel, tmp_path)


# ------------------------------------------------------------------ onehot_numel
@tilelang.jit(out_idx=[-1])
def copy_into_an_offset_tile(M, N, bm, bn, pad, scope):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            if scope == "fragment":
                X = T.alloc_fragment((bm + pad, bn + pad), "float32")
            else:
                X = T.alloc_shared((bm + pad, bn + pad), "float32")
            T.clear(X)
            T.copy(A[by * bm, bx * bn], X[pad : bm + pad, pad : bn + pad])
            T.copy(X[pad : bm + pad, pad : bn + pad], C[by * bm, bx * bn])

    return main


def test_copy_into_an_offset_region_of_a_fragment(dev, tmp_path):
    """Written and read one dim at a time (codegen/registers.py separable_write/separable_read): a
    one-hot of (destination numel x source numel), 2048 x 1024, was past Triton's 2**20 limit."""
    a = torch.randn(50, 70, device=dev)
    kernel = copy_into_an_offset_tile(50, 70, 24, 32, 2, "fragment")
    assert_close(kernel(a), a, 0, 0)
    compile_for_hopper(kernel, tmp_path)


def test_copy_into_an_offset_region_of_a_large_fragment(dev, tmp_path):
    """Fuzz seed 20282912 (H200 run against TileLang): a 256 x 16 copy into a (259, 19) fragment.
    Even one dim at a time the one-hot is 4096 lanes x 512 rows, past Triton's 2**20 elements: the
    fragment moves to scratch like a shared buffer (codegen/scratch.py check_one_hot)."""
    a = torch.randn(300, 40, device=dev)
    kernel = copy_into_an_offset_tile(300, 40, 256, 16, 3, "fragment")
    assert "scratch" in kernel.get_kernel_source()
    assert_close(kernel(a), a, 0, 0)
    compile_for_hopper(kernel, tmp_path)


def test_copy_into_an_offset_region_of_a_shared_tile(dev):
    """The same copy into shared memory works (it is not kept in registers)."""
    a = torch.randn(50, 70, device=dev)
    out = copy_into_an_offset_tile(50, 70, 24, 32, 2, "shared")(a)
    assert_close(out, a, 0, 0)


# ------------------------------------------------------------------ GPU fuzz seeds (H200 run)
@tilelang.jit(out_idx=[-1])
def shift_through_offset_fragment(M, N, bm, bn, dtype):
    """Fuzz seed 20261788: a copy into an offset region of a 16-bit fragment, then a serial loop
    that re-assigns another fragment from it."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            X = T.alloc_fragment((bm, bn + 1), dtype)
            Y = T.alloc_fragment((bm, bn), dtype)
            T.fill(X, 0.75)
            T.copy(A[by * bm : by * bm + bm, bx * bn : bx * bn + bn], X[0:bm, 1 : bn + 1])
            for i in T.serial(bm):
                for j in range(bn):
                    Y[i, j] = X[i, j + 1]
            T.copy(Y, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_fragment_keeps_its_type_in_a_loop(dev, dtype, tmp_path):
    """tl.max widens fp16/bf16 to fp32: the scatter into the offset region must narrow back, or the
    fragment re-assigned in the loop changes type and Triton rejects the GPU source."""
    a = torch.randn(30, 13, device=dev).to(getattr(torch, dtype))
    kernel = shift_through_offset_fragment(30, 13, 28, 4, dtype)
    assert_close(kernel(a), a.double(), 0, 0)
    compile_for_hopper(kernel, tmp_path)


@tilelang.jit(out_idx=[-1])
def int8_gemm(M, N, K, bm, bn, bk, trans_a):
    """Fuzz seeds 20262084 and 20261413: an int8 GEMM whose K tile (16) is below tl.dot's least K
    for 8-bit operands on the GPU (32)."""
    a_shape = (K, M) if trans_a else (M, K)

    @T.prim_func
    def main(A: T.Tensor(a_shape, "int8"), B: T.Tensor((K, N), "int8"), C: T.Tensor((M, N), "int32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bk, bm) if trans_a else (bm, bk), "int8")
            Bs = T.alloc_shared((bk, bn), "int8")
            Cf = T.alloc_fragment((bm, bn), "int32")
            T.fill(Cf, 3)
            for ko in T.serial(T.ceildiv(K, bk)):
                if trans_a:
                    T.copy(A[ko * bk, by * bm], As)
                else:
                    T.copy(A[by * bm, ko * bk], As)
                T.copy(B[ko * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cf, transpose_A=trans_a)
            T.copy(Cf, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("trans_a", [False, True], ids=["nn", "tn"])
def test_int8_gemm_with_a_k_tile_below_32(dev, trans_a, tmp_path):
    M, N, K = 50, 22, 70
    a = torch.randint(-100, 100, (K, M) if trans_a else (M, K), dtype=torch.int8, device=dev)
    b = torch.randint(-100, 100, (K, N), dtype=torch.int8, device=dev)
    kernel = int8_gemm(M, N, K, 48, 16, 16, trans_a)
    a_mk = a.T if trans_a else a
    assert_close(kernel(a, b), a_mk.double() @ b.double() + 3, 0, 0)
    compile_for_hopper(kernel, tmp_path)


@tilelang.jit(out_idx=[-1])
def tanh_below_x(N, block):
    """Fuzz seed 20262086: ``v if T.tanh(v) <= v`` decides on tanh's last bits for small v."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                v = A[bx * block + i]
                C[bx * block + i] = T.if_then_else(T.tanh(v) <= v, 0.0, T.tanh(v))

    return main


def test_tanh_is_accurate_near_zero(dev):
    """2 * sigmoid(2x) - 1 cancels for small x (relative error ~1e-5 at x = 1e-3).  tanh(v) > v for
    every v < 0 (by >= 25 fp32 ulps for these magnitudes), so each negative v gives tanh(v), to a
    few ulps, and each positive v gives 0."""
    mag = torch.logspace(-2.5, 0.5, 150, dtype=torch.float64)
    a = torch.cat([-mag, mag]).float().to(dev)
    kernel = tanh_below_x(300, 64)
    ref = a.double().tanh()
    ref = torch.where(ref <= a.double(), torch.zeros_like(ref), ref)
    assert_close(kernel(a), ref, 1e-30, 2e-6)


@tilelang.jit(out_idx=[-1])
def compare_with_a_literal(N, block, dtype):
    """Fuzz seed 20261766: ``T.cos(0.5) >= a`` with a 16-bit ``a`` compares in float32, as TileLang 0.1.15's
    CUDA does (``(float)a <= cosf(0.5f)``; this test first held the literal rounded to a's dtype, our own
    reference's typing, which TileLang's source contradicts: session 36)."""

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                a = A[bx * block + i]
                C[bx * block + i] = T.if_then_else(T.cos(0.5) >= a, 1.0, -1.0)

    return main


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_compare_of_a_16bit_value_with_a_float_literal(dev, dtype):
    tdt = getattr(torch, dtype)
    near = torch.tensor(0.8775825618903728, dtype=tdt).float()  # cos(0.5) in the 16-bit dtype
    step = 2.0**-8 if dtype == "bfloat16" else 2.0**-11
    a = torch.cat([torch.rand(30) * 2 - 1, near + step * torch.arange(-3, 4)]).to(tdt).to(dev)
    kernel = compare_with_a_literal(37, 16, dtype)
    ref = torch.where(0.8775825618903728 >= a.cpu().double(), 1.0, -1.0)  # no 16-bit value lies between it and cosf
    assert_close(kernel(a), ref, 0, 0)
    assert reference.compare(kernel, a.cpu()).ok  # the reference executor runs on the CPU


@tilelang.jit(out_idx=[-1])
def last_tile_row_max(block_m=8, block_n=32):
    """GPU fuzz seed 9456912: each iteration overwrites an (8, 1) buffer with the row maxima of a freshly
    loaded tile (``clear=True``); the last tile's survive the loop."""
    M, N = T.dynamic("M"), T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, 1), "float32")):
        with T.Kernel(T.ceildiv(M, block_m), threads=128) as bid:
            X = T.alloc_fragment((block_m, block_n), "float32")
            R = T.alloc_shared((block_m, 1), "float32")
            for k in T.serial(T.ceildiv(N, block_n)):
                T.copy(A[bid * block_m, k * block_n], X)
                T.reduce_max(X, R, dim=1, clear=True)
            T.copy(R, C[bid * block_m, 0])

    return main


@pytest.mark.parametrize("M,N", [(37, 70), (13, 45)])
def test_unit_axis_reduce_overwritten_in_a_loop(dev, M, N, tmp_path):
    """Triton 3.6 failed an assertion in its thread-locality pass on ``tl.max(X, axis=1, keep_dims=True)``
    carried out of the loop (where N is even: two elements a thread along the row); the unit axis is inserted
    before the reduction instead (the Triton 3.6 compile is checked offline, not here: CI has Triton 3.9)."""
    torch.manual_seed(M * N)
    kernel = last_tile_row_max()
    a = torch.randn(M, N, device=dev)
    last = (N - 1) // 32 * 32
    tile = torch.nn.functional.pad(a.cpu().double()[:, last:], (0, last + 32 - N))  # the padded tail reads 0
    assert_close(kernel(a), tile.amax(dim=1, keepdim=True), 0, 0)
    assert "tl.max(tl.reshape(X, (8, 1, 32)), axis=2)" in kernel.get_kernel_source(interpret=False)
    compile_for_hopper(kernel, tmp_path)
