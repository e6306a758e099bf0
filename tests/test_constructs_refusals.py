"""Constructs refused for a hardware reason (issue 26): the error names the construct and why, at the
user's line.  Blackwell-only tensor memory and tcgen05 MMA have no Hopper equivalent; a cluster
barrier needs cluster-distributed shared memory, which Triton does not expose."""

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


@pytest.mark.parametrize(
    "make,pattern",
    [
        (_tmem, r"T\.alloc_tmem .*Blackwell-only \(sm_100\) tensor memory"),
        (_tcgen05, r"T\.tcgen05_before_thread_sync .*Blackwell-only \(sm_100\) tcgen05"),
        (_cluster_barrier, r"T\.alloc_cluster_barrier .*cluster-distributed shared memory"),
    ],
)
def test_hardware_refusals_name_the_construct_and_why(make, pattern):
    with pytest.raises(TileLangCompileError, match=pattern) as info:
        tilelang.compile(make())
    assert "test_constructs_refusals.py" in str(info.value)  # the user's file and line
