"""Bind: walk a kernel's Python AST and build TileIR.

Compile-time Python (factory arguments, block sizes, ``if`` on constants, helper functions)
is evaluated here; everything that depends on kernel values becomes TileIR.  Each ``T.*``
primitive has one binding rule in ``RULES``.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import inspect
import operator

from .. import ir
from .. import language as T
from ..errors import TileLangCompileError
from ..language.dtypes import DTYPES, DType, TypedLiteral, dtype_error, lookup_dtype, promote
from ..language.proxy import TensorType, _TensorProxy
from .regions import const_int, extent_of, legalize_pairwise_extents, to_region, whole
from .source import FunctionSource, MacroSource

BOOL, INT32, FLOAT32 = DTYPES["bool"], DTYPES["int32"], DTYPES["float32"]

_PY_BINOPS = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", operator.pow),
    ast.BitAnd: ("&", operator.and_),
    ast.BitOr: ("|", operator.or_),
    ast.BitXor: ("^", operator.xor),
    ast.LShift: ("<<", operator.lshift),
    ast.RShift: (">>", operator.rshift),
}
_PY_CMPS = {
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
}
_ALLOC_SCOPES = {"alloc_shared": ir.SHARED, "alloc_fragment": ir.FRAGMENT, "alloc_local": ir.LOCAL}
UNARY_MATH = {
    "exp", "exp2", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "sin", "cos",
    "tan", "erf", "floor", "ceil", "round", "nearbyint", "trunc", "isnan", "isinf", "isfinite",
    "__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan",
}  # fmt: skip
_PREDICATES = {"isnan", "isinf", "isfinite"}


@functools.lru_cache(maxsize=1024)
def _signature(fn) -> inspect.Signature:
    return inspect.signature(fn)  # computed once per T.* primitive, not once per call site


class _Return(Exception):
    def __init__(self, value):
        self.value = value


def is_python_value(v) -> bool:
    return not isinstance(v, (ir.Expr, ir.Buffer, ir.Region, ir.Var))


def as_expr(value, loc: ir.Loc | None = None) -> ir.Expr:
    """Lift a compile-time Python value into a TileIR constant."""
    if isinstance(value, ir.Expr):
        return value
    if isinstance(value, ir.Var):
        return ir.VarRef(value)
    if isinstance(value, bool):
        return ir.Const(value, BOOL, weak=True)
    if isinstance(value, int):
        return ir.Const(value, INT32, weak=True)
    if isinstance(value, float):
        return ir.Const(value, FLOAT32, weak=True)
    if isinstance(value, TypedLiteral):
        return ir.Const(value.value if value.value is not None else 0, value.dtype)
    raise TileLangCompileError(f"{value!r} cannot be used as a kernel value", loc)


def is_weak(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.weak


def binary_dtype(op: str, a: ir.Expr, b: ir.Expr) -> DType:
    """TVM's typing of a binary op; Python literals adopt the other operand's type."""
    if op in ("and", "or"):
        return BOOL
    if is_weak(a) and not is_weak(b):
        a, b = b, a
    if is_weak(b) and not is_weak(a):
        if b.dtype.is_float and not a.dtype.is_float:
            return FLOAT32
        return a.dtype
    return promote(a.dtype, b.dtype)


class Binder:
    def __init__(self, source: FunctionSource):
        self.source = source
        self.file = source.file
        self.scopes: list[dict] = [{}]
        self.body_stack: list[list] = []
        self.kernel: ir.Kernel | None = None
        self.kernels: list[ir.Kernel] = []
        self.params: list = []
        self.sizes: dict[str, ir.Var] = {}
        self.names_used: dict[str, int] = {}
        self.parallel_depth = 0

    # ------------------------------------------------------------------ helpers
    def loc(self, node) -> ir.Loc:
        end = node.end_col_offset if getattr(node, "end_lineno", None) == node.lineno else None
        return ir.Loc(self.file, node.lineno, node.col_offset, end)

    def error(self, message: str, node, hint: str | None = None) -> TileLangCompileError:
        return TileLangCompileError(message, self.loc(node), hint)

    def emit(self, stmt: ir.Stmt) -> None:
        self.body_stack[-1].append(stmt)

    def fresh_name(self, name: str) -> str:
        n = self.names_used.get(name, 0)
        self.names_used[name] = n + 1
        return name if n == 0 else f"{name}_{n}"

    def lookup(self, name: str, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.source.scope:
            return self.source.scope[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        known = [n for s in self.scopes for n in s]
        close = difflib.get_close_matches(name, known, n=3)
        raise self.error(f"name '{name}' is not defined", node, f"did you mean {', '.join(close)}?" if close else None)

    def bind_name(self, name: str, value) -> None:
        self.scopes[-1][name] = value

    def bind_block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        body: list[ir.Stmt] = []
        self.body_stack.append(body)
        try:
            for s in stmts:
                self.stmt(s)
        finally:
            self.body_stack.pop()
        return body

    # ------------------------------------------------------------------ parameters
    def size_var(self, dyn: T.Dynamic) -> ir.Var:
        if dyn.name not in self.sizes:
            self.sizes[dyn.name] = ir.Var(dyn.name, dyn.dtype, "size")
        return self.sizes[dyn.name]

    def shape_dim(self, dim, where, loc):
        if isinstance(dim, bool) or not isinstance(dim, (int, T.Dynamic, ir.Expr, ir.Var)):
            raise TileLangCompileError(f"tensor dimension {dim!r} of '{where}' is not an int or T.dynamic size", loc)
        if isinstance(dim, T.Dynamic):
            return ir.VarRef(self.size_var(dim))
        if isinstance(dim, ir.Var):
            return ir.VarRef(dim)
        return dim

    def global_buffer(self, name: str, ttype: TensorType, loc: ir.Loc) -> ir.Buffer:
        shape = tuple(self.shape_dim(d, name, loc) for d in ttype.shape)
        if ttype.strides is not None:
            strides = tuple(self.shape_dim(d, name, loc) for d in ttype.strides)
        else:
            strides, running = [], 1
            for d in reversed(shape):
                strides.append(running)
                if isinstance(running, int) and isinstance(d, int):
                    running = running * d
                else:
                    running = d if isinstance(running, int) and running == 1 else self.mul(running, d)
            strides = tuple(reversed(strides))
        return ir.Buffer(name, ir.GLOBAL, shape, ttype.dtype, loc, strides)

    def bind_params(self, func_node: ast.FunctionDef, annotations: dict) -> None:
        for arg in func_node.args.args:
            ann = annotations.get(arg.arg)
            if (ann is None or isinstance(ann, str)) and arg.annotation is not None:
                ann = self.expr(arg.annotation)  # postponed annotations (from __future__ import annotations)
            loc = self.loc(arg)
            if isinstance(ann, TensorType):
                buf = self.global_buffer(arg.arg, ann, loc)
                self.params.append(buf)
                self.bind_name(arg.arg, buf)
            elif lookup_dtype(ann) is not None:
                var = ir.Var(arg.arg, lookup_dtype(ann), "param")
                self.params.append(var)
                self.bind_name(arg.arg, ir.VarRef(var))
            else:
                raise TileLangCompileError(
                    f"parameter '{arg.arg}' needs a T.Tensor(shape, dtype) or scalar dtype annotation, got {ann!r}", loc
                )

    def mul(self, a, b):
        return ir.BinOp("*", as_expr(a), as_expr(b), INT32)

    # ------------------------------------------------------------------ statements
    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"Python '{type(node).__name__}' statements are not supported in a TileLang kernel", node)
        method(node)

    def stmt_Pass(self, node) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Assert(self, node) -> None:
        test = self.expr(node.test)
        if is_python_value(test) and not test:
            raise self.error("assertion failed while compiling the kernel", node)

    def stmt_FunctionDef(self, node: ast.FunctionDef) -> None:
        raise self.error("nested function definitions are not supported inside a kernel; use @T.macro", node)

    def stmt_Return(self, node: ast.Return) -> None:
        raise _Return(self.expr(node.value) if node.value is not None else None)

    def stmt_With(self, node: ast.With) -> None:
        if len(node.items) != 1:
            raise self.error("only 'with T.Kernel(...) as ...' is supported", node)
        item = node.items[0]
        call = item.context_expr
        fn = self.expr(call.func) if isinstance(call, ast.Call) else None
        if getattr(fn, "__t2t__", None) != "Kernel":
            raise self.error("only 'with T.Kernel(...) as ...' is supported", node)
        if self.kernel is not None:
            raise self.error("T.Kernel cannot be nested inside another T.Kernel", node)
        args = self.call_args(fn, call)
        grid = list(args["blocks"])
        if not 1 <= len(grid) <= 3:
            raise self.error("T.Kernel takes 1 to 3 grid extents", call)
        threads = args["threads"]
        if threads is None:
            threads = 128
        extents = tuple(threads) if isinstance(threads, (list, tuple)) else (threads,)
        if not 1 <= len(extents) <= 3 or not all(isinstance(t, int) and t > 0 for t in extents):
            raise self.error(f"threads must be a positive compile-time int (or 1-3 of them), got {threads!r}", call)
        threads = 1
        for t in extents:
            threads *= t
        names = ["bx", "by", "bz"]
        block_vars = [ir.Var(names[i], INT32, "block") for i in range(len(grid))]
        name = self.source.name if not self.kernels else f"{self.source.name}_{len(self.kernels)}"
        kernel = ir.Kernel(self.loc(node), name, [as_expr(g) for g in grid], threads, block_vars, [])
        kernel.thread_extents = extents
        self.scopes.append({})
        target = item.optional_vars
        if isinstance(target, ast.Name):
            block_vars[0].name = target.id
            self.bind_name(target.id, ir.VarRef(block_vars[0]))
        elif isinstance(target, (ast.Tuple, ast.List)):
            if len(target.elts) > len(block_vars):
                raise self.error(f"T.Kernel has {len(block_vars)} grid dims but {len(target.elts)} names", target)
            for var, elt in zip(block_vars, target.elts):
                var.name = elt.id
                self.bind_name(elt.id, ir.VarRef(var))
        self.kernel = kernel
        try:
            kernel.body = self.bind_block(node.body)
        finally:
            self.kernel = None
            self.scopes.pop()
        self.kernels.append(kernel)
        self.emit(kernel)

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error("for/else is not supported", node)
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.error("kernel loops iterate over T.Parallel, T.serial, T.Pipelined, T.unroll or range", it)
        fn = self.expr(it.func)
        kind = getattr(fn, "__t2t__", None) or ("serial" if fn is builtins.range else None)
        if kind is None:
            raise self.error("kernel loops iterate over T.Parallel, T.serial, T.Pipelined, T.unroll or range", it)
        if kind == "Parallel":
            self.parallel_loop(node, fn, it)
            return
        if kind not in ("serial", "unroll", "Pipelined", "vectorized"):
            raise self.error(f"T.{kind} is not a loop", it)
        if kind == "serial" and fn is builtins.range:
            values = [self.expr(a) for a in it.args]
            args = {"start": values[0], "stop": values[1] if len(values) > 1 else None,
                    "step": values[2] if len(values) > 2 else None}  # fmt: skip
        else:
            args = self.call_args(fn, it)
        start, stop, step = args["start"], args.get("stop"), args.get("step")
        if stop is None:
            start, stop = 0, start
        step = 1 if step is None else step
        if not isinstance(node.target, ast.Name):
            raise self.error("a sequential loop binds one name", node.target)
        var = ir.Var(node.target.id, INT32, "loop")
        num_stages = None
        if kind == "Pipelined":
            num_stages = args.get("num_stages") or 0
        self.scopes.append({node.target.id: ir.VarRef(var)})
        try:
            body = self.bind_block(node.body)
        finally:
            self.scopes.pop()
        self.emit(
            ir.For(self.loc(node), var, as_expr(start), as_expr(stop), as_expr(step), kind.lower(), body, num_stages)
        )

    def parallel_loop(self, node: ast.For, fn, it: ast.Call) -> None:
        args = self.call_args(fn, it)
        extents = list(args["extents"])
        for e in extents:
            if not isinstance(e, int):
                raise self.error("T.Parallel extents must be compile-time ints", it)
        targets = node.target.elts if isinstance(node.target, (ast.Tuple, ast.List)) else [node.target]
        if len(targets) != len(extents):
            raise self.error(f"T.Parallel has {len(extents)} extents but {len(targets)} loop names", node.target)
        lane_vars = [ir.Var(t.id, INT32, "lane") for t in targets]
        self.scopes.append({t.id: ir.VarRef(v) for t, v in zip(targets, lane_vars)})
        self.parallel_depth += 1
        try:
            body = self.bind_block(node.body)
        finally:
            self.parallel_depth -= 1
            self.scopes.pop()
        # ``for i in T.Parallel(m): for j in T.Parallel(n):`` is one (m, n) region in TileLang.
        if len(body) == 1 and isinstance(body[0], ir.Parallel):
            inner = body[0]
            lane_vars, extents, body = lane_vars + inner.vars, extents + inner.extents, inner.body
        self.emit(ir.Parallel(self.loc(node), lane_vars, extents, body))

    def stmt_If(self, node: ast.If) -> None:
        cond = self.expr(node.test)
        if is_python_value(cond):
            self.scopes.append({})
            try:
                for s in node.body if cond else node.orelse:
                    self.stmt(s)
            finally:
                merged = self.scopes.pop()
            self.scopes[-1].update(merged)
            return
        then_body = self.bind_block(node.body)
        else_body = self.bind_block(node.orelse)
        self.emit(ir.If(self.loc(node), as_expr(cond), then_body, else_body))

    def stmt_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error("while/else is not supported", node)
        cond = self.expr(node.test)
        if is_python_value(cond):
            if cond:
                raise self.error(
                    "a while loop in a kernel needs a kernel-value condition (this one is always true)", node
                )
            return
        self.emit(ir.While(self.loc(node), as_expr(cond), self.bind_block(node.body)))

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error("annotations without a value are only for eager-style tensor parameters", node)
        self.assign_target(node.target, self.expr(node.value), node)

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = None
        if isinstance(node.value, ast.Call) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = self.maybe_alloc(node.targets[0].id, node.value)
        if value is None:
            value = self.expr(node.value)
        for target in node.targets:
            self.assign_target(target, value, node)

    def maybe_alloc(self, name: str, call: ast.Call):
        fn = self.expr(call.func)
        tag = getattr(fn, "__t2t__", None)
        if tag in _ALLOC_SCOPES:
            args = self.call_args(fn, call)
            shape = args["shape"]
            shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
            for d in shape:
                if not isinstance(d, int) or d <= 0:
                    raise self.error(f"{tag} needs a static positive shape, got {shape}", call)
            buf = ir.Buffer(self.fresh_name(name), _ALLOC_SCOPES[tag], shape, self.dtype_arg(args["dtype"], call),
                            self.loc(call))  # fmt: skip
            self.emit(ir.Alloc(buf.loc, buf))
            return buf
        if tag == "alloc_var":
            args = self.call_args(fn, call)
            buf = ir.Buffer(self.fresh_name(name), ir.VAR, (1,), self.dtype_arg(args["dtype"], call), self.loc(call))
            init = args.get("init")
            if isinstance(init, str):  # alloc_var(dtype, scope) form
                init = None
            self.emit(ir.Alloc(buf.loc, buf, None if init is None else as_expr(init)))
            return buf
        return None

    def dtype_arg(self, value, node) -> DType:
        dt = lookup_dtype(value)
        if dt is None:
            raise self.error(dtype_error(value), node)
        return dt

    def assign_target(self, target, value, node) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error("cannot unpack this value into the names on the left", node)
            for t, v in zip(target.elts, value):
                self.assign_target(t, v, node)
        elif isinstance(target, ast.Subscript):
            ref = self.expr(target)
            if not isinstance(ref, ir.Load):
                raise self.error("assignment to a buffer needs one index per dimension", target)
            self.store(ref, value, node)
        else:
            raise self.error("unsupported assignment target", target)

    def store(self, ref: ir.Load, value, node) -> None:
        if isinstance(value, (ir.Buffer, ir.Region)):
            raise self.error("a tile cannot be stored into one element; use T.copy", node)
        self.emit(ir.Store(self.loc(node), ref.buffer, ref.indices, as_expr(value, self.loc(node))))

    def assign_name(self, name: str, value, node) -> None:
        current = None
        for scope in reversed(self.scopes):
            if name in scope:
                current = scope[name]
                break
        if isinstance(current, ir.Buffer) and current.scope == ir.VAR and not isinstance(value, ir.Buffer):
            self.emit(ir.Store(self.loc(node), current, (const_int(0),), as_expr(value, self.loc(node))))
            return
        if is_python_value(value) or isinstance(value, (ir.Buffer, ir.Region)):
            self.bind_name(name, value)
            return
        value = as_expr(value)
        if self.kernel is None:
            raise self.error("kernel values can only be computed inside T.Kernel", node)
        if isinstance(current, ir.VarRef) and current.var.kind == "let":
            var = current.var
            if var.dtype != value.dtype:
                value = ir.Cast(value, var.dtype)
        else:
            var = ir.Var(self.fresh_name(name), value.dtype, "let")
        self.emit(ir.Let(self.loc(node), var, value))
        self.bind_name(name, ir.VarRef(var))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        op, pyop = _PY_BINOPS[type(node.op)]
        if isinstance(node.target, ast.Subscript):
            ref = self.expr(node.target)
            if not isinstance(ref, ir.Load):
                raise self.error("augmented assignment to a buffer needs one index per dimension", node.target)
            self.store(ref, self.binop(op, pyop, ref, self.expr(node.value), node), node)
            return
        if isinstance(node.target, ast.Name):
            old = self.lookup(node.target.id, node.target)
            if isinstance(old, ir.Buffer) and old.scope == ir.VAR:
                old = ir.Load(old, (const_int(0),))
            self.assign_name(node.target.id, self.binop(op, pyop, old, self.expr(node.value), node), node)
            return
        raise self.error("unsupported augmented assignment target", node.target)

    # ------------------------------------------------------------------ expressions
    def expr(self, node: ast.expr):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"Python '{type(node).__name__}' expressions are not supported in a TileLang kernel", node)
        return method(node)

    def expr_Constant(self, node: ast.Constant):
        return node.value

    def expr_Name(self, node: ast.Name):
        value = self.lookup(node.id, node)
        if isinstance(value, ir.Buffer) and value.scope == ir.VAR:
            return ir.Load(value, (const_int(0),), self.loc(node))
        if isinstance(value, T.Dynamic):  # a T.dynamic size used as a value: its run-time size Var
            return ir.VarRef(self.size_var(value))
        return value

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def expr_List(self, node):
        return [self.expr(e) for e in node.elts]

    def expr_Dict(self, node):
        return {self.expr(k): self.expr(v) for k, v in zip(node.keys, node.values)}

    def expr_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, ir.Buffer):
            if node.attr == "shape":
                return tuple(base.shape)
            if node.attr == "dtype":
                return base.dtype
            if node.attr == "ndim":
                return base.ndim
            if node.attr == "data" and base.scope == ir.GLOBAL:
                return _BufferData(base)
            raise self.error(f"buffers have no attribute '{node.attr}'", node)
        if isinstance(base, ir.Expr):
            if node.attr == "astype":
                return _Method("astype", base)
            if node.attr == "dtype":
                return base.dtype
            raise self.error(f"kernel values have no attribute '{node.attr}'", node)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            if base is T or getattr(base, "__name__", "") == "tile2triton.language":
                supported = [n for n in dir(T) if not n.startswith("_")]
                close = difflib.get_close_matches(node.attr, supported, n=3)
                raise self.error(
                    f"T.{node.attr} is not supported by tile2triton",
                    node,
                    f"closest supported names: {', '.join('T.' + c for c in close)}" if close else None,
                ) from None
            raise self.error(f"{base!r} has no attribute '{node.attr}'", node) from None

    def expr_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not isinstance(base, ir.Buffer):
            if isinstance(base, ir.Region):
                raise self.error("indexing a sliced region is not supported; index the buffer", node)
            key = self.expr(node.slice)
            if not is_python_value(key):
                raise self.error("only buffers can be indexed with kernel values", node)
            return base[key]
        if len(items) != base.ndim:
            raise self.error(
                f"buffer '{base.name}' is {base.ndim}-dimensional but {len(items)} index(es) were given", node
            )
        starts, extents, sliced = [], [], False
        for d, item in enumerate(items):
            if isinstance(item, ast.Slice):
                sliced = True
                if item.step is not None:
                    raise self.error("strided slices are not supported", item)
                lo = self.expr(item.lower) if item.lower is not None else 0
                hi = self.expr(item.upper) if item.upper is not None else base.shape[d]
                starts.append(as_expr(lo))
                ext = self.binop("-", operator.sub, hi, lo, item)
                extents.append(ext if is_python_value(ext) else self.simplify_extent(ext, item))
            else:
                starts.append(as_expr(self.expr(item), self.loc(item)))
                extents.append(1)
        if sliced:
            return ir.Region(base, tuple(starts), tuple(extents))
        return ir.Load(base, tuple(starts), self.loc(node))

    def simplify_extent(self, ext: ir.Expr, node):
        """``x + n - x`` -> ``n``: slice extents like ``A[off : off + BLOCK]`` are static."""
        value = _static_difference(ext)
        return value if value is not None else ext

    def expr_BinOp(self, node: ast.BinOp):
        op, pyop = _PY_BINOPS[type(node.op)]
        return self.binop(op, pyop, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op, pyop, a, b, node):
        if (
            is_python_value(a)
            and is_python_value(b)
            and not isinstance(a, TypedLiteral)
            and not isinstance(b, TypedLiteral)
        ):
            try:
                return pyop(a, b)
            except Exception as exc:  # noqa: BLE001
                raise self.error(f"cannot compute {a!r} {op} {b!r}: {exc}", node) from None
        if isinstance(a, (ir.Buffer, ir.Region)) or isinstance(b, (ir.Buffer, ir.Region)):
            raise self.error("arithmetic on whole buffers is not TileLang; index them inside T.Parallel", node)
        a, b = as_expr(a, self.loc(node)), as_expr(b, self.loc(node))
        dtype = binary_dtype(op, a, b)
        if op == "**":
            return ir.Call("pow", (a, b), dtype if dtype.is_float else FLOAT32)
        return ir.BinOp(op, a, b, dtype)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        if is_python_value(v):
            return (
                {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}[
                    type(node.op)
                ](v)
                if not isinstance(v, TypedLiteral)
                else TypedLiteral(v.dtype, -v.value)
            )
        v = as_expr(v)
        if isinstance(node.op, ast.UAdd):
            return v
        op = {ast.USub: "-", ast.Not: "not", ast.Invert: "~"}[type(node.op)]
        return ir.UnaryOp(op, v, BOOL if op == "not" else v.dtype)

    def expr_BoolOp(self, node: ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        values = [self.expr(v) for v in node.values]
        if all(is_python_value(v) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if op == "and" else (result or v)
            return result
        result = as_expr(values[0])
        for v in values[1:]:
            result = ir.BinOp(op, result, as_expr(v), BOOL)
        return result

    def expr_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if type(op_node) not in _PY_CMPS:
                raise self.error("'in' and 'is' comparisons are not supported on kernel values", node)
            op, pyop = _PY_CMPS[type(op_node)]
            if is_python_value(left) and is_python_value(right):
                part = pyop(left, right)
            else:
                part = ir.Compare(op, as_expr(left), as_expr(right), BOOL)
            result = part if result is None else self.binop("and", lambda x, y: x and y, result, part, node)
            left = right
        return result

    def expr_IfExp(self, node: ast.IfExp):
        cond = self.expr(node.test)
        if is_python_value(cond):
            return self.expr(node.body) if cond else self.expr(node.orelse)
        return self.select(cond, self.expr(node.body), self.expr(node.orelse))

    def select(self, cond, a, b):
        a, b = as_expr(a), as_expr(b)
        return ir.Select(as_expr(cond), a, b, binary_dtype("+", a, b))

    def expr_Lambda(self, node: ast.Lambda):
        # lambdas appear in layout annotations (T.Fragment(..., forward_thread_fn=lambda i: ...)),
        # which have no effect under Triton: keep them as opaque compile-time values
        return _Opaque("lambda", self.loc(node))

    def expr_JoinedStr(self, node):
        return "".join(str(self.expr(v)) for v in node.values)

    def expr_FormattedValue(self, node):
        return format(self.expr(node.value))

    def expr_Call(self, node: ast.Call):
        fn = self.expr(node.func)
        if isinstance(fn, _Method):
            args = [self.expr(a) for a in node.args]
            return ir.Cast(fn.target, self.dtype_arg(args[0], node))
        tag = getattr(fn, "__t2t__", None)
        if tag is not None:
            rule = RULES.get(tag)
            if rule is None:
                raise self.error(f"T.{tag} is not supported by tile2triton yet", node)
            args = self.call_args(fn, node)
            if getattr(fn, "__wrapped__", None) is None and all(
                is_python_value(v) and not isinstance(v, TypedLiteral) for v in _flat(args.values())
            ):
                return fn(**args)  # host-capable primitive on plain numbers
            return rule(self, node, args)
        if isinstance(fn, DType):
            value = self.expr(node.args[0]) if node.args else 0
            if is_python_value(value):
                return TypedLiteral(fn, value)
            return ir.Cast(as_expr(value), fn)
        if isinstance(fn, MacroSource):
            return self.inline_macro(fn, node)
        if isinstance(fn, _TensorProxy):
            view = self.tensor_view(fn, node)
            if view is not None:
                return view
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        if fn in (builtins.max, builtins.min) and not all(is_python_value(a) for a in args):
            if len(args) != 2:
                raise self.error(f"{fn.__name__}() on kernel values takes two arguments", node)
            return RULES["max" if fn is builtins.max else "min"](self, node, {"a": args[0], "b": args[1]})
        if fn in (builtins.float, builtins.int) and args and not is_python_value(args[0]):
            return ir.Cast(as_expr(args[0]), FLOAT32 if fn is builtins.float else INT32)
        if fn is builtins.abs and args and not is_python_value(args[0]):
            return RULES["abs"](self, node, {"x": args[0]})
        if not callable(fn):
            raise self.error(f"{fn!r} is not callable", node)
        # plain Python (helpers computing constants, layout annotations) runs at compile time
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            if all(is_python_value(a) for a in list(args) + list(kwargs.values())):
                raise self.error(
                    f"calling {getattr(fn, '__name__', fn)!r} at compile time failed: {exc}", node
                ) from None
            raise self.error(
                f"cannot call {getattr(fn, '__name__', fn)!r} on kernel values inside a kernel "
                "(use a @T.macro for reusable kernel code)",
                node,
            ) from None

    def tensor_view(self, proxy, node: ast.Call):
        """``T.Tensor(shape, dtype, A.data)`` in a kernel: another shape over A's memory (e.g. a 4-D
        weight seen as a 2-D matrix).  None for a plain ``T.Tensor(...)`` annotation value."""
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        bound = _signature(type(proxy).__call__).bind(proxy, *args, **kwargs)
        data = bound.arguments.get("data")
        if not isinstance(data, _BufferData):
            return None
        ttype = proxy(bound.arguments["shape"], bound.arguments.get("dtype", "float32"))
        base = data.buffer
        view = self.global_buffer(self.fresh_name(f"{base.name}_view"), ttype, self.loc(node))
        view.alias_of = base
        return view

    def call_args(self, fn, node: ast.Call) -> dict:
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        sig = _signature(getattr(fn, "__wrapped__", fn))
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(f"T.{fn.__t2t__}{sig}: {exc}", node) from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def inline_macro(self, macro: MacroSource, node: ast.Call):
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        params = [a.arg for a in macro.tree.args.args]
        sig = _signature(macro.func)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        saved_source, saved_file = self.source, self.file
        self.source, self.file = macro, macro.file
        self.scopes.append({p: bound.arguments[p] for p in params})
        try:
            for s in macro.tree.body:
                self.stmt(s)
        except _Return as ret:
            return ret.value
        finally:
            self.scopes.pop()
            self.source, self.file = saved_source, saved_file
        return None


class _Opaque:
    """A compile-time value tile2triton carries but never evaluates (a layout function)."""

    def __init__(self, what: str, loc):
        self.what, self.loc = what, loc

    def __call__(self, *args, **kwargs):
        raise TileLangCompileError(f"a {self.what} can only be used in a layout annotation", self.loc)


class _BufferData:
    """``A.data``: the memory of global tensor A, for ``T.Tensor(shape, dtype, A.data)`` views."""

    def __init__(self, buffer):
        self.buffer = buffer


class _Method:
    def __init__(self, name, target):
        self.name, self.target = name, target


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _static_difference(e):
    """The int value of a slice extent such as ``(off + n) - off`` or ``(bx + 1) * bm - bx * bm``:
    expand it as a linear form over its symbolic terms; None unless they all cancel."""
    terms: dict = {}

    def add(node, coef):
        if isinstance(node, ir.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
            terms[None] = terms.get(None, 0) + coef * node.value
        elif isinstance(node, ir.BinOp) and node.op in ("+", "-"):
            add(node.lhs, coef)
            add(node.rhs, coef if node.op == "+" else -coef)
        elif isinstance(node, ir.BinOp) and node.op == "*" and _int_const(node.rhs) is not None:
            add(node.lhs, coef * _int_const(node.rhs))
        elif isinstance(node, ir.BinOp) and node.op == "*" and _int_const(node.lhs) is not None:
            add(node.rhs, coef * _int_const(node.lhs))
        elif isinstance(node, ir.UnaryOp) and node.op == "-":
            add(node.operand, -coef)
        else:
            key = ir_key(node)
            terms[key] = terms.get(key, 0) + coef

    add(e, 1)
    if all(v == 0 for k, v in terms.items() if k is not None):
        return terms.get(None, 0)
    return None


def _int_const(node):
    if isinstance(node, ir.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def ir_key(node):
    """A structural key for an expression (for cancelling equal terms)."""
    if isinstance(node, ir.VarRef):
        return ("var", id(node.var))
    if isinstance(node, ir.Const):
        return ("const", node.value)
    if isinstance(node, ir.BinOp):
        return ("bin", node.op, ir_key(node.lhs), ir_key(node.rhs))
    if isinstance(node, ir.Load):
        return ("load", id(node.buffer), tuple(ir_key(i) for i in node.indices))
    return ("node", id(node))


# ====================================================================== binding rules
RULES: dict = {}


def rule(*names):
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn

    return register


def _operand(b: Binder, value, node, what: str):
    if isinstance(value, (ir.Buffer, ir.Region, ir.Load)):
        return value
    raise b.error(f"{what} must be a buffer, a buffer region or a buffer element, got {value!r}", node)


@rule("copy")
def bind_copy(b: Binder, node, args):
    src = _operand(b, args["src"], node, "T.copy source")
    dst = _operand(b, args["dst"], node, "T.copy destination")
    src_ext, dst_ext = extent_of(src), extent_of(dst)
    if src_ext is None and dst_ext is None:
        b.emit(ir.Store(b.loc(node), dst.buffer, dst.indices, ir.Cast(src, dst.buffer.dtype)))
        return None
    if isinstance(src, ir.Buffer) and isinstance(dst, ir.Buffer) and tuple(src.shape) != tuple(dst.shape):
        raise b.error(f"T.copy between whole buffers needs equal shapes: {src.shape} vs {dst.shape}", node)
    src_ext = src_ext if src_ext is not None else [1] * len(dst_ext)
    dst_ext = dst_ext if dst_ext is not None else [1] * len(src_ext)
    src_ext, dst_ext = legalize_pairwise_extents(src_ext, dst_ext)
    b.emit(ir.Copy(b.loc(node), to_region(src, src_ext), to_region(dst, dst_ext)))
    return None


def _fill_region(b: Binder, target, node) -> ir.Region:
    if isinstance(target, ir.Buffer):
        return whole(target)
    if isinstance(target, ir.Region):
        return target
    if isinstance(target, ir.Load):
        return to_region(target, [1] * target.buffer.ndim)
    raise b.error("T.fill / T.clear take a buffer or a region", node)


@rule("fill")
def bind_fill(b: Binder, node, args):
    region = _fill_region(b, args["buffer"], node)
    b.emit(ir.Fill(b.loc(node), region, as_expr(args["value"], b.loc(node))))


@rule("clear")
def bind_clear(b: Binder, node, args):
    region = _fill_region(b, args["buffer"], node)
    b.emit(ir.Fill(b.loc(node), region, const_int(0)))


def _gemm_operand(b: Binder, value, node, what) -> ir.Region:
    if isinstance(value, ir.Buffer):
        return whole(value)
    if isinstance(value, ir.Region):
        return value
    raise b.error(f"T.gemm operand {what} must be a shared or fragment buffer (or a region of one)", node)


@rule("gemm")
def bind_gemm(b: Binder, node, args):
    a = _gemm_operand(b, args["A"], node, "A")
    bb = _gemm_operand(b, args["B"], node, "B")
    c = _gemm_operand(b, args["C"], node, "C")
    ta, tb = args["transpose_A"], args["transpose_B"]
    if not isinstance(ta, bool) or not isinstance(tb, bool):
        raise b.error("transpose_A / transpose_B must be compile-time bools", node)
    b.emit(ir.Gemm(b.loc(node), a, bb, c, ta, tb, as_expr(args["clear_accum"])))


def _bind_reduce(b: Binder, node, kind, args, clear):
    src, dst = args["buffer"], args["out"]
    src = src if isinstance(src, ir.Region) else whole(src) if isinstance(src, ir.Buffer) else None
    dst = dst if isinstance(dst, ir.Region) else whole(dst) if isinstance(dst, ir.Buffer) else None
    if src is None or dst is None:
        raise b.error("T.reduce_* take a source buffer and an output buffer", node)
    dim = args["dim"]
    ndim = len(src.extents)
    if not isinstance(dim, int) or not -ndim <= dim < ndim:
        raise b.error(f"reduction dim {dim!r} is out of range for a {ndim}-D buffer", node)
    if not isinstance(clear, bool):
        raise b.error("clear must be a compile-time bool", node)
    b.emit(ir.Reduce(b.loc(node), kind, src, dst, dim % ndim, clear))


def _reduce_rule(kind):
    def bind(b, node, args):
        _bind_reduce(b, node, kind, args, args.get("clear", True))

    return bind


for _kind in ("sum", "max", "min", "absmax", "abssum"):
    RULES["reduce_" + _kind] = _reduce_rule(_kind)


@rule("reduce")
def bind_reduce(b: Binder, node, args):
    _bind_reduce(b, node, args["reduce_type"], args, args["clear"])


@rule("cumsum", "cummax")
def bind_scan(b: Binder, node, args):
    src = _fill_region(b, args["src"], node)
    dst = src if args["dst"] is None else _fill_region(b, args["dst"], node)
    dim = args["dim"] % len(src.extents)
    kind = "max" if node.func.attr == "cummax" else "sum"
    b.emit(ir.Cumsum(b.loc(node), src, dst, dim, bool(args["reverse"]), kind))


@rule("im2col")
def bind_im2col(b: Binder, node, args):
    """TileLang's im2col (NHWC image, square kernel), bound as the T.Parallel it means: tile element
    (i, j) is ``img[n, h, w, c]`` of output pixel ``m = nhw_step * block_m + i`` and patch column
    ``k = c_step * block_k + j``, or 0 in the padding."""
    img, col = args["img"], _fill_region(b, args["col"], node)
    if not isinstance(img, ir.Buffer) or img.ndim != 4:
        raise b.error("T.im2col takes an NHWC image tensor (4-D)", node)
    if not col.is_whole() or col.buffer.ndim != 2:
        raise b.error("T.im2col writes a whole 2-D tile", node)
    K, s, d, p = (args[k] for k in ("kernel", "stride", "dilation", "pad"))
    if not all(isinstance(v, int) for v in (K, s, d, p)):
        raise b.error("T.im2col's kernel, stride, dilation and pad must be compile-time ints", node)
    _, H, W, C = img.shape
    block_m, block_k = col.buffer.shape

    def op(o, x, y):
        return b.binop(
            o,
            _PY_BINOPS[{"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "//": ast.FloorDiv, "%": ast.Mod}[o]][1],
            x,
            y,
            node,
        )

    OH = op("+", op("//", op("-", op("-", op("+", H, 2 * p), (K - 1) * d), 1), s), 1)
    OW = op("+", op("//", op("-", op("-", op("+", W, 2 * p), (K - 1) * d), 1), s), 1)
    i, j = ir.Var("i", INT32, "lane"), ir.Var("j", INT32, "lane")
    m = op("+", op("*", args["nhw_step"], block_m), ir.VarRef(i))
    k = op("+", op("*", args["c_step"], block_k), ir.VarRef(j))
    n, oh, ow = op("//", m, op("*", OH, OW)), op("//", op("%", m, op("*", OH, OW)), OW), op("%", m, OW)
    kh, kw, c = op("//", k, K * C), op("%", op("//", k, C), K), op("%", k, C)
    h = op("-", op("+", op("*", oh, s), op("*", kh, d)), p)
    w = op("-", op("+", op("*", ow, s), op("*", kw, d)), p)
    inside = [ir.Compare(cmp, as_expr(x), as_expr(lim), BOOL) for x in (h, w) for cmp, lim in ((">=", 0),)]
    inside += [ir.Compare("<", as_expr(h), as_expr(H), BOOL), ir.Compare("<", as_expr(w), as_expr(W), BOOL)]
    cond = inside[0]
    for part in inside[1:]:
        cond = ir.BinOp("and", cond, part, BOOL)
    value = b.select(cond, ir.Load(img, tuple(as_expr(x) for x in (n, h, w, c))), 0)
    store = ir.Store(b.loc(node), col.buffer, (ir.VarRef(i), ir.VarRef(j)), value)
    b.emit(ir.Parallel(b.loc(node), [i, j], [block_m, block_k], [store]))


@rule("reshape")
def bind_reshape(b: Binder, node, args):
    src, shape = args["src"], args["shape"]
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if isinstance(src, ir.Buffer) and src.scope in (ir.SHARED, ir.FRAGMENT):
        count = 1
        for d in src.shape:
            count *= d
        new = 1
        for d in shape:
            new *= d if isinstance(d, int) else 0
        if new != count:
            raise b.error(f"T.reshape of '{src.name}' {tuple(src.shape)} to {shape} changes its size", node)
        view = ir.Buffer(b.fresh_name(f"{src.name}_view"), src.scope, shape, src.dtype, b.loc(node))
        view.alias_of = src
        b.emit(ir.Alloc(b.loc(node), view))
        return view
    if not isinstance(src, ir.Buffer) or src.scope != ir.GLOBAL:
        raise b.error("T.reshape takes a global tensor or a shared/fragment buffer", node)
    view = b.global_buffer(
        b.fresh_name(f"{src.name}_view"),
        TensorType(tuple(shape) if isinstance(shape, (list, tuple)) else (shape,), src.dtype),
        b.loc(node),
    )
    view.alias_of = src
    return view


@rule("transpose")
def bind_transpose(b: Binder, node, args):
    """``T.transpose(src, dst)``: ``dst[j, i] = src[i, j]``, bound as the T.Parallel it means."""
    src, dst = _fill_region(b, args["src"], node), _fill_region(b, args["dst"], node)
    if not (src.is_whole() and dst.is_whole() and src.buffer.ndim == 2 and dst.buffer.ndim == 2):
        raise b.error("T.transpose takes two whole 2-D buffers", node)
    m, n = src.buffer.shape
    if tuple(dst.buffer.shape) != (n, m):
        raise b.error(f"T.transpose: dst must have shape {(n, m)}, got {tuple(dst.buffer.shape)}", node)
    i, j = ir.Var("i", INT32, "lane"), ir.Var("j", INT32, "lane")
    body = [
        ir.Store(
            b.loc(node), dst.buffer, (ir.VarRef(j), ir.VarRef(i)), ir.Load(src.buffer, (ir.VarRef(i), ir.VarRef(j)))
        )
    ]
    b.emit(ir.Parallel(b.loc(node), [i, j], [m, n], body))


def _atomic_rule(kind):
    def bind(b: Binder, node, args):
        dst, value = args["dst"], args["value"]
        if isinstance(dst, ir.Load) and not isinstance(value, (ir.Buffer, ir.Region)):
            b.emit(ir.Atomic(b.loc(node), kind, dst, as_expr(value)))
            return None
        dst = _operand(b, dst, node, "atomic destination")
        if isinstance(value, (ir.Buffer, ir.Region, ir.Load)):
            src_ext, dst_ext = extent_of(value), extent_of(dst)
            src_ext = src_ext if src_ext is not None else [1] * len(dst_ext)
            dst_ext = dst_ext if dst_ext is not None else [1] * len(src_ext)
            src_ext, dst_ext = legalize_pairwise_extents(src_ext, dst_ext)
            b.emit(ir.Atomic(b.loc(node), kind, to_region(dst, dst_ext), to_region(value, src_ext)))
        else:
            region = dst if isinstance(dst, ir.Region) else whole(dst)
            b.emit(ir.Atomic(b.loc(node), kind, region, as_expr(value)))
        return None

    return bind


for _kind in ("add", "max", "min"):
    RULES["atomic_" + _kind] = _atomic_rule(_kind)


@rule("annotate_layout", "no_set_max_nreg")
def bind_no_effect(b: Binder, node, args):
    return None


@rule("use_swizzle")
def bind_use_swizzle(b: Binder, node, args):
    panel, order, enable = args["panel_size"], args["order"], args["enable"]
    if b.kernel is None or not enable or len(b.kernel.grid) < 2:
        return None
    if not isinstance(panel, int) or panel <= 0 or order not in ("row", "column"):
        raise b.error("T.use_swizzle takes a positive int panel_size and order 'row' or 'column'", node)
    b.kernel.swizzle = (panel, order)
    return None


@rule("sync_threads")
def bind_sync(b: Binder, node, args):
    b.emit(ir.Barrier(b.loc(node)))


@rule("print")
def bind_print(b: Binder, node, args):
    obj = args["obj"]
    b.emit(ir.Print(b.loc(node), None if obj is None else as_expr(obj) if not isinstance(obj, ir.Buffer) else obj,
                    args["msg"]))  # fmt: skip


def _thread_var(b: Binder, dim: int, node):
    if b.kernel is None:
        raise b.error("thread bindings exist only inside T.Kernel", node)
    extents = b.kernel.thread_extents
    if not isinstance(dim, int) or not 0 <= dim < 3:
        raise b.error(f"thread binding dim must be 0, 1 or 2, got {dim!r}", node)
    if dim >= len(extents):
        return 0  # threadIdx.y/z of a kernel with fewer thread dims
    if not b.kernel.thread_vars:
        b.kernel.thread_vars.extend(ir.Var(n, INT32, "thread") for n in ("tx", "ty", "tz")[: len(extents)])
    return ir.VarRef(b.kernel.thread_vars[dim])


@rule("get_thread_binding")
def bind_thread_binding(b: Binder, node, args):
    return _thread_var(b, args["dim"], node)


@rule("get_thread_bindings")
def bind_thread_bindings(b: Binder, node, args):
    return [_thread_var(b, d, node) for d in range(3)]


@rule("get_block_binding")
def bind_block_binding(b: Binder, node, args):
    return ir.VarRef(b.kernel.block_vars[args["dim"]])


# --- element-wise intrinsics
def _math_rule(name):
    def bind(b: Binder, node, args):
        (x,) = args.values()
        x = as_expr(x, b.loc(node))
        if name in _PREDICATES:
            dtype = BOOL
        elif name in ("abs", "floor", "ceil", "round", "nearbyint", "trunc") and not x.dtype.is_float:
            dtype = x.dtype
        else:
            dtype = x.dtype if x.dtype.is_float and not is_weak(x) else FLOAT32
        if name in ("floor", "ceil", "round", "nearbyint", "trunc") and not x.dtype.is_float:
            return x
        return ir.Call(name.lstrip("_"), (x,), dtype)

    return bind


for _name in UNARY_MATH:
    RULES[_name] = _math_rule(_name)


def _binary_call(name):
    def bind(b: Binder, node, args):
        x, y = (as_expr(v, b.loc(node)) for v in args.values())
        dtype = binary_dtype("+", x, y)
        if name in ("pow", "atan2", "fmod") and not dtype.is_float:
            dtype = FLOAT32
        return ir.Call(name, (x, y), dtype)

    return bind


for _name in ("max", "min", "pow", "atan2", "fmod"):
    RULES[_name] = _binary_call(_name)

for _name, _op in (("floordiv", "//"), ("floormod", "%"), ("bitwise_and", "&"), ("bitwise_or", "|"),
                   ("bitwise_xor", "^"), ("shift_left", "<<"), ("shift_right", ">>")):  # fmt: skip

    def _op_rule(b, node, args, _op=_op):
        x, y = (as_expr(args[k], b.loc(node)) for k in ("a", "b"))
        return ir.BinOp(_op, x, y, binary_dtype(_op, x, y))

    RULES[_name] = _op_rule


@rule("truncdiv", "truncmod")
def bind_trunc(b: Binder, node, args):
    x, y = as_expr(args["a"]), as_expr(args["b"])
    return ir.Call("truncdiv" if node.func.attr == "truncdiv" else "truncmod", (x, y), binary_dtype("+", x, y))


@rule("bitwise_not")
def bind_bitwise_not(b: Binder, node, args):
    x = as_expr(args["x"])
    return ir.UnaryOp("~", x, x.dtype)


@rule("ceildiv")
def bind_ceildiv(b: Binder, node, args):
    x, y = as_expr(args["a"]), as_expr(args["b"])
    dtype = binary_dtype("+", x, y)
    return ir.BinOp("//", ir.BinOp("-", ir.BinOp("+", x, y, dtype), const_int(1), dtype), y, dtype)


@rule("if_then_else")
def bind_if_then_else(b: Binder, node, args):
    cond = args["cond"]
    if is_python_value(cond):
        return args["true_value"] if cond else args["false_value"]
    return b.select(cond, args["true_value"], args["false_value"])


@rule("clamp")
def bind_clamp(b: Binder, node, args):
    x, lo, hi = (as_expr(args[k]) for k in ("x", "lo", "hi"))
    dtype = binary_dtype("+", x, lo)
    return ir.Call("min", (ir.Call("max", (x, lo), dtype), hi), dtype)


@rule("cast")
def bind_cast(b: Binder, node, args):
    return ir.Cast(as_expr(args["value"], b.loc(node)), b.dtype_arg(args["dtype"], node))


@rule("Cast")
def bind_tvm_cast(b: Binder, node, args):
    return ir.Cast(as_expr(args["value"], b.loc(node)), b.dtype_arg(args["dtype"], node))


@rule("reinterpret")
def bind_reinterpret(b: Binder, node, args):
    return ir.Call("bitcast", (as_expr(args["value"]),), b.dtype_arg(args["dtype"], node))


@rule("inline_asm")
def bind_inline_asm(b: Binder, node, args):
    asm, constraints = args["asm"], args["constraints"]
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise b.error("T.inline_asm needs the assembly and its constraints as compile-time strings", node)
    operands = tuple(as_expr(a, b.loc(node)) for a in args["args"])
    if not operands:
        raise b.error("T.inline_asm needs at least one argument (it is element-wise over them)", node)
    return ir.InlineAsm(asm, constraints, operands, b.dtype_arg(args["dtype"], node), bool(args["is_pure"]),
                        int(args["pack"]), b.loc(node))  # fmt: skip


def _ptx_rule(name, dtype):
    def bind(b: Binder, node, args):
        return ir.Call(name, tuple(as_expr(v, b.loc(node)) for v in args.values()), dtype)

    return bind


for _name in ("ptx_ex2", "ptx_tanh", "ptx_rcp", "ptx_rsqrt", "fast_rcp"):
    RULES[_name] = _ptx_rule("ptx_rcp" if _name == "fast_rcp" else _name, FLOAT32)
for _name in ("ptx_laneid", "ptx_warpid", "ptx_smid"):
    RULES[_name] = _ptx_rule(_name, INT32)
for _name in ("ptx_clock64", "ptx_globaltimer"):
    RULES[_name] = _ptx_rule(_name, DTYPES["int64"])


@rule("get_lane_idx", "get_warp_idx")
def bind_lane_warp_idx(b: Binder, node, args):
    tx = _thread_var(b, 0, node)
    size = args["warp_size"] or 32
    op = "%" if node.func.attr == "get_lane_idx" else "//"
    return ir.BinOp(op, tx, const_int(size), INT32)


@rule("infinity", "max_value", "min_value")
def bind_typed_constant(b: Binder, node, args):
    raise b.error("the dtype argument must be a compile-time dtype", node)


@rule("Kernel", "Parallel", "serial", "unroll", "Pipelined", "vectorized")
def bind_misplaced_construct(b: Binder, node, args):
    raise b.error("this construct belongs in a 'with' or 'for' statement", node)


@rule("alloc_shared", "alloc_fragment", "alloc_local", "alloc_var")
def bind_misplaced_alloc(b: Binder, node, args):
    raise b.error("allocate buffers with 'name = T.alloc_...(...)'", node)


# ====================================================================== entry points
def bind_prim_func(source: FunctionSource, out_idx=None) -> ir.PrimFunc:
    """Lazy style: a ``@T.prim_func`` whose parameters are annotated with T.Tensor."""
    binder = Binder(source)
    binder.bind_params(source.tree, dict(getattr(source.func, "__annotations__", {})))
    try:
        binder.bind_block(source.tree.body)
    except _Return as ret:
        if ret.value is not None:
            raise TileLangCompileError("a lazy-style @T.prim_func returns nothing", binder.loc(source.tree)) from None
    if not binder.kernels:
        raise TileLangCompileError(
            "the kernel function contains no 'with T.Kernel(...)' block", binder.loc(source.tree)
        )
    return ir.PrimFunc(
        source.name,
        binder.params,
        binder.kernels,
        normalize_out_idx(out_idx, len(binder.params), binder.loc(source.tree)),
        list(binder.sizes.values()),
        binder.loc(source.tree),
    )


def normalize_out_idx(out_idx, n_params: int, loc) -> list[int]:
    if out_idx is None:
        return []
    items = [out_idx] if isinstance(out_idx, int) else list(out_idx)
    result = []
    for i in items:
        if not isinstance(i, int) or not -n_params <= i < n_params:
            raise TileLangCompileError(f"out_idx {i!r} is out of range for a kernel with {n_params} parameters", loc)
        result.append(i % n_params)
    return result


# ====================================================================== eager style
# ``@tilelang.jit`` on a function that receives the tensors themselves: ``N = T.const("N")``,
# ``A: T.Tensor((N,), dtype)`` in the body, ``B = T.empty(...)`` and ``return B``.  Binding runs
# in two phases (TileLang's ``JITFunc``): phase 1 binds only the declarations before the first
# ``T.Kernel``, with each ``T.const`` a placeholder, to learn where every constant appears in the
# tensor shapes; phase 2 binds the whole body with the constants' values.  runtime in eager.py.
class _StopDeclarations(Exception):
    """Phase 1 ends at the first ``with T.Kernel``: declarations come before it."""


class PendingTensor:
    """A tensor parameter whose ``A: T.Tensor(...)`` declaration has not been bound yet."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<tensor parameter {self.name}>"


