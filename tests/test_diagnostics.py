"""One test per diagnostic: the message, and the user's file and line (with the caret)."""

import pathlib
import warnings

import pytest
import torch

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton.errors import GeneratedCodeError, TileLangCompileError
from tile2triton.passes.check import TileLangWarning

THIS = pathlib.Path(__file__).resolve()
SOURCE = THIS.read_text().splitlines()


def line_of(marker: str) -> int:
    """The line of this file that carries ``# <marker>`` (exactly one)."""
    hits = [k for k, text in enumerate(SOURCE, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def compile_error(factory, *args) -> TileLangCompileError:
    with pytest.raises(TileLangCompileError) as info:
        tilelang.compile(factory(*args), out_idx=[-1])
    return info.value


def assert_at(err: TileLangCompileError, marker: str, *fragments):
    line = line_of(marker)
    assert err.loc is not None and err.loc.line == line, (err.loc, line)
    assert pathlib.Path(err.loc.file).resolve() == THIS
    text = str(err)
    assert f"test_diagnostics.py:{line}:" in text
    assert "^" in text.splitlines()[2]  # the caret line under the source line
    assert SOURCE[line - 1].strip() in text
    for f in fragments:
        assert f in text, (f, text)


# ----------------------------------------------------------------------------- collective in T.Parallel
def copy_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            for i, j in T.Parallel(64, 64):
                T.copy(A, S)  # copy-in-parallel
            T.copy(S, B)

    return main


def test_collective_copy_inside_parallel():
    err = compile_error(copy_in_parallel)
    assert_at(
        err,
        "copy-in-parallel",
        "T.copy is a collective tile operation and cannot stand inside T.Parallel",
        "hint: move it before or after the T.Parallel loop",
    )


def clear_shared_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((64,), "float32")
            for i in T.Parallel(64):
                T.clear(F)  # clear-in-parallel
                B[i] = A[i] + F[i]

    return main


def test_collective_clear_of_outer_buffer_inside_parallel():
    err = compile_error(clear_shared_in_parallel)
    assert_at(err, "clear-in-parallel", "T.fill / T.clear is a collective tile operation")


def reduce_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((16, 16), "float32")
            R = T.alloc_fragment((16,), "float32")
            T.copy(A, F)
            for i in T.Parallel(16):
                T.reduce_sum(F, R, dim=1)  # reduce-in-parallel
            T.copy(R, B)

    return main


def test_collective_reduce_inside_parallel():
    err = compile_error(reduce_in_parallel)
    assert_at(err, "reduce-in-parallel", "T.reduce_* is a collective tile operation")


def private_clear(N, BLOCK_N, BLOCK_K):
    # seed 001's GEMV: clearing a local allocated in the same T.Parallel body is element-wise
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N, N), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK_N)) as bn:
            for tn in T.Parallel(BLOCK_N):
                C_reg = T.alloc_local((1,), "float")
                T.clear(C_reg)
                for tk in T.serial(N):
                    C_reg[0] += A[tk] * B[bn * BLOCK_N + tn, tk]
                C[bn * BLOCK_N + tn] = C_reg[0]

    return main


def test_clear_of_parallel_private_local_is_legal():
    kernel = tilelang.compile(private_clear(20, 8, 8), out_idx=[-1])
    a, b = torch.randn(20), torch.randn(20, 20)
    torch.testing.assert_close(kernel(a, b), b @ a, atol=1e-4, rtol=1e-4)


# ----------------------------------------------------------------------------- unknown T.* name
def unknown_name():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_fragment((64,), "float32")
            T.cpoy(A, S)  # unknown-name
            T.copy(S, B)

    return main


def test_unknown_T_name_lists_closest():
    err = compile_error(unknown_name)
    assert_at(err, "unknown-name", "T.cpoy is not supported by tile2triton", "closest supported names: T.copy")


def unknown_name_2():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((16, 16), "float32")
            R = T.alloc_fragment((16,), "float32")
            T.copy(A, F)
            T.reduce_summ(F, R, dim=1)  # unknown-reduce
            T.copy(R, B)

    return main


