"""``tile2triton run --device cpu``: a script written for CUDA (device="cuda", .cuda(),
torch.cuda.synchronize / Event / Stream) runs unmodified on a CPU machine; without it, one clean line."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import torch
    import tilelang
    import tilelang.language as T


    @tilelang.jit(out_idx=[-1])
    def scale_add(M, N, block_M=32, block_N=32):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    C[by * block_M + i, bx * block_N + j] = 3.0 * A[by * block_M + i, bx * block_N + j] + B[by * block_M + i, bx * block_N + j]

        return main


    if __name__ == "__main__":
        a = torch.randn(70, 45, device="cuda")
        b = torch.randn(70, 45).cuda()
        g = torch.Generator(device="cuda").manual_seed(0)
        assert a.device.type == b.device.type
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        side = torch.cuda.Stream()  # TileLang's fusedmoe example runs its experts on streams
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            c = scale_add(70, 45)(a, b)
        torch.cuda.default_stream().wait_stream(side)
        end.record()
        torch.cuda.synchronize()
        torch.testing.assert_close(c, (3 * a.double() + b.double()).float())
        assert start.elapsed_time(end) > 0
        print("ok on", c.device.type)
""")


def _run(tmp_path, *args):
    path = tmp_path / "cuda_script.py"
    path.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tile2triton", "run", *args, str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the mapping is for machines without CUDA")
def test_run_device_cpu_runs_a_cuda_script_unmodified(tmp_path):
    proc = _run(tmp_path, "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok on cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_run_without_device_cpu_is_one_clean_line(tmp_path):
    proc = _run(tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = next(k for k, text in enumerate(SCRIPT.splitlines(), 1) if 'device="cuda")' in text)
    assert lines[0].startswith(f"tile2triton: error: cuda_script.py:{line}: needs CUDA (Torch not compiled with CUDA")
    assert lines[0].endswith("run it on the CPU with: tile2triton run --device cpu cuda_script.py ...")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_run_device_cpu_names_an_unmapped_cuda_call(tmp_path):
    """Under --device cpu, a CUDA call the mapping has no counterpart for is named, without advising
    the flag already given."""
    path = tmp_path / "props.py"
    path.write_text("import torch\nprint(torch.cuda.get_device_properties(0).multi_processor_count)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tile2triton", "run", "--device", "cpu", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tile2triton: error: props.py:2: needs CUDA")
    assert lines[0].endswith("--device cpu maps CUDA tensors, timing and streams onto the CPU, not this call")


# a persistent kernel, as TileLang's example_gemm_persistent.py writes one: one program per SM,
# the SM count asked of the carver's driver when the kernel is built
PERSISTENT = textwrap.dedent("""
    import torch
    import tilelang
    import tilelang.language as T
    from tilelang.carver.arch import driver


    @tilelang.jit(out_idx=[-1])
    def persistent_scale(M, N, block_M=16, block_N=32):
        sm_num = driver.get_num_sms()
        m_blocks, n_blocks = T.ceildiv(M, block_M), T.ceildiv(N, block_N)
        waves = T.ceildiv(m_blocks * n_blocks, sm_num)

        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(sm_num, threads=128) as bid:
                for w in T.serial(waves):
                    tile = bid + w * sm_num
                    if tile < m_blocks * n_blocks:
                        for i, j in T.Parallel(block_M, block_N):
                            C[(tile // n_blocks) * block_M + i, (tile % n_blocks) * block_N + j] = (
                                2.0 * A[(tile // n_blocks) * block_M + i, (tile % n_blocks) * block_N + j] - 1.0
                            )

        return main


    if __name__ == "__main__":
        a = torch.randn(150, 77, device="cuda")
        c = persistent_scale(150, 77)(a)
        torch.testing.assert_close(c, (2 * a.double() - 1).float())
        print("ok with", driver.get_num_sms(), "programs")
""")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the mapping is for machines without CUDA")
def test_run_device_cpu_answers_the_carvers_device_queries(tmp_path):
    path = tmp_path / "persistent.py"
    path.write_text(PERSISTENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("T2T_SUITE_CUDA_AS_CPU", None)
    cmd = [sys.executable, "-m", "tile2triton", "run", "--device", "cpu", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("ok with ")
