"""``for bx, by in T.Persistent(domain, wave_size, index, group_size=8):``, a persistent kernel's loop over
tiles: block ``index`` of ``wave_size`` blocks visits tiles ``index``, ``index + wave_size``, ... of the grid
``domain``, in an order that groups ``group_size`` consecutive tiles of the last axis (an L2-friendly swizzle).

Bound as a serial loop over the waves and index arithmetic (no IR of its own)::

    for wave in range(ceildiv(padded, wave_size)):
        tile = wave * wave_size + index
        # tile, row-major over (ceildiv(last, group), domain[0], ..., domain[-2], group):
        #   (group_index, c0, ..., c[n-2], in_group); the last coordinate = group_index * group + in_group
        if last < domain[-1]:   # the last group may be partial; padded = that grid's size
            body

``group`` is ``group_size`` clamped to ``[1, domain[-1]]``.  TileLang's loop also breaks out once
``tile >= padded``; that can only happen in the last wave, where the bound check skips the body as
well (past ``padded`` the group index is past the last group), so the two loops run the same tiles.
"""

from __future__ import annotations

import ast
import operator

from .. import ir
from ..ir import BOOL, INT32
from ..ir.exprs import as_expr, const_int, is_python_value

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def persistent_loop(b, node: ast.For, fn, it: ast.Call) -> None:
    """Bind ``node`` (a ``for`` over ``T.Persistent(...)``) with the binder ``b`` (``bind.Binder``)."""
    args = b.call_args(fn, it)
    domain = args["domain"]
    if not isinstance(domain, (list, tuple)) or not domain:
        raise b.error("T.Persistent(domain, wave_size, index): domain is a non-empty list of tile counts", it)
    target = node.target
    names = [target] if isinstance(target, ast.Name) else getattr(target, "elts", None)
    if not names or not all(isinstance(n, ast.Name) for n in names) or len(names) != len(domain):
        raise b.error(f"T.Persistent over a {len(domain)}-axis domain binds {len(domain)} names", target)
    group_size = args["group_size"]
    for what, value in (("wave_size", args["wave_size"]), ("index", args["index"]), ("group_size", group_size),
                        *((f"domain[{i}]", d) for i, d in enumerate(domain))):  # fmt: skip
        if value is None or isinstance(value, bool) or not (isinstance(value, int) or as_expr(value).dtype.is_int):
            raise b.error(f"T.Persistent: {what} must be an integer, got {value!r}", it)
    if isinstance(args["wave_size"], int) and args["wave_size"] <= 0:
        raise b.error(f"T.Persistent: wave_size must be positive, got {args['wave_size']}", it)

    def arith(op: str, x, y):
        return b.binop(op, _OPS[op], x, y, it)

    loc = b.loc(node)

    def named(hint: str, value):
        """A size known only at launch, computed once before the loop under a name."""
        if is_python_value(value):
            return value
        var = ir.Var(b.fresh_name(hint), as_expr(value).dtype, "let")
        b.emit(ir.Let(loc, var, as_expr(value)))
        return ir.VarRef(var)

    last_extent = domain[-1]
    if is_python_value(group_size) and is_python_value(last_extent):
        group = max(1, min(group_size, last_extent))
    else:
        clamped = ir.Call("min", (as_expr(group_size), as_expr(last_extent)), INT32)
        group = named("group", ir.Call("max", (clamped, const_int(1)), INT32))
    groups = arith("//", arith("-", arith("+", last_extent, group), 1), group)
    grouped = [groups, *domain[:-1], group]  # the padded grid the tile index runs over, row-major
    padded = grouped[0]
    for extent in grouped[1:]:
        padded = arith("*", padded, extent)
    waves = named("waves", arith("//", arith("-", arith("+", padded, args["wave_size"]), 1), args["wave_size"]))

    wave = ir.Var(b.fresh_name("wave"), INT32, "loop")
    tile = ir.Var(b.fresh_name("tile"), INT32, "let")
    lets = [ir.Let(loc, tile, as_expr(arith("+", arith("*", ir.VarRef(wave), args["wave_size"]), args["index"])))]
    indices = [None] * len(grouped)
    rest = ir.VarRef(tile)
    for axis in range(len(grouped) - 1, 0, -1):
        indices[axis] = arith("%", rest, grouped[axis])
        rest = arith("//", rest, grouped[axis])
    indices[0] = rest
    coords = [*indices[1:-1], arith("+", arith("*", indices[0], group), indices[-1])]
    coord_vars = [ir.Var(b.fresh_name(n.id), INT32, "let") for n in names]
    lets += [ir.Let(loc, var, as_expr(value)) for var, value in zip(coord_vars, coords)]

    body = b.bind_loop_body(node.body, {n.id: ir.VarRef(v) for n, v in zip(names, coord_vars)}, "serial")
    in_range = ir.Compare("<", ir.VarRef(coord_vars[-1]), as_expr(last_extent), BOOL)
    loop_body = [*lets, ir.If(loc, in_range, body, [])]
    b.emit(ir.For(loc, wave, const_int(0), as_expr(waves), const_int(1), "serial", loop_body, None))
