"""Differential fuzzing: random TileLang programs, run by tile2triton and by the reference executor.

``generate(seed)`` draws one ``Program`` from a small grammar of TileLang (one ``random.Random``
per seed, so a seed *is* the program).  A program is a prim_func of one to three ``T.Kernel``
blocks (several chain through a global tensor); each block comes from a *family*, a production
that composes the constructs of the README's supported table:

====================  ==========================================================================
family                constructs
====================  ==========================================================================
``elementwise``       ``T.Parallel`` over a tile, staged through shared/fragment tiles,
                      float/int expressions, ``if``/``else`` on lane and block values,
                      per-iteration ``alloc_local``
``copy``              ``T.copy`` of slices and start-index regions in every direction, with casts,
                      ``T.fill``/``T.clear`` of regions, ``T.unroll``/``T.vectorized``/``range``
                      loops with steps, ``T.use_swizzle``
``reduction``         ``T.reduce_{sum,max,min,absmax,abssum}`` over ``dim`` 0/1, ``clear``,
                      accumulated across a serial / ``T.Pipelined`` loop
``gemm``              ``T.gemm`` with ``transpose_A/B``, ``clear_accum``, fp16/bf16/int8
                      operands (A from shared or a fragment), pipelined K loops and epilogues
``thread_view``       ``T.get_thread_binding`` (1-D and 2-D), per-thread ``alloc_local``/``alloc_var``,
                      shared buffers exchanged across ``T.sync_threads`` (reversal, rotation, xor, tree),
                      per-thread atomics, tile ops on shared memory read back by the threads
``atomic``            ``T.atomic_{add,max,min}``, element form (colliding addresses) and tile form
``scan``              ``T.cumsum`` / ``T.cummax`` on shared or fragment tiles, ``dim``, ``reverse``
``control``           ``while`` on block-uniform counters and on values read from the input,
                      ``if``/``else`` on block values around tile ops, also inside loops
``split_loop``        loops whose ``T.Parallel`` conditions are affine comparisons of loop and lane
                      variables (the causal-mask shape that tile2triton splits), also as masks of
                      0 / -inf (``T.if_then_else(cond, 0, -T.infinity(dtype))``)
``serial_loop``       serial loops tile2triton vectorizes (data-moving loops, ``X[i] += f(k)``) next
                      to loops with carried dependences and ``alloc_var`` sums
``cast``              int8/int32 arithmetic and float8 (e4m3/e5m2) round trips
====================  ==========================================================================

and program-level features: ``pipelined`` (some loop is ``T.Pipelined``), ``multi_kernel``,
``eager`` (eager style: ``T.const``/``T.dynamic`` in the body, tensor annotations, ``T.empty``),
``dynamic`` (``T.dynamic`` sizes: run-time arguments) and ``digits`` (a copy's tile read and written
at digit fields of the lane variables: ``Y[i, j // 2]``, ``W[i // 4, j, i % 4]``, ``F[k // n, k % n]``).  A program counts once for each
family and feature it contains; ``[fuzz] checked N programs (kind: n, ...)`` reports them.

The source text imports ``tilelang``; ``Program.source_for("tile2triton")`` swaps in the drop-in
imports, so the same program runs on real TileLang (tools/fuzz_gpu.py).  Sizes are drawn
independently of the tiles (mostly not multiples of them; a multiple exercises the folding of
bounds checks).  Every global access in a ``T.Parallel`` body is bounds-guarded.

``check(program)`` runs tile2triton (Triton's interpreter for CPU tensors) and the reference
(tile2triton/oracle/reference.py) and raises ``Divergence`` unless they agree.  Entry points:
``python -m tile2triton.oracle.fuzz --count 300 --seed 1`` (docs/fuzz.md) and tests/test_fuzz.py.
hypothesis is not needed; ``hypothesis_programs()`` wraps ``generate`` for property tests.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import random
import re
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from . import reference
from .grammar import CHAINABLE, FAMILY_FNS, Builder, indent

__all__ = ["Program", "Divergence", "generate", "check", "run", "hypothesis_programs", "KINDS", "KNOWN_ISSUES"]

FAMILIES = ["elementwise", "copy", "reduction", "gemm", "thread_view", "atomic", "scan", "control", "split_loop",
            "serial_loop", "cast"]  # fmt: skip
FEATURES = ["pipelined", "multi_kernel", "eager", "dynamic", "digits"]
KINDS = FAMILIES + FEATURES


@dataclass(frozen=True)
class Issue:
    """An open tile2triton bug the fuzzer found, and how to recognise the programs that hit it.

    ``generate(seed, mode)`` redraws a program ``predicate`` matches in one of ``modes``; a
    failure whose message matches ``symptom`` (a regex) counts under the issue instead of as a
    failure (for programs the generator cannot recognise: the compiler's folding decides)."""

    name: str  # the strict-xfail regression test in tests/test_fuzz_regressions.py is named after it
    modes: tuple  # "cpu", "cuda", "tilelang"
    predicate: Callable | None = None
    symptom: str | None = None


# Delete an entry together with its fix, so that the CI run covers those programs again.
KNOWN_ISSUES: list = []

TILELANG_HEADER = "import tilelang\nimport tilelang.language as T\n"
T2T_HEADER = "import tile2triton as tilelang\nimport tile2triton.language as T\n"


class Divergence(AssertionError):
    """tile2triton and the reference disagree on a generated program (or tile2triton refused it)."""


# ====================================================================== programs


@dataclass
class Program:
    seed: int
    source: str  # TileLang source (imports tilelang)
    params: list
    sizes: dict  # size name -> value
    style: str  # "lazy" (@tilelang.jit(out_idx=...) factory) or "eager"
    kinds: list  # families and features
    tol_dtype: str  # the least precise dtype the program computes in
    tags: set = field(default_factory=set)  # finer facts (for KNOWN_ISSUES predicates)

    @property
    def kind(self) -> str:
        return self.kinds[0]

    def __str__(self) -> str:
        return f"# fuzz seed {self.seed}: {', '.join(self.kinds)}\n{self.source}"

    def source_for(self, backend: str) -> str:
        """The program text for ``backend`` ("tilelang" or "tile2triton")."""
        return self.source if backend == "tilelang" else self.source.replace(TILELANG_HEADER, T2T_HEADER, 1)

    def write(self, directory: str, backend: str = "tile2triton") -> str:
        """Write the program as a file; return its path."""
        text = self.source_for(backend)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"fuzz_{self.seed}_{digest}.py")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(f"# fuzz seed {self.seed}: {', '.join(self.kinds)}\n{text}")
        return path

    def load(self, backend: str = "tile2triton"):
        """Import the program's file; return its ``make`` (a lazy factory or an eager kernel)."""
        directory = os.path.join(tempfile.gettempdir(), f"t2t_fuzz_{os.getpid()}_{backend}")
        path = self.write(directory, backend)
        name = "t2t_fuzz_" + os.path.basename(path)[:-3]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.make

    def build(self, device: str = "cpu"):
        """The tile2triton kernel (a JITKernel) for this program's inputs."""
        make = self.load("tile2triton")
        return make() if self.style == "lazy" else make.compile(*self.make_inputs(device))

    def make_inputs(self, device: str = "cpu") -> list:
        """The kernel's arguments (every non-"out" param), seeded by the program's seed."""
        g = torch.Generator().manual_seed(self.seed)
        out = []
        for p in self.params:
            if p.role == "out":
                continue
            shape = tuple(self.sizes[d] if isinstance(d, str) else d for d in p.shape)
            dt = getattr(torch, p.dtype)
            if dt.is_floating_point:
                t = torch.rand(shape, generator=g, dtype=torch.float64) * (p.hi - p.lo) + p.lo
            else:
                t = torch.randint(int(p.lo), int(p.hi), shape, generator=g, dtype=torch.int64)
            out.append(t.to(dt).to(device))
        return out


