"""The ``tile2triton`` command: show generated Triton source, run unmodified TileLang scripts.

Listing a file's kernels (``show FILE``) reads its source without running it; showing one
kernel imports the file, so its top-level code runs (scripts guard theirs with
``if __name__ == "__main__":``).

Exit codes: 0 success; 1 the kernel or the script failed (a compile error is printed with the
user's file, line and a caret); 2 a usage error (bad path, bad ``--arg``, unknown kernel name),
reported as one line on stderr.
"""

from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.util
import inspect
import os
import runpy
import sys
import traceback
from dataclasses import dataclass

from .settings import current as current_settings  # not `from . import`: that would load the package (its __getattr__)

EPILOG = """\
examples:
  tile2triton show examples/matmul.py                       list the kernels in a file
  tile2triton show examples/matmul.py::matmul --arg M=256 --arg N=256 --arg K=128 \\
      --arg block_M=64 --arg block_N=64 --arg block_K=32   print the generated Triton source
  tile2triton show kern.py::add --interpret                 the variant the CPU interpreter runs
  tile2triton show kern.py::add --arg M=1024 | less         piped output is never colored
  tile2triton run my_tilelang_script.py --size 1024         run a TileLang script unmodified
                                                            ('import tilelang' gets tile2triton)
  tile2triton run --device cpu example_gemm.py              a script written for CUDA, on the CPU
  tile2triton fix-annotations kern.py                       A: T.Tensor((M, K), dtype) -> A: T.Tensor[(M, K), dtype]
  python -m tile2triton ...                                 same as the tile2triton command

listing kernels reads FILE without running it; showing one imports FILE, which runs its
top-level code: keep script code under  if __name__ == "__main__":

exit codes: 0 ok, 1 the kernel or script failed, 2 usage error (bad path, name or --arg)
"""


class UsageError(Exception):
    """A mistake in the command line: one line on stderr, exit code 2."""


# ----------------------------------------------------------------------------- tilelang aliasing
class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # importlib re-reads sys.modules after exec_module, so the real module replaces the stub
        sys.modules[module.__name__] = importlib.import_module(self.target)


# TileLang modules whose name a tile2triton package also has, with a different meaning
NOT_ALIASED = {
    "tilelang.ir": "TileLang's IR nodes and source spans over TVM IR; tile2triton's own IR (tile2triton.ir) "
    "is not TileLang's API",
}
# tile2triton's own packages and modules, which stand for nothing of TileLang's: under the alias,
# ``tilelang.<name>`` is refused rather than resolved to the compiler's internals. Every other
# top-level name of tile2triton (language, jit, profiler, testing, tvm, carver, cuda, ...) mirrors the
# TileLang module of that name (docs/architecture.md, "Which folder is which").
COMPILER_MODULES = (
    "frontend", "passes", "codegen", "runtime", "oracle", "settings", "wiring", "compat", "hints",
    "eager", "compiler", "cli", "torch_ops", "cuda_as_cpu", "fix_annotations", "data", "_version", "_api",
)  # fmt: skip
NOT_ALIASED.update(
    {
        f"tilelang.{name}": f"tile2triton.{name} is part of tile2triton's compiler, not TileLang's API"
        for name in COMPILER_MODULES
    }
)


class TileLangAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``tilelang`` and ``tilelang.X.Y`` to ``tile2triton`` and ``tile2triton.X.Y``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tilelang" and not fullname.startswith("tilelang."):
            return None
        for name, why in NOT_ALIASED.items():
            if fullname == name or fullname.startswith(name + "."):
                raise ModuleNotFoundError(f"No module named '{fullname}': tile2triton does not provide {name} ({why})")
        real = "tile2triton" + fullname[len("tilelang") :]
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(
                f"No module named '{fullname}': tile2triton does not provide {fullname} "
                f"(running with 'tilelang' resolved to tile2triton)",
                name=fullname,
            )
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(real), is_package=found.submodule_search_locations is not None
        )


