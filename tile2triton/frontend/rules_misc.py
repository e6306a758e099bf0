"""Binding rules of the remaining primitives: ``T.rng_*``, annotations (``T.annotate_*``,
``T.use_swizzle``), ``T.print``/``T.device_assert``, loop exits, ``T.evaluate``, the eager
``T.const``/``T.empty``, and clear errors for constructs used out of place.
"""

from __future__ import annotations

import ast
import weakref

from .. import ir
from ..ir import BOOL, INT32
from ..ir.evaluate import NotHostEvaluable, host_fn
from ..ir.exprs import as_expr
from ..language.dtypes import DTYPES, TypedLiteral
from ..layout import MetadataLayout
from .rules_base import BinderLike, DeclaredVar, rule

# T.rng_*: curand's Philox4_32_10 stream of T.rng_init(seed, seq, off) (curand_init's): draw d of it is
# lane d % 4 of Philox at the counter (d // 4, seq) under the key seed, the draws counted from the offset.
# A T.Parallel's elements take consecutive draws in row-major order (TileLang's order where one thread
# runs them all), each draw statement the next block of them.  The other generators (MRG32k3a,
# XORWOW) draw from the same Philox stream; normal and 64-bit draws are not curand's values.
# kernel -> ((seed, seq, counter vars), whether seq is TileLang's default: per thread in the thread view)
_RNG_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RNG_GENERATORS = ("curandStateMRG32k3a_t", "curandStatePhilox4_32_10_t", "curandStateXORWOW_t")


@rule("rng_init")
def bind_rng_init(b: BinderLike, node, args):
    if b.kernel is None:
        raise b.error("T.rng_init must stand inside a T.Kernel", node)
    if args["generator"] not in _RNG_GENERATORS:
        raise b.error(
            f"T.rng_init: unknown generator {args['generator']!r} (one of {', '.join(_RNG_GENERATORS)})", node
        )
    per_thread = args["seq"] is None
    if per_thread:
        args = dict(args, seq=_default_rng_seq(b))
    int64 = DTYPES["int64"]
    seed, seq, off = (ir.Cast(as_expr(args[k]), int64) for k in ("seed", "seq", "off"))
    for value, what in ((args["seed"], "seed"), (args["seq"], "seq"), (args["off"], "off")):
        if not (isinstance(value, int) or (isinstance(value, ir.Expr) and value.dtype.is_int)):
            raise b.error(f"T.rng_init: {what} must be an integer", node)
    state = tuple(ir.Var(b.fresh_name(f"rng_{what}"), int64, "let") for what in ("seed", "seq", "counter"))
    for var, value in zip(state, (seed, seq, off)):
        b.emit(ir.Let(b.loc(node), var, value))
    _RNG_STATE[b.kernel] = (state, per_thread)


def _default_rng_seq(b: BinderLike) -> ir.Expr:
    """TileLang's sequence number when ``seq`` is left out: ``tx + bx * threads``, one stream per
    thread. In the block view the block's draws are one stream (a T.Parallel's elements take
    consecutive draws), that of its first thread: ``bx * threads``; in the thread view (which a
    ``T.get_thread_binding`` after ``T.rng_init`` may open) each draw adds its thread's ``tx``."""
    extent = as_expr(b.kernel.thread_extents[0])  # T.get_thread_extent(): along threadIdx.x
    bx = ir.VarRef(b.kernel.block_vars[0]) if b.kernel.block_vars else as_expr(0)
    return ir.BinOp("*", bx, extent, INT32)  # + tx at each draw of the thread view (bind_rng_rand)


@rule("rng_rand", "rng_rand_float")
def bind_rng_rand(b: BinderLike, node, args, name):
    found = _RNG_STATE.get(b.kernel) if b.kernel is not None else None
    if found is None:
        raise b.error(f"T.{name} before T.rng_init in this kernel", node)
    state, per_thread = found
    seed, seq, counter = (ir.VarRef(v) for v in state)
    if per_thread and b.kernel.thread_vars:  # TileLang's default seq: tx + bx * threads
        seq = ir.BinOp("+", seq, ir.Cast(ir.VarRef(b.kernel.thread_vars[0]), seq.dtype), seq.dtype)
    if name == "rng_rand":
        return ir.Call("rng_rand", (seed, seq, counter), DTYPES["uint32"])
    bit, dist = args["bit"], args["dist"]
    if bit not in (32, 64) or dist not in ("uniform", "normal"):
        raise b.error(
            f"T.rng_rand_float(bit={bit!r}, dist={dist!r}): bit is 32 or 64, dist 'uniform' or 'normal'", node
        )
    dtype = DTYPES["float32" if bit == 32 else "float64"]
    return ir.Call(f"rng_{dist}", (seed, seq, counter), dtype)