_TOL = {"float32": (1e-4, 1e-4), "float16": (2e-2, 2e-2), "bfloat16": (8e-2, 5e-2)}


def tolerance(program: Program) -> tuple[float, float]:
    """(atol, rtol): the loosest of float32 and the dtype the program computes in."""
    a, r = _TOL["float32"]
    ta, tr = _TOL.get(program.tol_dtype, (0.0, 0.0))
    return max(a, ta), max(r, tr)


def check(program: Program, device: str = "cpu") -> reference.Comparison:
    """Run ``program`` through tile2triton (on ``device``) and the reference; raise ``Divergence``
    on disagreement."""
    try:
        kernel = program.build(device)
    except Exception as exc:  # tile2triton refused a valid program
        raise Divergence(f"tile2triton failed to compile: {type(exc).__name__}: {exc}\n{program}") from exc
    inputs = program.make_inputs(device)
    atol, rtol = tolerance(program)
    try:
        result = reference.compare(kernel, *inputs, atol=atol, rtol=rtol)
    except reference.ReferenceError:
        raise
    except Exception as exc:
        raise Divergence(f"tile2triton failed to run: {type(exc).__name__}: {exc}\n{program}") from exc
    if not result.ok:
        raise Divergence(f"{result.message}\n{program}")
    return result