def install_tilelang_alias() -> None:
    """Make ``import tilelang`` / ``import tilelang.language as T`` / ``tilelang.testing`` import tile2triton."""
    import tile2triton
    import tile2triton.language
    import tile2triton.profiler
    import tile2triton.testing  # noqa: F401 - TileLang scripts use tilelang.testing without importing it

    # TileLang exposes these at the top level; keep tile2triton's own if it already has them
    for name in ("TensorSupplyType",):
        if not hasattr(tile2triton, name):
            setattr(tile2triton, name, getattr(tile2triton.profiler, name))
    for name in [n for n in sys.modules if n == "tilelang" or n.startswith("tilelang.")]:
        del sys.modules[name]
    sys.modules["tilelang"] = tile2triton
    # Every module tile2triton has loaded is already imported under its TileLang name, as TileLang's
    # own package imports its submodules at init: a first ``from tilelang.jit import JITImpl`` would
    # otherwise rebind ``tilelang.jit`` (the decorator) to the module it loaded.
    for name, module in list(sys.modules.items()):
        alias = "tilelang" + name[len("tile2triton") :]
        if name.startswith("tile2triton.") and not any(alias == n or alias.startswith(n + ".") for n in NOT_ALIASED):
            sys.modules[alias] = module
    if not any(isinstance(f, TileLangAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TileLangAliasFinder())
    tile2triton.tvm.install_as_tvm()  # bare `import tvm`, only where no real TVM is installed
    tile2triton.tvm.install_as_tvm_ffi()  # likewise `import tvm_ffi` (Map, Array)


# ----------------------------------------------------------------------------- loading user files
def _split_target(target: str) -> tuple[str, str | None]:
    path, sep, name = target.partition("::")
    return path, (name or None) if sep else None


def _check_file(path: str) -> None:
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}")
    if os.path.isdir(path) or not path.endswith(".py"):
        raise UsageError(f"expected a Python file (FILE.py), got {path}")