class EagerDecls:
    """What phase 1 learns: the constants and each tensor parameter's declared type."""

    def __init__(self, consts: dict, tensors: dict, loc: ir.Loc):
        self.consts = consts  # name -> ir.Var placeholder (kind "const"), declaration order
        self.tensors = tensors  # param name -> (TensorType with placeholders in it, Loc)
        self.loc = loc


class EagerBinder(Binder):
    """The binder for an eager-style kernel (phase 1 when ``const_values`` is None)."""

    def __init__(self, source: FunctionSource, values: dict, scalars: dict, const_values: dict | None = None):
        super().__init__(source)
        self.declaring = const_values is None
        self.const_values = const_values or {}
        self.param_names = [a.arg for a in _eager_args(source.tree)]
        self.consts: dict = {}
        self.tensor_decls: dict = {}
        self.param_buffers: dict = {}
        self.scalar_vars: dict = {}
        self.outputs: list = []
        for name in self.param_names:
            if name in scalars:
                var = ir.Var(name, scalars[name], "param")
                self.scalar_vars[name] = var
                self.bind_name(name, ir.VarRef(var))
            elif name in values:
                self.bind_name(name, values[name])
            else:
                self.bind_name(name, PendingTensor(name))

    # --- T.const
    def declare_const(self, names, dtype, node):
        if not isinstance(names, str):
            raise self.error(f'T.const takes a string of names, e.g. T.const("M, N"), got {names!r}', node)
        if self.kernel is not None:
            raise self.error("T.const must be declared before 'with T.Kernel(...)'", node)
        dt = self.dtype_arg(dtype, node)
        parts = [n for n in names.replace(",", " ").split() if n]
        if not parts:
            raise self.error("T.const needs at least one name", node)
        result = []
        for n in parts:
            if not n.isidentifier():
                raise self.error(f"T.const name {n!r} is not an identifier", node)
            if n in self.consts:
                raise self.error(f"T.const '{n}' is declared twice", node)
            if n in self.param_names:
                raise self.error(f"T.const '{n}' has the name of a function parameter", node)
            if self.declaring:
                self.consts[n] = ir.Var(n, dt, "const")
                result.append(ir.VarRef(self.consts[n]))
            else:
                if n not in self.const_values:
                    raise self.error(f"no value for T.const '{n}'", node)
                self.consts[n] = self.const_values[n]
                result.append(self.const_values[n])
        return result[0] if len(result) == 1 else tuple(result)

    # --- A: T.Tensor(...) for a parameter
    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        target = node.target
        if node.value is not None or not isinstance(target, ast.Name) or target.id not in self.param_names:
            if node.value is None:
                raise self.error(
                    "an annotation without a value declares a tensor parameter; "
                    f"'{ast.unparse(target)}' is not a parameter of {self.source.name}", node)  # fmt: skip
            return super().stmt_AnnAssign(node)
        name = target.id
        if self.kernel is not None:
            raise self.error(f"declare parameter '{name}' before 'with T.Kernel(...)'", node)
        if name in self.scalar_vars:
            raise self.error(f"parameter '{name}' is already a scalar ({self.scalar_vars[name].dtype.name})", node)
        if name in self.tensor_decls:
            raise self.error(f"parameter '{name}' is declared twice", node)
        ann = self.expr(node.annotation)
        if not isinstance(ann, TensorType):
            raise self.error(
                f"parameter '{name}' must be declared with T.Tensor(shape, dtype) or T.StridedTensor, got {ann!r}",
                node.annotation)  # fmt: skip
        current = self.lookup(name, target)
        if not isinstance(current, PendingTensor) and not self.declaring:  # phase 1: the runtime reports it
            raise self.error(
                f"parameter '{name}' is declared as a tensor, but the call passed {type(current).__name__} "
                f"{current!r}", node)  # fmt: skip
        loc = self.loc(node)
        self.tensor_decls[name] = (ann, loc)
        if not self.declaring:
            buf = self.global_buffer(name, ann, loc)
            self.param_buffers[name] = buf
            self.bind_name(name, buf)

    # --- B = T.empty(...)
    def maybe_alloc(self, name: str, call: ast.Call):
        fn = self.expr(call.func)
        if getattr(fn, "__t2t__", None) != "empty":
            return super().maybe_alloc(name, call)
        if self.kernel is not None:
            raise self.error("T.empty declares an output tensor: call it before 'with T.Kernel(...)'", call)
        args = [self.expr(a) for a in call.args]
        kwargs = {k.arg: self.expr(k.value) for k in call.keywords}
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise self.error(f"T.empty got unexpected keyword argument(s) {', '.join(kwargs)}", call)
        if dtype is None and len(args) > 1 and lookup_dtype(args[-1]) is not None and not isinstance(args[-1], int):
            dtype = args.pop()
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            shape = tuple(args[0])
        else:
            shape = tuple(args)
        if not shape:
            raise self.error("T.empty needs a shape", call)
        dt = self.dtype_arg("float32" if dtype is None else dtype, call)
        if self.declaring:
            return PendingTensor(name)
        buf = self.global_buffer(self.fresh_name(name), TensorType(shape, dt), self.loc(call))
        self.outputs.append(buf)
        return buf

    # --- scalars computed before the kernel (from T.dynamic sizes or, in phase 1, constants)
    def assign_name(self, name: str, value, node) -> None:
        if self.kernel is None and isinstance(value, (ir.Expr, ir.Var)):
            self.bind_name(name, value)  # a pure expression: inlined where it is used
            return
        super().assign_name(name, value, node)

    def stmt_With(self, node: ast.With) -> None:
        if self.declaring and self.kernel is None:
            raise _StopDeclarations()
        super().stmt_With(node)

    def stmt_Return(self, node: ast.Return) -> None:
        if self.kernel is not None:
            raise self.error("'return' inside T.Kernel: return the T.empty outputs after the kernel", node)
        if self.declaring:
            raise _StopDeclarations()
        value = self.expr(node.value) if node.value is not None else None
        raise _Return((value, node))


