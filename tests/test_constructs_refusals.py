"""Constructs refused for a hardware reason (issue 26): the error names the construct and why, at the
user's line.  Blackwell-only tensor memory and tcgen05 MMA have no Hopper equivalent; a cluster
barrier and a cluster copy need Hopper's distributed shared memory (another block's shared memory), which
Triton's tl cannot address.  T.float4_e2m1_unpacked
is tcgen05's shared-memory layout of fp4 operands: TileLang 0.1.15 itself refuses element access and
SIMT copies of it for sm_90a ("a SMEM/TMA storage tag and has no CUDA register type")."""

import pytest

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError


def _tmem():
    @T.prim_func
    def main(A: T.Tensor((128, 128), T.float32)):
        with T.Kernel(1, threads=128):
            C_tmem = T.alloc_tmem([128, 128], T.float32)
            T.fill(C_tmem, 0)

    return main


def _tcgen05():
    @T.prim_func
    def main(A: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128):
            T.tcgen05_before_thread_sync()

    return main


def _cluster_barrier():
    @T.prim_func
    def main(A: T.Tensor((128,), T.int32)):
        with T.ClusterKernel(128, threads=128, cluster_dims=(4, 1, 1)):
            mbar = T.alloc_cluster_barrier([256])
            T.cluster_sync()
            T.mbarrier_arrive(mbar, 0)

    return main


def _cluster_copy():
    @T.prim_func
    def main(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.ClusterKernel(2, threads=128, cluster_dims=(2, 1, 1)) as pid:
            src = T.alloc_shared((64,), T.float32)
            dst = T.alloc_shared((64,), T.float32)
            T.copy(A, src)
            if pid == 0:
                T.copy_cluster(src, dst, dst_block=1)
            T.cluster_sync()
            T.copy(dst, B)

    return main


def _fp4_unpacked():
    @T.prim_func
    def main(A: T.Tensor((16, 32), T.float4_e2m1fn), C: T.Tensor((16, 32), T.float32)):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((16, 32), T.float4_e2m1_unpacked)
            T.copy(A, s)
            for i, j in T.Parallel(16, 32):
                C[i, j] = T.Cast(T.float32, s[i, j])

    return main


@pytest.mark.parametrize(
    "make,pattern",
    [
        (_tmem, r"T\.alloc_tmem .*tensor memory \(TMEM\) requires Blackwell TCGEN5MMA \(sm_100\)"),
        (_tcgen05, r"T\.tcgen05_before_thread_sync .*tcgen05 requires Blackwell TCGEN5MMA \(sm_100\)"),
        (_cluster_barrier, r"T\.alloc_cluster_barrier .*distributed shared memory.*cannot address another block's"),
        (_cluster_copy, r"T\.copy_cluster .*distributed shared memory.*cannot address another block's"),
        (_fp4_unpacked, r"T\.float4_e2m1_unpacked .*Blackwell's tcgen05 MMA.*T\.float4_e2m1fn buffers"),
    ],
)
def test_hardware_refusals_name_the_construct_and_why(make, pattern):
    with pytest.raises(TileLangCompileError, match=pattern) as info:
        tilelang.compile(make())
    assert "test_constructs_refusals.py" in str(info.value)  # the user's file and line
    if make in (_tmem, _tcgen05):  # as TileLang rejects them on Hopper: tvm.error.InternalError
        assert isinstance(info.value, tilelang.tvm.error.InternalError)


@pytest.mark.parametrize("dtype,short", [("float16", "FP16"), ("bfloat16", "BF16"), ("float8_e4m3fn", "FP8")])
def test_stochastic_rounding_is_a_hardware_refusal(dtype, short):
    # cvt.rs is Blackwell's (sm_100a); TileLang rejects it elsewhere with this message, an InternalError
    @T.prim_func
    def main(A: T.Tensor((40,), "float32"), B: T.Tensor((40,), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(40):
                B[i] = T.cast(A[i], dtype, round="rs", rbits=T.int32(0x1234))

    with pytest.raises(tilelang.tvm.error.InternalError, match=f"Stochastic rounding f32-to-{short} requires sm_100a"):
        tilelang.compile(main)