@rule("annotate_safe_value")
def bind_annotate_safe_value(b: BinderLike, node, args):
    """The value out-of-bounds loads of a global tensor read (TileLang's ``safe_value_map``), kept on
    the block it is in: the kernel's (the whole T.Kernel) or a ``T.sblock``'s (rules_scopes.py)."""
    mapping = args["safe_value_map"]
    if b.kernel is None:
        raise b.error("T.annotate_safe_value must be inside a T.Kernel", node)
    values = getattr(b, "sblock_safe_values", None) or [b.kernel.safe_values]
    if not isinstance(mapping, dict):
        raise b.error("T.annotate_safe_value takes a dict {global tensor: value}", node)
    for buf, value in mapping.items():
        if not isinstance(buf, ir.Buffer) or buf.scope != ir.GLOBAL:
            raise b.error("T.annotate_safe_value keys must be global tensors (kernel parameters)", node)
        value = value.value if isinstance(value, TypedLiteral) else value
        if not isinstance(value, (bool, int, float)):
            raise b.error(f"the safe value of '{buf.name}' must be a compile-time number, got {value!r}", node)
        old = values[-1].get(buf.root)
        if old is not None and old != value:
            raise b.error(
                f"'{buf.name}' already has the safe value {old!r} in this block; "
                "a different one needs a block of its own (with T.sblock(...):)",
                node,
            )
        values[-1][buf.root] = value


@rule("annotate_layout")
def bind_annotate_layout(b: BinderLike, node, args):
    """Layouts are hints (Triton picks register and shared layouts), except a 2:4 metadata layout
    on a global tensor: it says the tensor's bytes are stored permuted, which would change E's meaning."""
    layouts = args["layout_map"]
    for buf, layout in layouts.items() if isinstance(layouts, dict) else ():
        if isinstance(layout, MetadataLayout) and isinstance(buf, ir.Buffer) and buf.scope == ir.GLOBAL:
            raise b.error(
                f"a metadata layout on the global tensor '{buf.name}' (E stored in CUTLASS's interleaved order) "
                "is not supported: T.gemm_sp reads E in row-major order",
                node,
                hint="make E with tilelang.utils.sparse.compress (row-major metadata) and drop this annotation",
            )


@rule("annotate_pass_configs", "annotate_compile_flags")
def bind_function_attr(b: BinderLike, node, args, name):
    """Kept on the function (PrimFunc.attrs, TileLang's attribute names): pass configs reach the
    kernel's options (TL_ENABLE_FAST_MATH); compile flags are for nvcc, which is not used here."""
    value = next(iter(args.values()))
    if name == "annotate_pass_configs":
        if not isinstance(value, dict):
            raise b.error("T.annotate_pass_configs takes a dict {PassConfigKey: value}", node)
        b.func_attrs.setdefault("tilelang_pass_configs", {}).update(value)
    else:
        flags = [value] if isinstance(value, str) else list(value)
        b.func_attrs.setdefault("tilelang_compile_flags", []).extend(flags)


# T.func_attr keys that change nothing tile2triton generates: TileLang's codegen hints (no aliasing
# between parameters, the vector width of copies, tensor-memory size, TMA use), the entry flag, the
# function's name and its target
_FUNC_ATTR_HINTS = (
    "tir.noalias", "tirx.noalias", "tl.copy_vectorize", "tl.tensor_mem_size", "tl.has_tma",
    "tir.is_entry_func", "tirx.is_entry_func", "global_symbol", "target",
)  # fmt: skip


@rule("func_attr")
def bind_func_attr(b: BinderLike, node, args):
    """``T.func_attr({...})``: kept in the function's attrs (PrimFunc.attrs) where it is a hint."""
    attrs = next(iter(args.values()))
    if not isinstance(attrs, dict) or not all(isinstance(key, str) for key in attrs):
        raise b.error("T.func_attr takes a dict {attribute name: value}", node)
    for key in attrs:
        if key not in _FUNC_ATTR_HINTS:
            raise b.error(
                f"T.func_attr: the attribute {key!r} is not supported (TileLang's passes read it); "
                f"tile2triton keeps only the hints {', '.join(_FUNC_ATTR_HINTS)}",
                node,
            )
    b.func_attrs.update(attrs)


@rule("import_source")
def bind_import_source(b: BinderLike, node, args):
    """``T.import_source(None)`` is nothing (TileLang's too); CUDA C source cannot run under Triton."""
    if args["source"] is not None:
        raise b.error(
            "T.import_source is not supported by tile2triton: raw C/CUDA source cannot run under Triton", node
        )


@rule("use_swizzle")
def bind_use_swizzle(b: BinderLike, node, args):
    panel, order, enable = args["panel_size"], args["order"], args["enable"]
    if b.kernel is None or not enable or len(b.kernel.grid) < 2:
        return None
    if not isinstance(panel, int) or panel <= 0 or order not in ("row", "column"):
        raise b.error("T.use_swizzle takes a positive int panel_size and order 'row' or 'column'", node)
    b.kernel.swizzle = (panel, order)
    return None