def load_user_module(path: str):
    """Import the user's file (its top-level code runs), with ``tilelang`` resolved to tile2triton."""
    _check_file(path)
    install_tilelang_alias()
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    modname = "_t2t_user_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        if "tile2triton.eager" in str(exc) or getattr(exc, "name", None) == "tile2triton.eager":
            raise UsageError(
                f"{path} defines an eager-style kernel (no inner @T.prim_func), which this tile2triton build "
                "does not support yet (tile2triton.eager is missing)"
            ) from None
        raise _UserCodeError(path, exc) from exc
    except SyntaxError as exc:
        raise UsageError(f"{exc.filename}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
        from .errors import Tile2TritonError

        if isinstance(exc, Tile2TritonError):
            raise
        raise _UserCodeError(path, exc) from exc
    return module


class _UserCodeError(Exception):
    def __init__(self, path, exc):
        self.path = path
        self.exc = exc
        where = ""
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            if os.path.abspath(frame.filename) == os.path.abspath(path):
                where = f"{_short(frame.filename)}:{frame.lineno}: "
                break
        super().__init__(f"{where}{type(exc).__name__}: {exc}")


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass(frozen=True)
class FoundKernel:
    """A kernel found in a file's source (not executed): what it is, where, and its parameters."""

    name: str
    kind: str  # LAZY, EAGER, PRIM_FUNC, FACTORY or COMPILED
    line: int
    params: str | None = None  # the parameter list as written, for the kinds that take arguments

    def describe(self) -> str:
        call = f"({self.params})" if self.params is not None else ""
        return f"{self.name}{call}  [{self.kind}, line {self.line}]"


LAZY = "lazy factory"
EAGER = "eager kernel"
PRIM_FUNC = "@T.prim_func"
FACTORY = "factory returning a @T.prim_func"
COMPILED = "compiled kernel"


def _decorator_names(node) -> set[str]:
    """The last component of each decorator's name: ``@tilelang.jit(out_idx=[-1])`` -> ``jit``."""
    names = set()
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _params_text(args: ast.arguments) -> str:
    """A function's parameters as ``inspect.signature`` prints them, from the AST."""
    parts = []

    def one(a: ast.arg, default) -> str:
        text = a.arg + (f": {ast.unparse(a.annotation)}" if a.annotation is not None else "")
        if default is not None:
            text += (" = " if a.annotation is not None else "=") + ast.unparse(default)
        return text

    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for k, (a, d) in enumerate(zip(positional, defaults)):
        parts.append(one(a, d))
        if args.posonlyargs and k == len(args.posonlyargs) - 1:
            parts.append("/")
    if args.vararg is not None:
        parts.append("*" + one(args.vararg, None))
    elif args.kwonlyargs:
        parts.append("*")
    parts += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg is not None:
        parts.append("**" + one(args.kwarg, None))
    return ", ".join(parts)


def _is_main_guard(node) -> bool:
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _top_level(body: list):
    """The module's top-level statements, looking into if/try blocks (not the __main__ guard)."""
    for node in body:
        if isinstance(node, ast.If):
            if not _is_main_guard(node):
                yield from _top_level(node.body)
                yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _top_level(block)
        else:
            yield node


def _tilelang_imports(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Local names of the tilelang / tile2triton modules, and of their ``compile`` function."""
    modules, compiles = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("tilelang", "tile2triton"):
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.ImportFrom) and node.module in ("tilelang", "tile2triton"):
            compiles.update(a.asname or a.name for a in node.names if a.name == "compile")
    return modules, compiles


def scan_kernels(path: str) -> dict[str, FoundKernel]:
    """The kernels a file defines, found from its source without running it.

    Listed: ``@tilelang.jit`` functions (lazy factories returning a ``@T.prim_func``, or eager
    kernels), bare ``@T.prim_func``s, plain functions that define and return a ``@T.prim_func``,
    and top-level ``name = tilelang.compile(...)`` / ``name = factory(...)`` kernels.
    """
    from .frontend.source import has_inner_prim_func

    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise UsageError(f"{_short(path)}:{exc.lineno}: syntax error: {exc.msg}") from None
    found: dict[str, FoundKernel] = {}
    modules, compiles = _tilelang_imports(tree)
    for node in _top_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            decorators = _decorator_names(node)
            line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            params = _params_text(node.args)
            if "jit" in decorators:
                kind = LAZY if has_inner_prim_func(node) else EAGER
                found[node.name] = FoundKernel(node.name, kind, line, params)
            elif "prim_func" in decorators:
                found[node.name] = FoundKernel(node.name, PRIM_FUNC, line)
            elif has_inner_prim_func(node) and any(
                isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node)
            ):
                found[node.name] = FoundKernel(node.name, FACTORY, line, params)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            callee = node.value.func
            is_kernel = (  # tilelang.compile(...), or a call of a factory found above
                isinstance(callee, ast.Attribute)
                and callee.attr == "compile"
                and isinstance(callee.value, ast.Name)
                and callee.value.id in modules
            ) or (
                isinstance(callee, ast.Name)
                and (callee.id in compiles or (callee.id in found and found[callee.id].kind in (LAZY, FACTORY)))
            )
            for target in node.targets:
                if is_kernel and isinstance(target, ast.Name) and not target.id.startswith("_"):
                    found[target.id] = FoundKernel(target.id, COMPILED, node.lineno)
    return found


def parse_args_list(items) -> dict:
    values = {}
    for item in items or []:
        for part in _split_assignments(item):
            key, sep, text = part.partition("=")
            key = key.strip()
            if not sep or not key.isidentifier():
                raise UsageError(f"--arg expects NAME=VALUE (e.g. --arg M=1024), got {part!r}")
            try:
                value = ast.literal_eval(text.strip())
            except (ValueError, SyntaxError):
                value = text.strip()  # a bare word: a string such as a dtype name
            values[key] = value
    return values


def _split_assignments(item: str) -> list[str]:
    # "M=1,N=2" is accepted as two assignments, but "shape=(1, 2)" stays one
    parts, depth, cur = [], 0, ""
    for ch in item:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0 and "=" in cur:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def compile_named(value, name: str, args: dict, out_idx=None):
    """Turn a found kernel object plus --arg values into a JITKernel."""
    from .autotuner import AutoTuneImpl
    from .compiler import compile as compile_prim
    from .frontend.source import KernelSource
    from .jit import JITImpl

    if isinstance(value, AutoTuneImpl):
        # show prints one variant: the factory's --arg values (or its defaults), without timing the configs
        value = value.jit_impl
    if isinstance(value, JITImpl):
        sig = inspect.signature(value.func)
        if not value.lazy:
            # eager style: compile-time parameters and T.const sizes by name; dtypes from the annotations
            from .errors import KernelCallError, TileLangCompileError

            try:
                return value.compile(**args)
            except TileLangCompileError:
                raise
            except (KernelCallError, TypeError, ValueError, KeyError) as exc:
                raise UsageError(
                    f"{name}{sig}: {exc}; pass compile-time values and T.const sizes as --arg NAME=VALUE"
                ) from None
        try:
            sig.bind(**args)
        except TypeError as exc:
            raise UsageError(f"{name}{sig}: {exc}; pass factory arguments as --arg NAME=VALUE") from None
        return value.compile(**args)
    if isinstance(value, KernelSource):
        if args:
            raise UsageError(f"{name} is a @T.prim_func with no factory arguments; --arg is not accepted")
        return compile_prim(value, out_idx)
    if inspect.isfunction(value):  # a plain factory: call it, compile the @T.prim_func it returns
        sig = inspect.signature(value)
        try:
            sig.bind(**args)
        except TypeError as exc:
            raise UsageError(f"{name}{sig}: {exc}; pass factory arguments as --arg NAME=VALUE") from None
        prim = value(**args)
        if not isinstance(prim, KernelSource):
            raise UsageError(f"{name}(...) returned {type(prim).__name__}, not a @T.prim_func")
        return compile_prim(prim, out_idx)
    return value


# ----------------------------------------------------------------------------- output
def highlight(source: str, color: str, stream) -> str:
    if color == "never" or (color == "auto" and (not _isatty(stream) or current_settings().no_color)):
        return source
    try:
        from pygments import highlight as _hl
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return source
    return _hl(source, PythonLexer(), TerminalFormatter())


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# ----------------------------------------------------------------------------- commands
def cmd_show(ns) -> int:
    path, name = _split_target(ns.target)
    args = parse_args_list(ns.arg)
    _check_file(path)
    kernels = scan_kernels(path)  # from the source: listing runs nothing
    if name is None:
        if not kernels:
            print(
                f"{path}: no kernels found (looked for @tilelang.jit functions, @T.prim_funcs and "
                "functions returning a @T.prim_func)",
                file=sys.stderr,
            )
            return 1
        print(f"kernels in {path}:")
        for found in kernels.values():
            print("  " + found.describe())
        print(f"show one with: tile2triton show {path}::NAME --arg PARAM=VALUE ...")
        return 0
    if name not in kernels:
        import difflib

        close = difflib.get_close_matches(name, list(kernels), n=3)
        hint = (
            f"; did you mean {', '.join(close)}?" if close else (f"; kernels: {', '.join(kernels)}" if kernels else "")
        )
        raise UsageError(f"{path} has no kernel named '{name}'{hint}")
    out_idx = parse_out_idx(ns.out_idx)
    module = load_user_module(path)
    if not hasattr(module, name):
        raise UsageError(
            f"{path} defines {name} (line {kernels[name].line}) but importing it did not bind the name at the top level"
        )
    kernel = compile_named(getattr(module, name), name, args, out_idx)
    card = getattr(ns, "card", None)
    if card is not None and ns.interpret:
        raise UsageError("--interpret and --target name two variants: give one")
    if card is not None or getattr(ns, "compile", False):
        module = _module_for_card(kernel, card)
    else:
        module = kernel.lowered(ns.interpret)
    sys.stdout.write(highlight(module.source, ns.color, sys.stdout))
    if getattr(ns, "compile", False):
        _report_offline_compile(module, card)
    return 0


def _module_for_card(kernel, card: str | None):
    """The source for the card ``--target`` names (this machine's GPU, else sm_90, when unnamed)."""
    from .runtime.target import parse_target

    try:
        spec = parse_target(card or "auto")
    except ValueError as exc:
        raise UsageError(f"--target {card}: {exc}") from None
    return kernel.lowered_for(spec)


def _report_offline_compile(module, card: str | None) -> None:
    """``--compile``: build the shown source with Triton for the card, offline; report per kernel."""
    from .runtime.target import compile_offline, parse_target

    spec = parse_target(card or "auto")
    if spec.backend == "cpu":
        raise UsageError("--compile builds for a GPU: name one with --target (sm_90, gfx942, ...)")
    binary = "cubin" if spec.backend == "cuda" else "hsaco"
    for k in compile_offline(module, spec):
        parts = [f"{k['bytes']:,} bytes of {binary}"]
        if k["registers"] is not None:
            parts.append(f"{k['registers']} registers a thread")
        if k["spills"] is not None:
            parts.append(f"{k['spills']} spilled")
        if k["shared"] is not None:
            parts.append(f"{k['shared']:,} bytes of shared memory")
        print(f"# compiled for {spec.arch}: {k['name']}: {', '.join(parts)}")


def parse_out_idx(text):
    if text is None:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise UsageError(f"--out-idx expects an int or a list of ints, got {text!r}") from None
    return value


def cmd_run(ns) -> int:
    script = ns.script
    if not os.path.exists(script):
        raise UsageError(f"no such file: {script}")
    if os.path.isdir(script):
        raise UsageError(f"expected a Python script, got a directory: {script}")
    install_tilelang_alias()
    if ns.device == "cpu":
        from .cuda_as_cpu import map_cuda_to_cpu

        if map_cuda_to_cpu():  # the script's own @triton.jit kernels run on the interpreter too
            os.environ.setdefault("TRITON_INTERPRET", "1")
    script = os.path.abspath(script)
    sys.argv = [script, *ns.args]
    sys.path.insert(0, os.path.dirname(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except (AssertionError, RuntimeError) as exc:
        reason = _cuda_missing(exc)
        if reason is None:
            raise
        where = _user_line(exc.__traceback__, script)
        if ns.device == "cpu":  # a CUDA call the CPU mapping has no counterpart for
            advice = "--device cpu maps CUDA tensors, timing and streams onto the CPU, not this call"
        else:
            advice = f"run it on the CPU with: tile2triton run --device cpu {_short(ns.script)} ..."
        print(f"tile2triton: error: {where}needs CUDA ({reason}), and this machine has none; {advice}", file=sys.stderr)
        return 1
    return 0


# what torch says when a script asks for CUDA on a machine without it
_NO_CUDA = ("Torch not compiled with CUDA enabled", "Found no NVIDIA driver", "No CUDA GPUs are available")


def _cuda_missing(exc: BaseException) -> str | None:
    text = str(exc)
    return next((m for m in _NO_CUDA if m in text), None)


def _user_line(tb, script: str) -> str:
    """``file:line: `` of the script's deepest frame in the traceback ('' when there is none)."""
    found = ""
    for frame, line in traceback.walk_tb(tb):
        name = frame.f_code.co_filename
        if os.path.abspath(name) == script or not (
            name.startswith("<")
            or os.sep + "site-packages" + os.sep in name
            or name.startswith(os.path.dirname(__file__))
        ):
            found = f"{_short(name)}:{line}: "
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tile2triton",
        description="TileLang -> Triton: print the Triton source generated for a TileLang kernel, "
        "or run an unmodified TileLang script on Triton.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    show = sub.add_parser(
        "show",
        help="print the generated Triton source of a kernel (or list a file's kernels)",
        description="Print the Triton source generated for FILE.py::NAME. Without ::NAME, list the kernels in "
        "FILE.py, read from its source without running it. Showing one kernel imports FILE.py, so its "
        'top-level code runs: keep script code under  if __name__ == "__main__":',
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    show.add_argument("target", metavar="FILE.py[::NAME]")
    show.add_argument(
        "--arg",
        action="append",
        metavar="NAME=VALUE",
        help="a factory argument (repeatable; values are Python literals, bare words are strings)",
    )
    show.add_argument(
        "--interpret",
        action="store_true",
        help="show the variant generated for Triton's CPU interpreter instead of the GPU one",
    )
    show.add_argument(
        "--target",
        dest="card",
        metavar="ARCH",
        help="show the source generated for this card, on any machine: sm_80, sm_89, sm_90, sm_100, sm_120, "
        "gfx942, gfx950, gfx1100, ... (or cuda, hip)",
    )
    show.add_argument(
        "--compile",
        action="store_true",
        help="also compile it with Triton for that card, offline, and report each kernel's binary size, "
        "registers and shared memory",
    )
    show.add_argument("--out-idx", metavar="IDX", help="out_idx for a top-level @T.prim_func (e.g. -1 or [2])")
    show.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="syntax highlighting (auto: on a terminal, when pygments is installed)",
    )
    run = sub.add_parser(
        "run",
        help="run a TileLang script with 'tilelang' resolved to tile2triton",
        description="Run SCRIPT.py as __main__ with 'import tilelang', 'import tilelang.language as T', "
        "'tilelang.testing', ... resolved to tile2triton. ARGS are passed to the script as sys.argv[1:].",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "--device",
        choices=("auto", "cpu"),
        default="auto",
        help="cpu: run a script written for CUDA on this machine's CPU (device='cuda', .cuda() and "
        "torch.cuda.synchronize/Event mapped onto the CPU; kernels run on Triton's interpreter)",
    )
    run.add_argument("script", metavar="SCRIPT.py")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    fix = sub.add_parser(
        "fix-annotations",
        help="rewrite call-form annotations T.Tensor((M, K), dtype) to T.Tensor[(M, K), dtype] (what type checkers accept)",
        description="Rewrite TileLang's call-form parameter annotations, A: T.Tensor((M, K), dtype), to the "
        "subscript form A: T.Tensor[(M, K), dtype], in place. Both compile the same; pyright and mypy "
        "report every call inside an annotation. Only the brackets change; the rest of the file stays byte "
        "for byte.",
    )
    fix.add_argument("files", nargs="+", metavar="FILE.py")
    fix.add_argument("--check", action="store_true", help="change nothing; exit 1 when a file would change")
    return parser


def cmd_fix_annotations(ns) -> int:
    from .fix_annotations import fix_file

    changed = 0
    for path in ns.files:
        _check_file(path)
        try:
            result = fix_file(path, check=ns.check)
        except SyntaxError as exc:
            raise UsageError(f"{path}:{exc.lineno}: not valid Python: {exc.msg}") from None
        verb = "would rewrite" if ns.check else "rewrote"
        note = f"; left {len(result.skipped)} with keyword arguments (lines {', '.join(map(str, result.skipped))})"
        print(f"{path}: {verb} {result.rewritten} annotation(s){note if result.skipped else ''}")
        changed += bool(result.rewritten)
    return 1 if ns.check and changed else 0


class _Parser(argparse.ArgumentParser):
    pass


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        ns = _parse(parser, argv)
    except UsageError as exc:
        print(f"tile2triton: error: {exc}", file=sys.stderr)
        return 2
    if ns.version:
        from ._version import __version__

        print(f"tile2triton {__version__}")
        return 0
    if ns.command is None:
        parser.print_help()
        return 2
    if ns.command == "fix-annotations":  # source to source: no torch, no Triton
        try:
            return cmd_fix_annotations(ns)
        except UsageError as exc:
            print(f"tile2triton: error: {exc}", file=sys.stderr)
            return 2
    import tile2triton  # the API (deferred when the process started as --help, see __init__.py)

    tile2triton._load_all()
    from .errors import Tile2TritonError

    try:
        return (cmd_show if ns.command == "show" else cmd_run)(ns)
    except UsageError as exc:
        print(f"tile2triton: error: {exc}", file=sys.stderr)
        return 2
    except Tile2TritonError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except _UserCodeError as exc:
        print(f"tile2triton: error: importing {_short(exc.path)} failed: {exc}", file=sys.stderr)
        print(
            '  (showing a kernel imports its file; keep script code under  if __name__ == "__main__":)',
            file=sys.stderr,
        )
        return 1
    except BrokenPipeError:
        return 0


def _parse(parser, argv):
    """argparse, but usage errors become one line instead of usage + message."""

    def fail(message):
        raise UsageError(message)

    parser.error = fail
    for action in parser._actions:  # noqa: SLF001 - subparsers need the same treatment
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sp in action.choices.values():
                sp.error = fail
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