def _eager_args(tree: ast.FunctionDef) -> list:
    args = tree.args
    return list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)


@rule("const")
def bind_const(b: Binder, node, args):
    if not isinstance(b, EagerBinder):
        raise b.error(
            "T.const is for eager-style @tilelang.jit kernels (no inner @T.prim_func)", node,
            "in a @T.prim_func use a factory argument, or T.dynamic for a run-time size")  # fmt: skip
    return b.declare_const(args["name"], args["dtype"], node)


@rule("empty")
def bind_empty(b: Binder, node, args):
    if not isinstance(b, EagerBinder):
        raise b.error("T.empty is for eager-style @tilelang.jit kernels (no inner @T.prim_func)", node,
                      "in a @T.prim_func declare outputs as parameters and use out_idx")  # fmt: skip
    raise b.error("assign T.empty to a name: 'B = T.empty(shape, dtype)', then 'return B'", node)


def declare_eager(source: FunctionSource, values: dict, scalars: dict) -> EagerDecls:
    """Phase 1: bind the declarations before the first T.Kernel with constants as placeholders."""
    binder = EagerBinder(source, values, scalars)
    _signature_tensors(binder, source)
    try:
        binder.bind_block(source.tree.body)
    except (_StopDeclarations, _Return):
        pass
    return EagerDecls(binder.consts, binder.tensor_decls, binder.loc(source.tree))