@rule("loop_break", "break_loop", "continue_loop")
def bind_loop_exit(b: BinderLike, node, args, name):
    b.loop_exit(ir.Continue if name == "continue_loop" else ir.Break, node)


@rule("print")
def bind_print(b: BinderLike, node, args):
    obj = args["obj"]
    b.emit(ir.Print(b.loc(node), None if obj is None else as_expr(obj) if not isinstance(obj, ir.Buffer) else obj,
                    args["msg"]))  # fmt: skip


@rule("device_assert")
def bind_device_assert(b: BinderLike, node, args):
    msg = args["msg"]
    if not isinstance(msg, str):
        raise b.error("T.device_assert's message must be a string", node)
    cond = as_expr(args["condition"], b.loc(node))
    b.emit(ir.DeviceAssert(b.loc(node), ir.Cast(cond, BOOL) if cond.dtype != BOOL else cond, msg))


@rule("evaluate")
def bind_evaluate(b: BinderLike, node, args):
    return None  # the expression was bound (and emitted what it does) as the argument


@rule("infinity", "max_value", "min_value")
def bind_typed_constant(b: BinderLike, node, args):
    raise b.error("the dtype argument must be a compile-time dtype", node)


@rule("Kernel", "ClusterKernel", "Parallel", "serial", "unroll", "Pipelined", "vectorized", "grid", "Persistent")
def bind_misplaced_construct(b: BinderLike, node, args):
    raise b.error("this construct belongs in a 'with' or 'for' statement", node)


@rule("alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", "alloc_reducer", "alloc_global")
def bind_misplaced_alloc(b: BinderLike, node, args):
    raise b.error("allocate buffers with 'name = T.alloc_...(...)'", node)


@rule("const")
def bind_const(b: BinderLike, node, args):
    if not b.eager:
        raise b.error(
            "T.const is for eager-style @tilelang.jit kernels (no inner @T.prim_func)", node,
            "in a @T.prim_func use a factory argument, or T.dynamic for a run-time size")  # fmt: skip
    return b.declare_const(args["name"], args["dtype"], node)


@rule("empty")
def bind_empty(b: BinderLike, node, args):
    if not b.eager:
        raise b.error("T.empty declares an output before the T.Kernel blocks: 'out = T.empty(shape, dtype)', "
                      "then 'return out'", node)  # fmt: skip
    raise b.error("assign T.empty to a name: 'B = T.empty(shape, dtype)', then 'return B'", node)


@rule("let")
def bind_let(b: BinderLike, node, args):
    """``T.let(v, value)``: ``v`` (a ``T.int32()`` declaration) holds ``value`` from here on, as
    TileLang's LetStmt binds it for the rest of the block; ``T.let(v, value, body)`` is the value of
    ``body`` with ``v`` bound (a Let expression: the binding is emitted before the statement)."""
    var = args["v"]
    if not isinstance(var, DeclaredVar):
        raise b.error("T.let binds a variable declared without a value (v = T.int32())", node)
    bound = _LET_BOUND.setdefault(b, set())
    if args["body"] is not None and var.var in bound:
        # the body was read with v's current value in mind: a second binding would change it after
        raise b.error("T.let(v, value, body) with a variable that an earlier T.let bound: declare a new one", node)
    value = as_expr(args["value"], b.loc(node))
    if value.dtype != var.dtype:
        value = ir.Cast(value, var.dtype)
    b.emit(ir.Let(b.loc(node), var.var, value))
    bound.add(var.var)
    return args["body"]


_LET_BOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # binder -> the variables T.let bound


@rule("assume")
def bind_assume(b: BinderLike, node, args):
    """``T.assume(cond)``: a fact the compiler may rely on, so results never depend on it here.  As in
    TileLang, the comparisons of it the host can evaluate (sizes and scalar parameters only:
    ``T.assume(N % 4 == 0)``) are checked at every call, a RuntimeError ``Assume: ...`` when one
    does not hold (``PrimFunc.attrs["host_assumes"]``: (op, lhs, rhs, text), runtime/plan.py)."""
    cond = args["cond"]
    if not isinstance(cond, ir.Expr):
        return None
    text = ast.unparse(node.args[0]) if node.args else ast.unparse(node.keywords[0].value)
    parts, stack = [], [cond]
    while stack:  # the conjuncts: each one that the host evaluates is a check
        e = stack.pop()
        if isinstance(e, ir.BinOp) and e.op == "and":
            stack += [e.rhs, e.lhs]
        else:
            parts.append(e)
    for e in parts:
        if isinstance(e, ir.Compare) and all(_host_evaluable(x) for x in (e.lhs, e.rhs)):
            b.func_attrs.setdefault("host_assumes", []).append((e.op, e.lhs, e.rhs, text))
    return None


def _host_evaluable(e) -> bool:
    try:
        host_fn(e)
    except NotHostEvaluable:
        return False
    return all(r.var.kind in ("size", "param") for r in ir.iter_expr_tree(e) if isinstance(r, ir.VarRef))
