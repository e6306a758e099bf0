"""Compile tile2triton's kernels offline for every Triton target (issue 25): no GPU needed.

Usage: python tools/target_matrix.py [--jobs N] [--targets sm_80,gfx942,...] [--save F | --load F]

The kernels:
* every kernel the scripts of examples/ launch (each script runs as ``__main__``, under Triton's
  interpreter, and the kernels it compiles are recorded);
* a deterministic sample of the kernels the test suite launches: the tests of ``SAMPLE_FILES``
  run in order, in this process, and the first kernel each test compiles is recorded, then that
  test is skipped (nothing runs: collecting takes seconds, not the suite's minutes).

A kernel counts once (tests that build the same kernel give one) and only when it lowers for
sm_90, i.e. one the suite would launch; tests of compile errors drop out there.  For each target
(``runtime/target.MATRIX``) tile2triton generates the source for that card
(``JITKernel.lowered_for``) and Triton compiles every kernel of it (``GPUTarget("cuda", 80, 32)``,
``GPUTarget("hip", "gfx942", 64)``, ...; CUDA needs only the wheel's ptxas, AMD only its LLVM),
in parallel processes.

Expected refusals are counted apart, never as failures: they are tile2triton's documented
compile errors for a construct the target lacks (README, "Targets"):
* float8_e4m3fn on sm_80 (Triton has no e4m3fn below sm_89);
* T.inline_asm (PTX) and the special registers only PTX reads (T.ptx_smid, T.ptx_clock64,
  T.ptx_globaltimer) on AMD.
Any other error, in code generation or in Triton, is a failure: the exit status is 1.

Output: one row per target, then exactly ``targets: T, kernels: K, compiled: C, failed: F`` (C and F
count (kernel, target) pairs; with R refusals, C + F + R = T * K).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import multiprocessing
import os
import pathlib
import re
import resource
import runpy
import sys
import tempfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

# the test files sampled, in this order (deterministic: fixed parameters, no hypothesis draws)
SAMPLE_FILES = (
    "tests/test_copy.py",
    "tests/test_gemm.py",
    "tests/test_math.py",
    "tests/test_parallel.py",
    "tests/test_reduce.py",
    "tests/test_warp.py",
    "tests/test_thread_view.py",
    "tests/test_ptx.py",
    "tests/test_fp8_casts.py",
    "tests/test_loops.py",
    "tests/test_dynamic.py",
    "tests/test_real_kernels.py",
    "tests/test_regressions.py",
    "tests/test_lowering_wave2.py",
    "tests/test_vector_dtypes.py",
    "tests/test_examples_lang.py",
    "tests/test_descriptors.py",
    "tests/test_gluon_attention.py",
    "tests/test_tvm_warp_shuffle.py",
    "tests/test_atomic_reduce_dropin.py",
    "tests/test_loop_exits.py",
    "tests/test_split.py",
    "tests/test_persistent_attention.py",
)

# tile2triton's compile errors for what a target lacks (codegen/intrinsics.check_fp8, codegen/ptx.py)
EXPECTED_REFUSALS = (
    "is not an fp8 format Triton compiles for",
    "which no portable Triton operation gives",
    "T.inline_asm holds PTX",
)


# ------------------------------------------------------------------------------ collecting
class Collector:
    """Records the kernels ``JITKernel._compile`` sees; with ``skip`` set, skips the test then."""

    def __init__(self, targets):
        self.targets = targets
        self.kernels: dict[str, dict] = {}  # sm_90 source hash -> {"origin", "targets": {t: job | refusal}}
        self.skip = False
        self.origin = ""
        self.seen: dict[int, object] = {}  # id -> the kernel, kept alive: a freed kernel's id may be a later one's

    def record(self, kernel) -> None:
        from tile2triton.errors import TileLangCompileError

        if id(kernel) in self.seen:
            return
        self.seen[id(kernel)] = kernel
        try:
            key_source = kernel.lowered_for("sm_90").source
        except Exception:  # a kernel that does not lower for the H200: a test of a compile error
            return
        key = hashlib.sha256(key_source.encode()).hexdigest()[:20]
        if key in self.kernels:
            return
        per_target = {}
        for t in self.targets:
            try:
                module = kernel.lowered_for(t)
                per_target[t] = {"source": module.source, "kernels": _launches(module)}
            except TileLangCompileError as exc:
                expected = any(text in str(exc) for text in EXPECTED_REFUSALS)
                per_target[t] = {"refused" if expected else "failed": f"codegen: {str(exc).splitlines()[0]}"}
            except Exception as exc:
                per_target[t] = {"failed": f"codegen: {type(exc).__name__}: {exc}"}
        self.kernels[key] = {"origin": self.origin, "name": kernel.prim_func.name, "targets": per_target}

    @contextlib.contextmanager
    def active(self):
        import pytest

        from tile2triton.runtime.kernel import JITKernel

        original = JITKernel._compile
        collector = self

        def _compile(kernel, interpret, descriptors=None):
            collector.record(kernel)
            if collector.skip:
                pytest.skip("target_matrix: kernel recorded")
            return original(kernel, interpret, descriptors)

        JITKernel._compile = _compile
        try:
            yield
        finally:
            JITKernel._compile = original

    # pytest hook: the test being run names the kernels it compiles
    def pytest_runtest_setup(self, item):
        self.origin = item.nodeid


def _launches(module) -> list:
    from tile2triton.runtime.target import triton_signature

    return [[k.name, triton_signature(k), k.num_warps] for k in module.launches]


def collect(targets) -> dict:
    import pytest

    collector = Collector(targets)
    with collector.active():
        for path in sorted((ROOT / "examples").glob("*.py")):
            if re.search(r"^import tilelang\b", path.read_text(), re.M):
                continue  # a TileLang script for `tile2triton run --device cpu` (examples/add.py): CUDA tensors
            collector.origin = f"examples/{path.name}"
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    runpy.run_path(str(path), run_name="__main__")
                except SystemExit:
                    pass
        examples = len(collector.kernels)
        collector.skip = True
        files = [str(ROOT / f) for f in SAMPLE_FILES]
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main(["-q", "-p", "no:cacheprovider", "-W", "ignore", *files], plugins=[collector])
    print(
        f"collected {len(collector.kernels)} kernels: {examples} from examples/, "
        f"{len(collector.kernels) - examples} from {len(SAMPLE_FILES)} test files",
        file=sys.stderr,
    )
    return collector.kernels


# ------------------------------------------------------------------------------ compiling
def _compile_job(job) -> tuple:
    """One generated module for one target: every kernel of it through ``triton.compile``."""
    target, source, kernels = job
    import importlib.util

    import triton
    from triton.compiler import ASTSource

    from tile2triton.runtime.target import parse_target

    gpu = parse_target(target).gpu_target()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            name = "t2t_matrix_" + hashlib.sha256(source.encode()).hexdigest()[:16]
            path = os.path.join(tmp, name + ".py")
            with open(path, "w") as f:
                f.write(source)
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # Gluon reads a kernel's source through its module
            spec.loader.exec_module(module)
            for kname, types, num_warps in kernels:
                fn = getattr(module, kname)
                signature = dict(zip(fn.arg_names, types))
                attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(types) if t.startswith("*")}
                # the only constexpr parameters are the sizes' multiples (runtime/target.triton_signature):
                # 1, a size of no known divisibility, as compile_offline takes a size it is not given
                constants = {(i,): 1 for i, t in enumerate(types) if t == "constexpr"}
                source_class = ASTSource
                if type(fn).__module__.startswith("triton.experimental.gluon"):
                    from triton.experimental.gluon._runtime import GluonASTSource as source_class
                triton.compile(
                    source_class(fn, signature, constants, attrs), target=gpu, options={"num_warps": num_warps}
                )
            sys.modules.pop(name, None)
        return target, None
    except Exception as exc:
        lines = traceback.format_exception_only(type(exc), exc)
        return target, " ".join(" ".join(lines).split())[:400]


def main(argv=None) -> int:
    from tile2triton.runtime.target import MATRIX

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiling processes")
    parser.add_argument("--targets", default=",".join(MATRIX), help="comma-separated (default: the 8 of the matrix)")
    parser.add_argument("--save", metavar="FILE", help="write the collected sources to FILE (JSON)")
    parser.add_argument("--load", metavar="FILE", help="compile the sources FILE holds instead of collecting")
    ns = parser.parse_args(argv)
    targets = [t.strip() for t in ns.targets.split(",") if t.strip()]
    t0 = time.perf_counter()
    if ns.load:
        kernels = json.loads(pathlib.Path(ns.load).read_text())
    else:
        kernels = collect(targets)
    if ns.save:
        pathlib.Path(ns.save).write_text(json.dumps(kernels))
    t_collect = time.perf_counter() - t0

    counts = {t: {"compiled": 0, "refused": 0, "failed": 0} for t in targets}
    failures: list[str] = []
    jobs: dict[tuple, list] = {}  # (target, source hash) -> kernel keys (a module compiled once)
    payload: dict[tuple, tuple] = {}
    for key, entry in kernels.items():
        for t in targets:
            result = entry["targets"][t]
            if "refused" in result:
                counts[t]["refused"] += 1
            elif "failed" in result:
                counts[t]["failed"] += 1
                failures.append(f"{t} {entry['origin']} ({entry['name']}): {result['failed']}")
            else:
                job = (t, hashlib.sha256(result["source"].encode()).hexdigest())
                jobs.setdefault(job, []).append(key)
                payload[job] = (t, result["source"], result["kernels"])
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    pool = ctx.Pool(max(1, ns.jobs))
    try:
        order = list(payload)
        for job, (t, error) in zip(order, pool.imap(_compile_job, [payload[j] for j in order], chunksize=2)):
            n = len(jobs[job])
            if error is None:
                counts[t]["compiled"] += n
            else:
                counts[t]["failed"] += n
                first = kernels[jobs[job][0]]
                failures.append(f"{t} {first['origin']} ({first['name']}): triton: {error}")
    finally:
        pool.close()
        pool.join()  # (reaped: their CPU time counts in RUSAGE_CHILDREN)
    elapsed = time.perf_counter() - t0
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    compile_cpu = cpu.ru_utime + cpu.ru_stime

    for line in failures:
        print("FAILED", line)
    k = len(kernels)
    for t in targets:
        c = counts[t]
        print(f"{t:<8} kernels {k:>4}  compiled {c['compiled']:>4}  refused {c['refused']:>3}  failed {c['failed']:>3}")
    refused = sum(c["refused"] for c in counts.values())
    compiled = sum(c["compiled"] for c in counts.values())
    failed = sum(c["failed"] for c in counts.values())
    print(
        f"refused (expected, documented): {refused}; {len(payload)} distinct modules compiled with {ns.jobs} "
        f"processes ({compile_cpu:.0f} CPU s); collecting {t_collect:.0f} s, all {elapsed:.0f} s"
    )
    print(f"targets: {len(targets)}, kernels: {k}, compiled: {compiled}, failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