def test_unknown_T_reduce_name():
    err = compile_error(unknown_name_2)
    assert_at(err, "unknown-reduce", "T.reduce_summ is not supported", "T.reduce_sum")


def fused_multiply_add():
    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            B[tx] = T.fma(A[tx], 2.0, 1.0)  # fused-multiply-add

    return main


def test_known_unsupported_name_says_so_and_names_the_alternative():
    err = compile_error(fused_multiply_add)
    assert_at(err, "fused-multiply-add", "T.fma is not supported by tile2triton: fused multiply-add is not mapped")
    assert "a * b + c" in err.hint
    assert "T.floor" not in str(err)


def unsupported_tilelang_name():
    @T.prim_func
    def main(A: T.Tensor((32,), "int32"), B: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                B[i] = T.fmul(A[i], A[i])  # tilelang-only

    return main


def test_tilelang_name_without_support_gives_the_reason():
    from tile2triton import compat

    err = compile_error(unsupported_tilelang_name)
    status, reason = compat.classify("fmul")
    assert status == compat.UNSUPPORTED
    assert_at(err, "tilelang-only", f"T.fmul is not supported by tile2triton ({reason})", "docs/compat.md")


def far_from_everything():
    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                B[i] = T.frobnicate(A[i])  # no-neighbour

    return main


def test_name_close_to_nothing_gets_no_suggestion():
    err = compile_error(far_from_everything)
    assert_at(err, "no-neighbour", "T.frobnicate is not supported by tile2triton")
    assert err.hint is None


def test_close_names_are_small_edits_only():
    from tile2triton.hints import close_names

    names = [n for n in dir(T) if not n.startswith("_")]
    assert close_names("alloc_shred", names) == ["alloc_shared"]
    assert close_names("alloc_fragmnet", names) == ["alloc_fragment"]  # a swap is one edit
    assert close_names("Paralel", names) == ["Parallel"]
    assert close_names("exq", names)[0] == "exp"
    assert close_names("tma_load", names) == []  # T.copy / T.fill are no small edit of it
    assert close_names("shfl_xr", names) == ["shfl_xor"]
    assert close_names("gemm_v2", names) == []


# ----------------------------------------------------------------------------- copy / gemm mismatches
def copy_shape_mismatch():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((32, 64), "float32")
            F = T.alloc_fragment((64, 32), "float32")
            T.copy(A[0:32, 0:64], S)
            T.copy(S, F)  # copy-shape
            T.copy(F, B[0:64, 0:32])

    return main


def test_copy_shape_mismatch():
    err = compile_error(copy_shape_mismatch)
    assert_at(err, "copy-shape", "T.copy", "(32, 64)", "(64, 32)")


def gemm_k_mismatch():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 32), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(Cf)
            T.gemm(As, Bs, Cf)  # gemm-k
            T.copy(Cf, C)

    return main


def test_gemm_shape_mismatch():
    err = compile_error(gemm_k_mismatch)
    assert_at(err, "gemm-k", "T.gemm shapes do not match", "K differs: 32 from A, 64 from B")


def gemm_transposed_ok():
    @T.prim_func
    def main(A: T.Tensor((32, 16), "float16"), B: T.Tensor((16, 32), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((32, 16), "float16")
            Bs = T.alloc_shared((16, 32), "float16")
            Cf = T.alloc_fragment((16, 16), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, transpose_A=True, transpose_B=True, clear_accum=True)
            T.copy(Cf, C)

    return main


def test_gemm_transposed_shapes_accepted():
    kernel = tilelang.compile(gemm_transposed_ok(), out_idx=[-1])
    a, b = torch.randn(32, 16).half(), torch.randn(16, 32).half()
    torch.testing.assert_close(kernel(a, b), a.float().T @ b.float().T, atol=1e-2, rtol=1e-2)


def gemm_dtype_mismatch():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 32), "float16")
            Bs = T.alloc_shared((32, 64), "int8")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(Cf)
            T.gemm(As, Bs, Cf)  # gemm-dtype
            T.copy(Cf, C)

    return main


def test_gemm_dtype_mismatch():
    err = compile_error(gemm_dtype_mismatch)
    assert_at(err, "gemm-dtype", "T.gemm operands have different dtypes", "float16", "int8")