def _signature_tensors(binder: EagerBinder, source: FunctionSource) -> None:
    """``def f(A: T.Tensor((128,), T.float32), ...)``: a tensor declared in the signature."""
    for arg in _eager_args(source.tree):
        if arg.annotation is None or arg.arg in binder.scalar_vars:
            continue
        try:
            ann = binder.expr(arg.annotation)
        except TileLangCompileError:
            continue
        if isinstance(ann, TensorType) and isinstance(binder.lookup(arg.arg, arg), PendingTensor):
            loc = binder.loc(arg)
            binder.tensor_decls[arg.arg] = (ann, loc)
            if not binder.declaring:
                buf = binder.global_buffer(arg.arg, ann, loc)
                binder.param_buffers[arg.arg] = buf
                binder.bind_name(arg.arg, buf)


def bind_eager(source: FunctionSource, values: dict, scalars: dict, const_values: dict) -> ir.PrimFunc:
    """Phase 2: bind an eager-style kernel with every constant known.

    ``values``: compile-time arguments by name; ``scalars``: name -> DType of run-time scalar
    parameters; every other parameter is a tensor declared in the body.  Kernel parameters are the
    tensors and scalars in signature order, then the ``T.empty`` outputs in ``return`` order.
    """
    binder = EagerBinder(source, values, scalars, dict(const_values))
    _signature_tensors(binder, source)
    returned, ret_node = None, None
    try:
        binder.bind_block(source.tree.body)
    except _Return as ret:
        returned, ret_node = ret.value
    tree_loc = binder.loc(source.tree)
    if not binder.kernels:
        raise TileLangCompileError("the kernel function contains no 'with T.Kernel(...)' block", tree_loc)
    missing = [n for n in const_values if n not in binder.consts]
    if missing:
        raise TileLangCompileError(f"T.const {', '.join(missing)} not declared in {source.name}", tree_loc)
    outputs = [] if returned is None else list(returned) if isinstance(returned, (tuple, list)) else [returned]
    ret_loc = binder.loc(ret_node) if ret_node is not None else tree_loc
    for out in outputs:
        if not isinstance(out, ir.Buffer) or out not in binder.outputs:
            what = f"parameter '{out.name}'" if isinstance(out, ir.Buffer) else repr(out)
            raise TileLangCompileError(
                f"an eager kernel returns only T.empty outputs, but this returns {what}", ret_loc)  # fmt: skip
    if len(set(map(id, outputs))) != len(outputs):
        raise TileLangCompileError("the same T.empty output is returned twice", ret_loc)
    unreturned = [b.name for b in binder.outputs if b not in outputs]
    if unreturned:
        raise TileLangCompileError(
            f"T.empty output(s) {', '.join(unreturned)} must be returned: 'return {', '.join(unreturned)}'", ret_loc)  # fmt: skip
    params = []
    for name in binder.param_names:
        if name in binder.param_buffers:
            params.append(binder.param_buffers[name])
        elif name in binder.scalar_vars:
            params.append(binder.scalar_vars[name])
    n_in = len(params)
    params += outputs
    func = ir.PrimFunc(source.name, params, binder.kernels, list(range(n_in, len(params))),
                       list(binder.sizes.values()), tree_loc, dict(binder.consts))  # fmt: skip
    return func
