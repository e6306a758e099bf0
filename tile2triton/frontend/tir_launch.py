"""TIR's launch loops outside a T.Kernel (``T.thread_binding`` over blockIdx / threadIdx) as a kernel."""

from __future__ import annotations

import ast

from .. import ir
from .rules import RULES
from .rules_base import BinderLike

_LAUNCH_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


def tir_launch(b: BinderLike, node: ast.For) -> None:
    """TIR's launch loops outside a T.Kernel: ``for bx in T.thread_binding(n, thread="blockIdx.x"):``
    nested with the ``threadIdx`` ones, directly, are the kernel's grid and threads (as TVM's
    thread-binding loops launch it); the innermost loop's body runs in the thread view."""
    loops, current = [], node
    while True:
        it = current.iter
        fn = b.expr(it.func) if isinstance(it, ast.Call) else None
        if getattr(fn, "__t2t__", None) != "thread_binding":
            break
        args = b.call_args(fn, it)
        start, stop, thread = args["start"], args["stop"], args["thread"]
        if stop is None:
            start, stop = 0, start
        if start != 0 or thread not in _LAUNCH_AXES or not isinstance(current.target, ast.Name):
            raise b.error(
                "TIR launch loops bind one name each over T.thread_binding(n, thread=...) of blockIdx.x/y/z or "
                "threadIdx.x/y/z, from 0",
                current,
            )
        if any(t == thread for _, t, _, _ in loops):
            raise b.error(f"{thread} is bound twice by the launch loops", current)
        loops.append((current.target.id, thread, stop, current))
        body = [s for s in current.body if not _is_docstring(s)]
        if len(body) != 1 or not isinstance(body[0], ast.For) or body[0].orelse:
            break
        current = body[0]
    innermost = loops[-1][3]
    grid, extents = [], []
    for kind, axes in ((grid, "blockIdx"), (extents, "threadIdx")):
        bound = {t[-1]: e for _, t, e, _ in loops if t.startswith(axes)}
        if bound and sorted(bound) != list("xyz")[: len(bound)]:
            raise b.error(f"the {axes} launch loops must bind x first, then y, then z", node)
        kind.extend(bound[a] for a in sorted(bound))
    b.cluster_dims = None
    grid = grid or [1]

    def bind_targets(block_vars):
        for name, thread, _, loop in loops:
            if thread.startswith("blockIdx"):
                var = block_vars["xyz".index(thread[-1])]
                var.name = name
                b.bind_name(name, ir.VarRef(var))
            else:
                fn = b.expr(loop.iter.func)
                b.bind_name(name, RULES["thread_binding"](b, loop.iter, b.call_args(fn, loop.iter)))

    b.open_kernel(node, node.iter, grid, tuple(extents) or (1,), bind_targets, innermost.body)


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
