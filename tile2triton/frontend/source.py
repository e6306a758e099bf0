"""Parse: find a kernel function's source, its AST and the Python names it can see."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ..language import _sources


class LiveScope(Mapping):
    """The names a function sees: its closure cells, then its module's globals, both read when
    the kernel is compiled (TileLang reads them then too), not when it was decorated."""

    def __init__(self, cells: dict, globals_: dict):
        self.cells, self.globals = cells, globals_

    def __getitem__(self, name):
        cell = self.cells.get(name)
        if cell is not None:
            try:
                return cell.cell_contents
            except ValueError:  # an unfilled cell: a name the enclosing function has not bound
                raise KeyError(name) from None
        return self.globals[name]

    def __contains__(self, name) -> bool:
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __iter__(self):
        yield from self.cells
        yield from (n for n in self.globals if n not in self.cells)

    def __len__(self) -> int:
        return len(self.cells) + sum(1 for n in self.globals if n not in self.cells)


@dataclass
class FunctionSource:
    """A user function as tile2triton sees it: AST with file line numbers, plus its scope."""

    func: object
    tree: ast.FunctionDef
    file: str
    scope: Mapping = field(default_factory=dict)  # closure cells over globals (a LiveScope)
    symbol: str | None = None  # the kernel's name where ``with_attr("global_symbol", ...)`` set one

    @classmethod
    def from_function(cls, func):
        try:
            file = inspect.getsourcefile(func) or inspect.getfile(func)
            lines = None if id(func.__code__) in _TREES else inspect.findsource(func)[0]
        except (OSError, TypeError) as exc:
            from ..errors import Tile2TritonError

            raise Tile2TritonError(
                f"tile2triton reads a kernel's Python source, and the source of {getattr(func, '__qualname__', func)!r} "
                f"is not available ({exc}): define kernels in a .py file, not in an interactive session or exec()"
            ) from None
        tree = _function_tree(func.__code__, file, lines)
        cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
        return cls(func, tree, file, LiveScope(cells, func.__globals__))

    @property
    def name(self) -> str:
        return self.symbol or self.func.__name__


# id(code object) -> (the code object, its FunctionDef): a factory builds the same inner kernel many
# times from one code object. Keyed by identity, the code kept alive so that its id stays its own:
# code objects compare equal without their file and without annotations that are not evaluated
# (a local's ``A: T.Tensor(..., "float16")``), so an equal one may be another kernel's, or this
# file's before an edit and a reload.
_TREES: dict = {}
_MODULES: dict = {}  # file -> (source lines, parsed module)


def _function_tree(code, file: str, lines: list) -> ast.FunctionDef:
    """The function's AST with file line numbers: found in the file's module AST (parsed once
    per file), or, where that fails (source that does not parse as a whole), its own block."""
    cached_tree = _TREES.get(id(code))
    if cached_tree is not None:
        return cached_tree[1]
    cached = _MODULES.get(file)
    if cached is None or cached[0] is not lines:
        try:
            cached = (lines, ast.parse("".join(lines)))
        except SyntaxError:
            cached = (lines, None)
        _MODULES[file] = cached
    first = code.co_firstlineno  # the first decorator's line, or the def's
    tree = None
    if code.co_name == "<lambda>":
        tree = _lambda_tree(code, cached[1])
        if tree is None:
            raise OSError("its lambda could not be found in the source (several lambdas on one line?)")
    elif cached[1] is not None:
        for node in ast.walk(cached[1]):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
                start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                if start == first:
                    tree = node
                    break
    if tree is None:
        tree = _block_tree(lines, first - 1)
    _TREES[id(code)] = (code, tree)
    return tree


def _lambda_tree(code, module: ast.Module | None) -> ast.FunctionDef | None:
    """A lambda as ``def <lambda>(args): return body``: TileLang calls it while building the kernel,
    so a lambda handed kernel values is inlined like any helper.  Among the lambdas on its line,
    the one whose body holds the code object's instruction positions is it."""
    if module is None:
        return None
    spots = {(p[0], p[2]) for p in code.co_positions() if p[0] is not None and p[2] is not None}
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]

    def holds(lam: ast.Lambda) -> int:
        b = lam.body
        return sum((b.lineno, b.col_offset) <= spot <= (b.end_lineno, b.end_col_offset) for spot in spots)

    candidates = [
        n for n in ast.walk(module)
        if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno
        and tuple(a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs) == params
    ]  # fmt: skip
    if not candidates:
        return None
    lam = max(candidates, key=holds)
    if len(candidates) > 1 and sorted(map(holds, candidates))[-2] == holds(lam):
        return None  # two lambdas alike on one line: not distinguishable
    ret = ast.copy_location(ast.Return(lam.body), lam.body)
    fn = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        fn.type_params = []
    return ast.fix_missing_locations(ast.copy_location(fn, lam))