# ====================================================================== expressions


# ====================================================================== rendering
def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _render(b: Builder, style: str, dynamic: set) -> str:
    names = [s for s in ("M", "N", "K") if s in b.sizes]
    body = "\n".join(b.kernels)
    lines = [TILELANG_HEADER, ""]
    outs = [p for p in b.params if p.role == "out"]
    if style == "lazy":
        out_idx = [b.params.index(p) - len(b.params) for p in outs]
        lines.append(f"@tilelang.jit(out_idx={out_idx})" if out_idx else "@tilelang.jit")
        lines.append("def make():")
        for s in names:
            lines.append(f'    {s} = T.dynamic("{s}")' if s in dynamic else f"    {s} = {b.sizes[s]}")
        if "NT" in b.sizes:
            lines.append(f"    NT = {b.sizes['NT']}")
        params = ", ".join(f'{p.name}: T.Tensor({_shape_text(p.shape)}, "{p.dtype}")' for p in b.params)
        lines.append("")
        lines.append("    @T.prim_func")
        lines.append(f"    def main({params}):")
        lines.append(indent(body, 8))
        lines.append("")
        lines.append("    return main")
    else:
        args = [p.name for p in b.params if p.role != "out"]
        lines.append("@tilelang.jit")
        lines.append(f"def make({', '.join(args)}):")
        consts = [s for s in names if s not in dynamic]
        if consts:
            lines.append(f'    {", ".join(consts)} = T.const("{", ".join(consts)}")')
        for s in names:
            if s in dynamic:
                lines.append(f'    {s} = T.dynamic("{s}")')
        if "NT" in b.sizes:
            lines.append(f"    NT = {b.sizes['NT']}")
        for p in b.params:
            if p.role == "out":
                lines.append(f'    {p.name} = T.empty({_shape_text(p.shape)}, "{p.dtype}")')
            else:
                lines.append(f'    {p.name}: T.Tensor({_shape_text(p.shape)}, "{p.dtype}")')
        lines.append(indent(body, 4))
        if outs:
            lines.append(f"    return {', '.join(p.name for p in outs)}")
    return "\n".join(lines) + "\n"


def generate(seed: int, mode: str | None = "cpu", family: str | None = None, skip: int = 0) -> Program:
    """The program of ``seed`` (optionally forced to start with ``family``), redrawn while it
    matches an open issue of ``mode`` ("cpu", "cuda", "tilelang"; None: draw it regardless);
    ``skip`` passes over that many acceptable draws (``run`` replaces a program that shows the
    symptom of an open issue by the next one)."""
    for attempt in range(100):
        prog = _generate(seed, attempt, family)
        if not any(mode in i.modes and i.predicate and i.predicate(prog) for i in KNOWN_ISSUES):
            if skip == 0:
                return prog
            skip -= 1
    raise RuntimeError(f"seed {seed}: every attempt drew a program with a known open issue")


def _generate(seed: int, attempt: int, family: str | None) -> Program:
    rng = random.Random(seed * 1000003 + attempt)
    b = Builder(rng)
    first = family or rng.choice(FAMILIES)
    FAMILY_FNS[first](b)
    count = 1
    if first in CHAINABLE or first == "cast":
        while count < 3 and rng.random() < (0.25 if count == 1 else 0.3):
            nxt = rng.choice(CHAINABLE)
            FAMILY_FNS[nxt](b)
            count += 1
    if count > 1:
        b.kind("multi_kernel")
    # the last kernel's result is the output; earlier results are written in place
    results = [p for p in b.params if p.role in ("result", "partial")]
    full = bool(results) and results[-1].role == "result"
    for p in results:
        p.role = "inout"
        if p.dtype.startswith(("float", "bfloat")):
            p.lo, p.hi = -1.0, 1.0
    if full:
        last = results[-1]
        last.role = "out"
        b.params.remove(last)
        b.params.append(last)
    style = "eager" if rng.random() < 0.25 else "lazy"
    if style == "eager":
        b.kind("eager")
    dynamic: set = set()
    if rng.random() < 0.25:
        dims = [s for s in ("M", "N") if s in b.sizes and _dynamic_ok(b, s)]
        if dims:
            dynamic = set(rng.sample(dims, k=rng.randint(1, len(dims))))
            b.kind("dynamic")
    source = _render(b, style, dynamic)
    return Program(seed, source, b.params, dict(b.sizes), style, list(b.kinds), b.tol_dtype, set(b.tags))


