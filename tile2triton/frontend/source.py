"""Parse: find a kernel function's source, its AST and the Python names it can see."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field


@dataclass
class FunctionSource:
    """A user function as tile2triton sees it: AST with file line numbers, plus its scope."""

    func: object
    tree: ast.FunctionDef
    file: str
    scope: dict = field(default_factory=dict)  # closure cells over globals

    @classmethod
    def from_function(cls, func):
        try:
            file = inspect.getsourcefile(func) or inspect.getfile(func)
            lines, _ = inspect.findsource(func)
        except (OSError, TypeError) as exc:
            from ..errors import Tile2TritonError

            raise Tile2TritonError(
                f"tile2triton reads a kernel's Python source, and the source of {getattr(func, '__qualname__', func)!r} "
                f"is not available ({exc}): define kernels in a .py file, not in an interactive session or exec()"
            ) from None
        first = func.__code__.co_firstlineno - 1
        # Decorators come before co_firstlineno on 3.8+? No: co_firstlineno is the first decorator.
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
        tree = next(n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        scope = dict(func.__globals__)
        if func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                try:
                    scope[name] = cell.cell_contents
                except ValueError:  # an unfilled cell: defined after the function
                    pass
        return cls(func, tree, file, scope)

    @property
    def name(self) -> str:
        return self.func.__name__


class KernelSource(FunctionSource):
    """What ``@T.prim_func`` returns: a kernel not yet bound."""

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{self.name} is a @T.prim_func; compile it with tilelang.compile(...) or return it from a @tilelang.jit factory"
        )


class MacroSource(FunctionSource):
    """What ``@T.macro`` returns: a helper inlined at each call inside a kernel."""


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