def _block_tree(lines: list, first: int) -> ast.FunctionDef:
    block = inspect.getblock(lines[first:])
    text = textwrap.dedent("".join(block))
    indent = len(block[0]) - len(block[0].lstrip())
    module = ast.parse(text)
    ast.increment_lineno(module, first)
    if indent:
        for node in ast.walk(module):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
                if getattr(node, "end_col_offset", None) is not None:
                    node.end_col_offset += indent
    return next(n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


class KernelSource(FunctionSource):
    """What ``@T.prim_func`` returns: a kernel not yet bound."""

    # how a kernel is bound (``compiler.bind_kernel_source``, which sets it when imported: the
    # binder imports this module, so this module cannot import the binder)
    binder: ClassVar[Callable | None] = None
    # what TileLang rejects while it builds a prim_func (it runs the body at decoration), checked
    # at decoration too where the arguments are known then (frontend/rules_atomic.py registers them)
    definition_checks: ClassVar[list[Callable]] = []

    @classmethod
    def decorated(cls, func) -> KernelSource:
        """What ``@T.prim_func`` returns."""
        source = cls.from_function(func)
        for check in cls.definition_checks:
            check(source)
        return source

    @property
    def attrs(self) -> dict:
        """TileLang's PrimFunc attributes: ``global_symbol``; ``tilelang_out_idx`` (negative indices)
        when the kernel returns T.empty outputs; ``tilelang_pass_configs`` / ``tilelang_compile_flags``
        from T.annotate_pass_configs / T.annotate_compile_flags.  Binds the kernel (errors surface here)."""
        prim = KernelSource.binder(self)
        attrs = {"global_symbol": self.name, **prim.attrs}
        if prim.out_idx:
            attrs["tilelang_out_idx"] = [i - len(prim.params) for i in prim.out_idx]
        return attrs

    @property
    def params(self) -> list:
        """TileLang's ``PrimFunc.params``: the kernel's parameters in order (tensors and scalars, each with
        its ``name``; T.empty outputs last).  Binds the kernel (errors surface here)."""
        return list(KernelSource.binder(self).params)

    def with_attr(self, key: str, value) -> KernelSource:
        """TVM's ``PrimFunc.with_attr``: a copy with the attribute set.  ``global_symbol`` (the
        kernel's name) is the one attribute a kernel's compilation reads from here; the others
        TileLang's passes read have no counterpart, so they are refused rather than ignored."""
        if key != "global_symbol":
            raise TypeError(
                f"{self.name}.with_attr({key!r}, ...): tile2triton sets only 'global_symbol' this way; "
                "pass configs go to tilelang.compile(..., pass_configs=...) or T.annotate_pass_configs"
            )
        return dataclasses.replace(self, symbol=str(value))

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{self.name} is a @T.prim_func; compile it with tilelang.compile(...) or return it from a @tilelang.jit factory"
        )


class MacroSource(FunctionSource):
    """What ``@T.macro`` returns: a helper inlined at each call inside a kernel."""

    def __call__(self, *args, **kwargs):
        # outside a kernel body, as T.* primitives do (an eager @tilelang.jit body calling a macro
        # that opens T.Kernel is told apart from a lazy factory this way: jit.py, _decide)
        from ..language import KernelOnlyError

        raise KernelOnlyError(
            f"T.macro {self.name} can only be called inside a @T.prim_func or @tilelang.jit kernel body"
        )


def has_inner_prim_func(tree: ast.FunctionDef) -> bool:
    """TileLang's lazy-style test: does the function body define an inner @T.prim_func?"""
    for node in ast.walk(tree):
        if node is tree or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if isinstance(target, ast.Attribute) and target.attr == "prim_func":
                return True
            if isinstance(target, ast.Name) and target.id == "prim_func":
                return True
    return False


# ``@T.prim_func`` / ``@T.macro`` (``language/__init__.py``) return these
_sources.register_reader("prim_func", KernelSource.decorated)
_sources.register_reader("macro", MacroSource.from_function)


def shape_text(call: ast.Call, shape: tuple) -> str:
    """An allocation's shape as the user wrote it (``(64 * (i + 1), 8)``) where a dimension is not a
    number the binder knows, else as its values."""
    if all(isinstance(d, int) for d in shape):
        return str(shape)
    node = next((k.value for k in call.keywords if k.arg == "shape"), call.args[0] if call.args else None)
    return f"{ast.unparse(node)} (not a compile-time constant)" if node is not None else str(shape)