def gemm_int_accumulator():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "int32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((16, 16), "float16")
            Bs = T.alloc_shared((16, 16), "float16")
            Cf = T.alloc_fragment((16, 16), "int32")
            T.copy(A, As)
            T.copy(B, Bs)
            T.clear(Cf)
            T.gemm(As, Bs, Cf)  # gemm-acc
            T.copy(Cf, C)

    return main


def test_gemm_accumulator_dtype():
    err = compile_error(gemm_int_accumulator)
    assert_at(err, "gemm-acc", "T.gemm accumulator 'Cf' is int32", "float16 inputs need a float type")


# ----------------------------------------------------------------------------- undefined name
def undefined_name():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            scale = 2.0
            for i in T.Parallel(64):
                B[i] = A[i] * scael  # undefined  # noqa: F821

    return main


def test_undefined_name():
    err = compile_error(undefined_name)
    line = line_of("undefined  # noqa: F821")
    assert err.loc.line == line
    text = str(err)
    assert f"test_diagnostics.py:{line}:" in text
    assert "name 'scael' is not defined" in text
    assert "did you mean scale" in text
    # the caret sits under the name
    src_line, caret_line = text.splitlines()[1], text.splitlines()[2]
    assert src_line[caret_line.index("^") :].startswith("scael")


# ----------------------------------------------------------------------------- warning: seed 002
def uninitialized_accumulator(M, N, K):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((M, K), "float16")
            Bs = T.alloc_shared((K, N), "float16")
            Cf = T.alloc_fragment((M, N), "float32")  # acc-alloc
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf)  # acc-gemm
            T.copy(Cf, C)

    return main


def test_uninitialized_gemm_accumulator_warns_at_gemm_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tilelang.compile(uninitialized_accumulator(16, 16, 16), out_idx=[-1])
    hits = [w for w in caught if issubclass(w.category, TileLangWarning)]
    assert len(hits) == 1
    w = hits[0]
    assert pathlib.Path(w.filename).resolve() == THIS and w.lineno == line_of("acc-gemm")
    msg = str(w.message)
    assert "T.gemm accumulates into 'Cf'" in msg and "never cleared" in msg
    assert f"allocated at line {line_of('acc-alloc')}" in msg


def cleared_accumulator(M, N, K, clear_accum):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((M, K), "float16")
            Bs = T.alloc_shared((K, N), "float16")
            Cf = T.alloc_fragment((M, N), "float32")
            T.copy(A, As)
            T.copy(B, Bs)
            if not clear_accum:
                T.clear(Cf)
            T.gemm(As, Bs, Cf, clear_accum=clear_accum)
            T.copy(Cf, C)

    return main


@pytest.mark.parametrize("clear_accum", [False, True])
def test_no_warning_when_cleared(clear_accum):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tilelang.compile(cleared_accumulator(16, 16, 16, clear_accum), out_idx=[-1])
    assert not [w for w in caught if issubclass(w.category, TileLangWarning)]


# ----------------------------------------------------------------------------- errors from Triton, mapped back
def triton_rejects():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(64):
                B[i] = A[i] << 2  # triton-rejects

    return main


def test_triton_error_mapped_to_tilelang_line(dev):
    kernel = tilelang.compile(triton_rejects(), out_idx=[-1])
    with pytest.raises(GeneratedCodeError) as info:
        kernel(torch.randn(64, device=dev))
    err = info.value
    assert_at(err, "triton-rejects", "Triton rejected the code generated for this line", "invalid operands")
    assert "generated code at" in str(err) and "<< 2" in str(err)  # the hint names the generated line
    assert err.__cause__ is not None  # Triton's own exception stays chained


def test_line_map_lookup():
    from tile2triton.runtime.diagnostics import origin_of

    kernel = tilelang.compile(triton_rejects(), out_idx=[-1])
    module = kernel.lowered(True)
    lines = module.source.split("\n")
    store = next(k for k, text in enumerate(lines, 1) if "tl.store" in text)
    loc = origin_of(module.line_map, store)
    assert loc.line == line_of("triton-rejects")
