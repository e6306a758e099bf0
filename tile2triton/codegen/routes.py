"""Routes: whole-function lowerings tried before the ``tl`` lowering (codegen/emit.py).

A route is a plug-in over the shared machinery: ``plan`` looks at the function and the lowering
options and returns its plan, or a :class:`Refusal` saying why not (``TILE2TRITON_GLUON=log`` prints
the reasons); ``emit`` turns the plan into a :class:`~tile2triton.codegen.module.TritonModule`.
``emit_module`` takes the first route whose plan is not a refusal; a function every route refuses
gets the ``tl`` lowering. Routes register themselves with :func:`register` when their module is
imported (codegen/gluon_routes.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .. import ir
from .module import TritonModule


@dataclass(frozen=True)
class Refusal:
    """Why a route does not take a function. ``tried``: the route was enabled for these options and
    looked at the function (a refusal of a disabled route says nothing about the kernel)."""

    route: str
    reason: str
    loc: ir.Loc | None = None
    tried: bool = True


class Route(Protocol):
    name: str
    description: str  # how a log line names what the function was lowered to

    def plan(self, func: ir.PrimFunc, options) -> object | Refusal: ...

    def emit(self, plan, options) -> TritonModule: ...


ROUTES: list[Route] = []


def register(route: Route) -> Route:
    if any(r.name == route.name for r in ROUTES):
        raise ValueError(f"a route named {route.name!r} is registered already")
    ROUTES.append(route)
    return route