def _dynamic_ok(b: Builder, size: str) -> bool:
    """A size can be dynamic unless a loop unrolls over it (tile shapes are always literals)."""
    return all(f"T.unroll({size})" not in k for k in b.kernels) and "NT" not in b.sizes


# ====================================================================== runs
def hypothesis_programs(family: str | None = None):
    """A hypothesis strategy over ``generate`` (imports hypothesis: a test extra)."""
    from hypothesis import strategies as st

    return st.integers(0, 2**31 - 1).map(lambda s: generate(s, family=family))


@dataclass
class RunResult:
    checked: int = 0
    by_kind: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)  # (seed, message)
    known: dict = field(default_factory=dict)  # issue name -> programs that hit it (replaced, not counted)
    seconds: float = 0.0

    def line(self) -> str:
        kinds = ", ".join(f"{k}: {self.by_kind[k]}" for k in KINDS if k in self.by_kind)
        line = f"[fuzz] checked {self.checked} programs ({kinds})"
        if self.known:
            hits = ", ".join(f"{k}: {v}" for k, v in self.known.items())
            line += f"; {sum(self.known.values())} drawn programs hit open issues and were replaced ({hits})"
        return line


def known_symptom(message: str, mode: str) -> str | None:
    """The open issue whose symptom ``message`` shows in ``mode``, if any."""
    for issue in KNOWN_ISSUES:
        if mode in issue.modes and issue.symptom and re.search(issue.symptom, message):
            return issue.name
    return None


def _outcome(prog: Program, device: str) -> str | None:
    """None when ``prog`` agrees; else why not (a divergence, a compiler error, a crash)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check(prog, device)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}" if isinstance(exc, AssertionError) else traceback.format_exc()
    return None


def run(count: int, seed: int = 0, save_dir: str | None = None, verbose: bool = False, device: str = "cpu"):
    """Check ``count`` programs, seeds ``seed`` .. ``seed + count - 1``; one failure does not stop the run."""
    result = RunResult()
    start = time.time()
    for s in range(seed, seed + count):
        skip = 0
        while True:
            prog = generate(s, mode=device, skip=skip)
            msg = _outcome(prog, device)
            issue = known_symptom(msg, device) if msg else None
            if issue is None or skip >= 20:
                break
            result.known[issue] = result.known.get(issue, 0) + 1  # replace it by the seed's next program
            skip += 1
        if msg:
            result.failures.append((s, msg))
            if save_dir:
                prog.write(save_dir, "tilelang")
            if verbose:
                print(f"[fuzz] seed {s} FAILED: {msg[:2000]}", file=sys.stderr)
        result.checked += 1
        for k in prog.kinds:
            result.by_kind[k] = result.by_kind.get(k, 0) + 1
    result.seconds = time.time() - start
    return result


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description="Differential fuzzing of tile2triton against the reference executor")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: random)")
    ap.add_argument("--show", type=int, default=None, help="print the program of this seed and exit")
    ap.add_argument("--save", default=None, help="directory for the programs that fail")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.show is not None:
        print(generate(args.show))
        return 0
    seed = args.seed if args.seed is not None else random.SystemRandom().randint(0, 10**9)
    res = run(args.count, seed, args.save, args.verbose)
    print(f"{res.line()} in {res.seconds:.0f}s, seeds {seed}..{seed + args.count - 1}, {len(res.failures)} failed")
    for s, msg in res.failures:
        print(f"  seed {s}: {msg.splitlines()[0][:300]}")
    return 1 if res.failures else 0


if __name__ == "__main__":
    sys.exit(main())
