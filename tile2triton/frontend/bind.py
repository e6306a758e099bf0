"""Bind: walk a kernel's Python AST and build TileIR.

Compile-time Python (factory arguments, block sizes, ``if`` on constants, helper functions)
is evaluated here; everything that depends on kernel values becomes TileIR.  Each ``T.*``
primitive has one binding rule in ``RULES`` (``rules.py``); eager-style kernels are bound by
``eager_bind.py``'s subclass of the ``Binder``.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import math

from .. import ir
from .. import language as T
from ..errors import CheckFailedError, TileLangCompileError
from ..ir import BOOL, INT32
from ..ir.evaluate import row_major_strides
from ..ir.exprs import as_expr, const_int, is_python_value, static, tvm_dtype, update_of
from ..language.dtypes import (
    POINTER,
    DType,
    PointerType,
    dtype_error,
    global_dtype,
    is_packed,
    is_packed_int4,
    lookup_dtype,
    packed_dtype,
    packed_name,
    typed_int,
    vector_parts,
)
from ..language.proxy import TensorType
from . import packed, vectors
from .bind_expr import _PY_BINOPS, ElementRef, ExprBinder, KernelReturn
from .persistent import persistent_loop
from .reducer_epochs import ReducerEpochs
from .rules import RULES
from .rules_base import DeclaredVar
from .rules_fragments import resolve_fragment_ops
from .rules_memory import make_tensor
from .rules_reduce import CommReducer
from .rules_scopes import WITH_RULES, python_with
from .source import FunctionSource, shape_text
from .tir_launch import tir_launch
from .warp_sections import BarrierEvent, schedule_kernel, warp_group_condition

_ALLOC_SCOPES = {"alloc_shared": ir.SHARED, "alloc_fragment": ir.FRAGMENT, "alloc_local": ir.LOCAL}


class Binder(ExprBinder):
    """Binds one ``@T.prim_func`` (lazy style); ``RULES`` are handed this object."""

    eager = False  # T.const / T.empty are for eager-style kernels (``eager_bind.EagerBinder``)

    def __init__(self, source: FunctionSource):
        self.source = source
        self.file = source.file
        self.scopes: list[dict] = [{}]
        self.body_stack: list[list] = []
        self.kernel: ir.Kernel | None = None
        self.kernels: list[ir.Kernel] = []
        self.params: list = []
        self.workspaces: list[int] = []  # T.alloc_global: params the runtime allocates per call
        self.empties: list[int] = []  # T.empty in a @T.prim_func: outputs the runtime allocates
        self.sizes: dict[str, ir.Var] = {}
        self.names_used: dict[str, int] = {}
        self.reducers: dict = {}  # T.alloc_reducer buffer -> its op (sum, max, min)
        self.reducers_written: set = set()  # reducers given a starting value so far (program order)
        self.epochs = ReducerEpochs()  # the reducers' accesses, checked at the kernel's end (reducer_epochs.py)
        self.parallel_depth = 0  # T.Parallel loops around the statement being bound
        self.loop_kinds: list[str] = []  # the loops around it, innermost last (what a 'break' leaves)
        self.ws_threads: int | None = None  # inside ``with T.ws(...)``: its warp groups' threads
        self.func_attrs: dict = {}  # T.annotate_pass_configs / annotate_compile_flags (PrimFunc.attrs)
        self.inlined_calls = 0  # depth of T.macro / helper bodies being inlined (their 'return' is theirs)
        self.in_plain_helper = False  # binding a plain Python helper's body (bind_expr.inline_macro)
        self.frame_base = 0  # the first scope of the function being bound (an inlined body's own locals)
        self.outer_tensors: list[ir.Buffer] = []  # T.make_tensor before the T.Kernel blocks: made in each
        self.fragment_shadows: dict = {}  # (local array, shape, layout) -> the block tile its MMA fragments stand for

    # ------------------------------------------------------------------ helpers
    def loc(self, node) -> ir.Loc:
        end = node.end_col_offset if getattr(node, "end_lineno", None) == node.lineno else None
        return ir.Loc(self.file, node.lineno, node.col_offset, end)

    def error(self, message: str, node, hint: str | None = None) -> TileLangCompileError:
        return TileLangCompileError(message, self.loc(node), hint)

    def emit(self, stmt: ir.Stmt) -> None:
        written = stmt.buffer if isinstance(stmt, ir.Store) else getattr(getattr(stmt, "dst", None), "buffer", None)
        if written in self.reducers and not isinstance(stmt, ir.Atomic):
            self.reducers_written.add(written)
            self.epochs.log(self, written, "store", stmt.loc)
        self.body_stack[-1].append(stmt)

    def check_reducer_update(self, buffer: ir.Buffer, node) -> None:
        """A reducer update must follow its starting value and come from T.Parallel iterations."""
        if buffer not in self.reducers_written:
            raise self.error(
                f"update of reducer '{buffer.name}' before T.reducer_init: it has no starting value",
                node,
                hint="call T.reducer_init(acc) (or T.clear(acc)) before the T.Parallel loop",
            )
        if self.parallel_depth == 0 and not self.kernel.thread_vars:
            # every thread of the block would contribute the same value: TileLang rejects it too
            raise self.error(f"update of reducer '{buffer.name}' outside any T.Parallel loop", node)

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

    def barrier_event(self, kind: str, ref, parity, node, name: str, count=None, pair=None) -> None:
        """An mbarrier (or named barrier) arrive or wait, kept in the IR until the kernel's sections are ordered."""
        self.emit(BarrierEvent(self.loc(node), kind, ref, parity, node, name, self.ws_threads, count, pair))

    def bind_name(self, name: str, value) -> None:
        self.scopes[-1][name] = value

    def bind_block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        body: list[ir.Stmt] = []
        self.body_stack.append(body)
        try:
            for s in stmts:
                if body and isinstance(body[-1], (ir.Break, ir.Continue)):
                    break  # unreachable, as TileLang ignores it
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
        dim = typed_int(dim)
        if isinstance(dim, bool) or not isinstance(dim, (int, T.Dynamic, T.SizeExpr, ir.Expr, ir.Var)):
            raise TileLangCompileError(
                f"tensor dimension {dim!r} of '{where}' is not an int, a T.dynamic size or an expression of them", loc
            )
        if isinstance(dim, (T.Dynamic, T.SizeExpr)):  # M, or M // 128: checked (or bound) at call time
            return self.symbolic_size(dim)
        if isinstance(dim, ir.Var):
            return ir.VarRef(dim)
        return dim

    def global_buffer(self, name: str, ttype: TensorType, loc: ir.Loc) -> ir.Buffer:
        shape = tuple(self.shape_dim(d, name, loc) for d in ttype.shape)
        strides = None if ttype.strides is None else tuple(self.shape_dim(d, name, loc) for d in ttype.strides)
        dtype, shape, strides, lanes = vectors.global_layout(ttype.dtype, shape, strides)
        if strides is None:
            strides = row_major_strides(shape)
        if is_packed(dtype) and shape and isinstance(shape[-1], int) and shape[-1] % 2:
            raise TileLangCompileError(
                f"{packed_name(dtype)} tensor '{name}' has an odd last dim {shape[-1]}: its bytes hold two values each",
                loc,
            )
        buf = ir.Buffer(name, ir.GLOBAL, shape, dtype, loc, strides)
        if lanes is not None:
            vectors.register(self, buf, lanes)
        return buf

    def global_dtype_arg(self, value, node) -> DType:
        """The dtype of a global tensor the kernel declares (``T.empty``): ``dtype_arg``'s, or a vector dtype."""
        return global_dtype(value) if vector_parts(value) is not None else self.dtype_arg(value, node)

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
            elif isinstance(ann, PointerType):  # a raw address: T.make_tensor views memory through it
                var = ir.Var(arg.arg, POINTER, "param")
                self.params.append(var)
                self.bind_name(arg.arg, ir.VarRef(var))
            elif lookup_dtype(ann) is not None:
                var = ir.Var(arg.arg, lookup_dtype(ann), "param")
                self.params.append(var)
                self.bind_name(arg.arg, ir.VarRef(var))
            elif isinstance(ann, DType) and ann.kind == "unsupported":  # T.ptr, fp4, ...: say why
                raise TileLangCompileError(f"parameter '{arg.arg}': {dtype_error(ann)}", loc)
            else:
                raise TileLangCompileError(
                    f"parameter '{arg.arg}' needs a T.Tensor(shape, dtype) or scalar dtype annotation, got {ann!r}", loc
                )

    # ------------------------------------------------------------------ statements
    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"Python '{type(node).__name__}' statements are not supported in a TileLang kernel", node)
        method(node)

    def stmt_Pass(self, node) -> None:
        pass

    def stmt_Break(self, node: ast.Break) -> None:
        self.loop_exit(ir.Break, node)

    def stmt_Continue(self, node: ast.Continue) -> None:
        self.loop_exit(ir.Continue, node)

    def loop_exit(self, node_type, node) -> None:
        """``break`` / ``continue`` leave sequential loops; T.Parallel iterations and T.Pipelined
        stages are not run one after another, so there is nothing to leave."""
        word = node_type.__name__.lower()
        kind = self.loop_kinds[-1] if self.loop_kinds else None
        if kind is None:
            raise self.error(f"'{word}' outside a kernel loop", node)
        if kind == "python":
            raise self.error(f"'{word}' in a Python loop over a compile-time sequence (unrolled while binding): "
                             "filter the sequence instead", node)  # fmt: skip
        if kind not in ("serial", "unroll", "while"):
            raise self.error(
                f"'{word}' cannot leave a T.{kind} loop: only T.serial, T.unroll, range and while loops",
                node,
                hint="keep a flag and test it in an if, or loop with T.serial",
            )
        self.emit(node_type(self.loc(node)))

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Assert(self, node) -> None:
        test = self.expr(node.test)
        if is_python_value(test) and not test:
            raise self.error("assertion failed while compiling the kernel", node)

    def stmt_FunctionDef(self, node: ast.FunctionDef) -> None:
        """A function defined in kernel code (a layout function inside a helper): TileLang runs the
        kernel body as Python, so this is a Python function over the names visible here (compiled
        from the kernel file, so handed kernel values it inlines like any helper)."""
        names = dict(self.source.scope)
        for scope in self.scopes:
            names.update(scope)
        try:
            code = compile(ast.Module(body=[node], type_ignores=[]), self.file, "exec")
            exec(code, names)  # noqa: S102 - the user's own kernel code, as TileLang runs it
        except Exception as exc:  # noqa: BLE001 - a decorator that fails, a name it cannot see
            raise self.error(f"defining {node.name}() failed: {exc}", node) from None
        self.bind_name(node.name, names[node.name])

    def function_return(self, value, node) -> KernelReturn:
        """What ends the function being bound with ``value`` (a ``return`` at ``node``)."""
        return KernelReturn(value)

    def stmt_Return(self, node: ast.Return) -> None:
        if self.kernel is not None and not self.inlined_calls:
            raise self.error("'return' inside T.Kernel is supported as one of the kernel's own statements, "
                             "which ends the kernel; under an 'if' or a loop it would end some threads only", node)  # fmt: skip
        raise KernelReturn(self.expr(node.value) if node.value is not None else None)

    def stmt_With(self, node: ast.With) -> None:
        if len(node.items) > 1:  # `with a, b:` is `with a: with b:`
            inner = ast.copy_location(ast.With(items=node.items[1:], body=node.body), node)
            self.stmt(ast.copy_location(ast.With(items=node.items[:1], body=[inner]), node))
            return
        item = node.items[0]
        call = item.context_expr
        fn = self.expr(call.func) if isinstance(call, ast.Call) else None
        if self.kernel is not None and getattr(fn, "__t2t__", None) is None:
            python_with(self, node)  # a plain Python context manager around kernel statements
            return
        if getattr(fn, "__t2t__", None) == "ws" and item.optional_vars is None:
            saved, self.ws_threads = self.ws_threads, 128 * max(1, len(call.args))  # warp groups of 128
            try:  # a warp group's statements, run in program order (warp_sections.py)
                body = self.bind_block(node.body)
            finally:
                self.ws_threads = saved
            if self.kernel.thread_vars:  # the thread view: only the warp groups' threads run them
                body = [ir.If(self.loc(node), warp_group_condition(self, call, node), body, [])]
            for s in body:
                self.emit(s)
            return
        if getattr(fn, "__t2t__", None) == "attr" and item.optional_vars is None:
            self.attr_scope(node, call)
            return
        if getattr(fn, "__t2t__", None) in WITH_RULES:  # T.sblock (rules_scopes.py)
            WITH_RULES[fn.__t2t__](self, node, call)
            return
        if getattr(fn, "__t2t__", None) not in ("Kernel", "ClusterKernel"):
            raise self.error("only 'with T.Kernel(...) as ...' is supported", node)
        if self.kernel is not None:
            raise self.error("T.Kernel cannot be nested inside another T.Kernel", node)
        args = self.call_args(fn, call)
        grid = list(args["blocks"])
        if len(grid) > 3:
            raise self.error("T.Kernel takes at most 3 grid extents", call)
        # T.block_rank_in_cluster reads the cluster's shape (frontend/rules_grid.py)
        self.cluster_dims = None
        if fn.__t2t__ == "ClusterKernel":
            self.cluster_dims = self.check_cluster_dims(args["cluster_dims"], grid, call)
        gridless = not grid  # T.Kernel(threads=...): one block, and no block index to bind
        if gridless:
            grid = [1]
        threads = args["threads"]
        if threads is None:
            threads = 128
        extents = tuple(threads) if isinstance(threads, (list, tuple)) else (threads,)
        target = item.optional_vars

        def bind_targets(block_vars):
            if gridless and target is not None:
                self.assign_target(target, [], node)  # TileLang binds the empty list of block indices
            elif isinstance(target, ast.Name):
                block_vars[0].name = target.id
                self.bind_name(target.id, ir.VarRef(block_vars[0]))
            elif isinstance(target, (ast.Tuple, ast.List)):
                if len(target.elts) > len(block_vars):
                    raise self.error(f"T.Kernel has {len(block_vars)} grid dims but {len(target.elts)} names", target)
                for var, elt in zip(block_vars, target.elts):
                    var.name = elt.id
                    self.bind_name(elt.id, ir.VarRef(var))

        self.open_kernel(node, call, grid, extents, bind_targets, node.body)

    def open_kernel(self, node, call, grid: list, extents: tuple, bind_targets, body: list) -> None:
        """A kernel of ``grid`` blocks of ``extents`` threads running ``body``: ``with T.Kernel``, or
        TIR's ``for bx in T.thread_binding(n, thread="blockIdx.x")`` launch loops.  ``bind_targets``
        gets the block variables and binds the names the kernel's statements see."""
        if not 1 <= len(extents) <= 3 or not all(isinstance(t, int) and t > 0 for t in extents):
            raise self.error(f"threads must be a positive compile-time int (or 1-3 of them), got {extents!r}", call)
        threads = 1
        for t in extents:
            threads *= t
        names = ["bx", "by", "bz"]
        block_vars = [ir.Var(names[i], INT32, "block") for i in range(len(grid))]
        name = self.source.name if not self.kernels else f"{self.source.name}_{len(self.kernels)}"
        kernel = ir.Kernel(
            self.loc(node), name, [as_expr(g) for g in grid], threads, block_vars, [], thread_extents=extents
        )
        self.scopes.append({})
        self.kernel = kernel
        try:
            bind_targets(block_vars)
            made = [ir.MakeTensor(buf.loc, buf) for buf in self.outer_tensors]
            # a bare `return` among the kernel's statements ends it (TileLang's builder returns there,
            # closing the open frames) and the function: what follows is never built
            ends = next((k for k, st in enumerate(body) if isinstance(st, ast.Return) and st.value is None), None)
            kernel.body = made + self.bind_block(body if ends is None else body[:ends])
            resolve_fragment_ops(self, kernel)
            schedule_kernel(self, kernel)
            self.epochs.check(kernel)
        finally:
            self.kernel = None
            self.scopes.pop()
        self.kernels.append(kernel)
        self.emit(kernel)
        if ends is not None:
            raise self.function_return(None, body[ends])

    def check_cluster_dims(self, dims, grid: list, call) -> list:
        """T.ClusterKernel: blocks and block indices are T.Kernel's, so it runs as one (clusters
        only matter to cluster-distributed shared memory, which tile2triton does not support).
        As CUDA requires, each cluster dim must divide its grid extent."""
        dims = [dims] if isinstance(dims, int) else list(dims) if isinstance(dims, (list, tuple)) else None
        if dims is None or not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d > 0 for d in dims):
            raise self.error("T.ClusterKernel: cluster_dims must be a positive int or 1-3 of them", call)
        for axis, d in enumerate(dims):
            extent = grid[axis] if axis < len(grid) else 1
            if d > 1 and (not isinstance(extent, int) or extent % d):
                raise self.error(
                    f"T.ClusterKernel: cluster dim {axis} ({d}) must divide the grid extent {extent!r}", call
                )
        return dims

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error("for/else is not supported", node)
        while isinstance(node.iter, ast.IfExp):  # `for k in (T.Pipelined(n) if n >= 2 else T.serial(n)):`
            test = self.expr(node.iter.test)
            if not is_python_value(test):
                raise self.error("a loop's iterable can be chosen only by a compile-time condition", node.iter)
            node = ast.copy_location(
                ast.For(node.target, node.iter.body if test else node.iter.orelse, node.body, []), node
            )
        it = node.iter
        fn = self.expr(it.func) if isinstance(it, ast.Call) else None
        kind = getattr(fn, "__t2t__", None) or ("serial" if fn is builtins.range else None)
        if fn is builtins.range and self.in_plain_helper and all(is_python_value(self.expr(a)) for a in it.args):
            kind = None  # Python's own loop, unrolled: TileLang runs a plain helper as Python
        if kind is None:
            self.python_loop(node)
            return
        if kind == "Parallel":
            self.parallel_loop(node, fn, it)
            return
        if kind == "thread_binding" and self.kernel is None:
            tir_launch(self, node)
            return
        if kind == "thread_binding":
            self.thread_binding_loop(node, fn, it)
            return
        if kind == "grid":
            self.grid_loop(node, it)
            return
        if kind == "Persistent":
            persistent_loop(self, node, fn, it)
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
        if self.kernel is None:
            self.host_loop(node, start, stop, step)
            return
        var = ir.Var(node.target.id, INT32, "loop")
        num_stages = None
        if kind == "Pipelined":
            num_stages = args.get("num_stages") or 0
        body = self.bind_loop_body(node.body, {node.target.id: ir.VarRef(var)}, kind)
        self.emit(
            ir.For(self.loc(node), var, as_expr(start), as_expr(stop), as_expr(step), kind.lower(), body, num_stages)
        )

    def host_loop(self, node: ast.For, start, stop, step) -> None:
        """A loop outside T.Kernel (around kernel launches): TileLang's host code runs it, launching each
        kernel once per iteration; here it is unrolled while binding, its bounds known when compiling."""
        bounds = [static(as_expr(v)) for v in (start, stop, step)]
        if any(v is None for v in bounds):
            raise self.error("a loop outside T.Kernel needs bounds known when compiling", node.iter)
        self.python_loop(node, range(*bounds))

    def python_loop(self, node: ast.For, iterable=None) -> None:
        """``for k, (start, size) in enumerate(zip(starts, sizes)):`` over a compile-time sequence:
        unrolled while binding, as TileLang's builder runs the Python loop (the body once per element,
        its names bound to the element's values)."""
        iterable = self.expr(node.iter) if iterable is None else iterable
        if not is_python_value(iterable) or not hasattr(iterable, "__iter__"):
            raise self.error(
                "kernel loops iterate over T.Parallel, T.serial, T.Pipelined, T.unroll, range or a compile-time "
                "sequence",
                node.iter,
            )
        self.loop_kinds.append("python")
        try:
            for value in list(iterable):
                if isinstance(node.target, ast.Name):
                    self.assign_name(node.target.id, value, node)
                else:
                    self.bind_pattern(node.target, value, node)
                for s in node.body:
                    self.stmt(s)
        finally:
            self.loop_kinds.pop()

    def grid_loop(self, node: ast.For, it: ast.Call) -> None:
        """``for i, j in T.grid(M, N):``: sequential loops nested in the order of the extents."""
        if it.keywords or not it.args:
            raise self.error("T.grid takes the loop extents by position", it)
        extents = [self.expr(a) for a in it.args]
        target = node.target
        names = [target] if isinstance(target, ast.Name) else getattr(target, "elts", None)
        if not names or not all(isinstance(n, ast.Name) for n in names) or len(names) != len(extents):
            raise self.error(f"T.grid with {len(extents)} extents binds {len(extents)} names", target)
        loop_vars = [ir.Var(n.id, INT32, "loop") for n in names]
        self.scopes.append({n.id: ir.VarRef(v) for n, v in zip(names, loop_vars)})
        self.loop_kinds.extend(["serial"] * len(loop_vars))
        try:
            body = self.bind_block(node.body)
        finally:
            del self.loop_kinds[-len(loop_vars) :]
            self.scopes.pop()
        loc = self.loc(node)
        for var, extent in reversed(list(zip(loop_vars, extents))):
            body = [ir.For(loc, var, const_int(0), as_expr(extent), const_int(1), "serial", body, None)]
        self.emit(body[0])

    def attr_scope(self, node: ast.With, call: ast.Call) -> None:
        """``with T.attr(T.comm_reducer(...), "reduce_scope", handle):`` makes the reducer the one
        ``T.tvm_thread_allreduce`` uses; other attributes are scheduling hints.  The third argument
        (a TVM handle) is never evaluated."""
        if len(call.args) < 2:
            raise self.error("T.attr(node, attr_key, value) takes its arguments by position", call)
        key = self.expr(call.args[1])
        saved = getattr(self, "reduce_scope", None)
        if key == "reduce_scope":
            reducer = self.expr(call.args[0])
            if not isinstance(reducer, CommReducer):
                raise self.error('T.attr(..., "reduce_scope", ...) takes a T.comm_reducer(...)', call.args[0])
            self.reduce_scope = reducer
        try:
            for s in node.body:
                self.stmt(s)
        finally:
            self.reduce_scope = saved

    def thread_binding_loop(self, node: ast.For, fn, it: ast.Call) -> None:
        """``for tx in T.thread_binding(0, n, thread="threadIdx.x"):``: the body runs once per thread,
        with ``tx`` the thread index (the thread view)."""
        if not isinstance(node.target, ast.Name):
            raise self.error("a T.thread_binding loop binds one name", node.target)
        index = RULES["thread_binding"](self, it, self.call_args(fn, it))
        body = self.bind_loop_body(node.body, {node.target.id: index}, "thread_binding")
        for s in body:
            self.emit(s)

    def parallel_loop(self, node: ast.For, fn, it: ast.Call) -> None:
        args = self.call_args(fn, it)
        extents = [typed_int(e) for e in args["extents"]]
        for e in extents:
            if not isinstance(e, (int, ir.Expr)) or (isinstance(e, ir.Expr) and not e.dtype.is_int):
                raise self.error("T.Parallel extents must be integers", it)
        targets = node.target.elts if isinstance(node.target, (ast.Tuple, ast.List)) else [node.target]
        if len(targets) != len(extents):
            raise self.error(f"T.Parallel has {len(extents)} extents but {len(targets)} loop names", node.target)
        if not all(isinstance(e, int) for e in extents):
            self.chunked_parallel(node, targets, extents)
            return
        lane_vars = [ir.Var(t.id, INT32, "lane") for t in targets]
        body = self.bind_parallel_body(node.body, {t.id: ir.VarRef(v) for t, v in zip(targets, lane_vars)})
        # ``for i in T.Parallel(m): for j in T.Parallel(n):`` is one (m, n) region in TileLang.
        if len(body) == 1 and isinstance(body[0], ir.Parallel):
            inner = body[0]
            lane_vars, extents, body = lane_vars + inner.vars, extents + inner.extents, inner.body
        self.emit(ir.Parallel(self.loc(node), lane_vars, extents, body))

    def bind_loop_body(self, stmts: list, scope: dict, kind: str) -> list:
        """A loop's body, with the loop's variables (``scope``) bound around it."""
        self.scopes.append(scope)
        self.loop_kinds.append(kind)
        try:
            return self.bind_block(stmts)
        finally:
            self.loop_kinds.pop()
            self.scopes.pop()

    def bind_parallel_body(self, stmts: list, scope: dict) -> list:
        """A T.Parallel body, with its lane variables (``scope``) bound around it."""
        self.scopes.append(scope)
        self.parallel_depth += 1
        self.loop_kinds.append("Parallel")
        try:
            return self.bind_block(stmts)
        finally:
            self.loop_kinds.pop()
            self.parallel_depth -= 1
            self.scopes.pop()

    def chunked_parallel(self, node: ast.For, targets, extents) -> None:
        """``T.Parallel(n)`` with ``n`` known at run time: the iterations in chunks of a fixed number
        of lanes, one chunk after another (``for c in T.serial(ceildiv(n, C)): T.Parallel(C)``),
        each lane ``i = c * C + lane`` active where ``i < n``.  Iterations are independent, so the
        order of chunks does not matter."""
        loc = self.loc(node)
        dynamic = [d for d, e in enumerate(extents) if not isinstance(e, int)]
        chunk = 128 if len(dynamic) == 1 else 16
        lane_vars, lane_extents, chunk_vars, scope, conds = [], [], [], {}, []
        for d, (t, e) in enumerate(zip(targets, extents)):
            if d not in dynamic:
                var = ir.Var(t.id, INT32, "lane")
                lane_vars.append(var)
                lane_extents.append(e)
                scope[t.id] = ir.VarRef(var)
                continue
            lane = ir.Var(self.fresh_name(f"{t.id}_lane"), INT32, "lane")
            part = ir.Var(self.fresh_name(f"{t.id}_chunk"), INT32, "loop")
            lane_vars.append(lane)
            lane_extents.append(chunk)
            chunk_vars.append((part, e))
            index = ir.BinOp("+", ir.BinOp("*", ir.VarRef(part), const_int(chunk), INT32), ir.VarRef(lane), INT32)
            scope[t.id] = index
            conds.append(ir.Compare("<", index, e, BOOL))
        body = self.bind_parallel_body(node.body, scope)
        cond = conds[0]
        for c in conds[1:]:
            cond = ir.BinOp("and", cond, c, BOOL)
        stmt = ir.Parallel(loc, lane_vars, lane_extents, [ir.If(loc, cond, body, [])])
        for part, e in reversed(chunk_vars):
            chunks = ir.BinOp("//", ir.BinOp("+", e, const_int(chunk - 1), INT32), const_int(chunk), INT32)
            stmt = ir.For(loc, part, const_int(0), chunks, const_int(1), "serial", [stmt])
        self.emit(stmt)

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
        self.loop_kinds.append("while")
        try:
            body = self.bind_block(node.body)
        finally:
            self.loop_kinds.pop()
        self.emit(ir.While(self.loc(node), as_expr(cond), body))

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error("annotations without a value are only for eager-style tensor parameters", node)
        value = self.expr(node.value)
        annotation = vectors.annotation_dtype(self, node.annotation)
        if annotation is not None:  # v: T.float16x2 = ...: lanes of that dtype
            value = vectors.cast(self, value, annotation, node)
        self.assign_target(node.target, value, node)

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = None
        while isinstance(node.value, ast.IfExp):  # `a = T.alloc_fragment(...) if flag else ...`, flag known
            test = self.expr(node.value.test)
            if not is_python_value(test):
                break
            node = ast.copy_location(ast.Assign(node.targets, node.value.body if test else node.value.orelse), node)
        if isinstance(node.value, ast.Call) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = self.maybe_alloc(node.targets[0].id, node.value)
        target = node.targets[0]
        if (  # a, b = T.alloc_var(T.int32), T.alloc_var(T.int32): one allocation per name
            len(node.targets) == 1
            and isinstance(target, (ast.Tuple, ast.List))
            and isinstance(node.value, (ast.Tuple, ast.List))
            and len(target.elts) == len(node.value.elts)
            and all(isinstance(t, ast.Name) and isinstance(v, ast.Call) for t, v in zip(target.elts, node.value.elts))
        ):
            allocated = [self.maybe_alloc(t.id, v) for t, v in zip(target.elts, node.value.elts)]
            if all(a is not None for a in allocated):
                for t, a in zip(target.elts, allocated):
                    self.assign_target(t, a, node)
                return
            if any(a is not None for a in allocated):
                raise self.error("allocate every name of a tuple assignment, or none of them", node)
        if value is None:
            value = self.expr(node.value)
        for target in node.targets:
            self.assign_target(target, value, node)

    def maybe_alloc(self, name: str, call: ast.Call):
        fn = self.expr(call.func)
        tag = getattr(fn, "__t2t__", None)
        if tag in _ALLOC_SCOPES:
            args = self.call_args(fn, call)
            vector = vectors.maybe_alloc(self, name, tag, args, call)  # a vector dtype: a trailing lane axis
            if vector is not None:
                return vector
            shape = args["shape"]
            shape = tuple(map(typed_int, shape)) if isinstance(shape, (list, tuple)) else (typed_int(shape),)
            if not all(isinstance(d, int) and d > 0 for d in shape):
                raise self.error(f"{tag} needs a static positive shape, got {shape_text(call, shape)}", call)
            buf = ir.Buffer(self.fresh_name(name), _ALLOC_SCOPES[tag], shape, self.dtype_arg(args["dtype"], call),
                            self.loc(call))  # fmt: skip
            self.emit(ir.Alloc(buf.loc, buf))
            return buf
        if tag == "alloc_global":
            if self.kernel is not None:
                raise self.error("T.alloc_global stands before the T.Kernel blocks that share it", call)
            args = self.call_args(fn, call)
            shape = args["shape"]
            shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
            ttype = TensorType(shape, self.dtype_arg(args["dtype"], call))
            buf = self.global_buffer(self.fresh_name(name), ttype, self.loc(call))
            self.workspaces.append(len(self.params))
            self.params.append(buf)
            return buf
        if tag == "empty" and not self.eager and self.kernel is None:
            # a @T.prim_func's own output (TileLang's func_attrs tests): a hidden tensor parameter the
            # runtime allocates, returned when the function returns it
            args = self.call_args(fn, call)
            shape = args["shape"]
            shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
            buf = self.global_buffer(self.fresh_name(name), TensorType(shape, self.global_dtype_arg(args["dtype"], call)),
                                     self.loc(call))  # fmt: skip
            self.empties.append(len(self.params))
            self.params.append(buf)
            return buf
        if tag in ("make_tensor", "make_tensor_from_addr"):  # named after the target
            return make_tensor(self, call, self.call_args(fn, call), name)
        if tag == "alloc_reducer":
            args = self.call_args(fn, call)
            shape = args["shape"]
            shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
            if args["op"] not in _REDUCER_KINDS:
                raise self.error(f"T.alloc_reducer op={args['op']!r}: use one of {', '.join(_REDUCER_KINDS)}", call)
            dtype = self.dtype_arg(args["dtype"], call)
            if args["op"].startswith("bit") and not (dtype.is_int or dtype == BOOL):
                raise CheckFailedError(  # an assert in TileLang
                    f"bitwise reducer op {args['op']!r} requires an integer dtype, got {dtype.name}", self.loc(call)
                )
            if not all(isinstance(d, int) and d > 0 for d in shape):
                raise self.error(f"alloc_reducer needs a static positive shape, got {shape_text(call, shape)}", call)
            buf = ir.Buffer(self.fresh_name(name), ir.FRAGMENT, shape, self.dtype_arg(args["dtype"], call),
                            self.loc(call))  # fmt: skip
            self.reducers[buf] = args["op"]
            if args.get("replication") is not None:  # TileLang's legacy (v1) reducer
                self.epochs.legacy.add(buf)
            self.emit(ir.Alloc(buf.loc, buf))
            return buf
        if tag == "alloc_var":
            args = self.call_args(fn, call)
            vector = vectors.maybe_alloc(self, name, tag, args, call)
            if vector is not None:
                return vector
            buf = ir.Buffer(self.fresh_name(name), ir.VAR, (1,), self.dtype_arg(args["dtype"], call), self.loc(call))
            init = args.get("init")
            if isinstance(init, str):  # alloc_var(dtype, scope) form
                init = None
            check_representable(self, init, buf.dtype, call)
            self.emit(ir.Alloc(buf.loc, buf, None if init is None else as_expr(init)))
            return buf
        return None

    def dtype_arg(self, value, node) -> DType:
        dt = lookup_dtype(value)
        if dt is None and isinstance(value, str) and packed_dtype(value) is not None:
            return packed_dtype(value)  # fp4 / int4: packed bytes in global memory (codegen/fp4.py)
        if dt is None:
            raise self.error(dtype_error(value), node)
        return dt

    def assign_target(self, target, value, node) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error("cannot unpack this value into the names on the left", node)
            if len(value) > 1 and self.kernel is not None:
                # Python evaluates the whole right side first: `a, b = b, a` and `A[0], A[1] = A[1], A[0]`
                # must not see the first assignment in the second
                value = [value[0], *(self.snapshot(v, t, node) for t, v in zip(target.elts[1:], value[1:]))]
            for t, v in zip(target.elts, value):
                self.assign_target(t, v, node)
        elif isinstance(target, ast.Subscript):
            ref = self.expr(target)
            if isinstance(ref, packed.Vector):  # an element of a vector buffer: lane by lane
                vectors.store(self, ref, value, node)
                return
            if isinstance(value, packed.Vector):  # x[i:i+n] = T.reinterpret(T.ldg64(...), T.float32x2)
                packed.store(self, ref, value, None, None, "a packed store", node)
                return
            if isinstance(ref, ir.Region) and isinstance(value, tuple):  # Prev[0:2] = T.atomic_addx2(...)
                self.store_vector(ref, value, node)
                return
            if isinstance(ref, ir.Region) and isinstance(value, ir.Region):  # A[0, 4:8] = A[0, 0:4]: a vector
                src, dst = [static(e) for e in value.extents if static(e) != 1], [static(e) for e in ref.extents
                                                                                   if static(e) != 1]  # fmt: skip
                if src != dst or None in src:
                    raise self.error(f"a region of {value.extents} elements cannot be stored into {ref.extents}", node)
                self.emit(ir.Copy(self.loc(node), value, ref))
                return
            if not isinstance(ref, ir.Load):
                raise self.error("assignment to a buffer needs one index per dimension", target)
            self.store(ref, value, node)
        else:
            raise self.error("unsupported assignment target", target)

    def snapshot(self, value, target, node):
        """A kernel value of a tuple assignment, bound to a fresh name before any target is assigned
        when an assignment could change it: it reads a buffer or a (re-assignable) let name."""
        if not isinstance(value, ir.Expr) or is_python_value(value):
            return value
        if not any(
            isinstance(e, ir.Load) or (isinstance(e, ir.VarRef) and e.var.kind == "let")
            for e in ir.iter_expr_tree(value)
        ):
            return value
        hint = f"{target.id}_new" if isinstance(target, ast.Name) else "value"
        var = ir.Var(self.fresh_name(hint), value.dtype, "let")
        self.emit(ir.Let(self.loc(node), var, value))
        return ir.VarRef(var)

    def store_vector(self, region: ir.Region, values: tuple, node) -> None:
        """``B[i, j : j + n] = v``, ``v`` a vector value of n elements (a tuple: TileLang's
        ``T.atomic_addx2/x4(..., return_prev=True)``): one store per element along the last dim."""
        *outer, last = [static(e) for e in region.extents]
        if any(e != 1 for e in outer) or last != len(values):
            raise self.error(f"a vector of {len(values)} elements is stored into a region of {len(values)} "
                             "consecutive elements of the last dimension", node)  # fmt: skip
        for k, v in enumerate(values):
            *lead, start = region.starts
            index = ir.BinOp("+", start, const_int(k), start.dtype)
            self.emit(ir.Store(self.loc(node), region.buffer, (*lead, index), as_expr(v, self.loc(node))))

    def store(self, ref: ir.Load, value, node) -> None:
        if isinstance(value, (ir.Buffer, ir.Region)):
            raise self.error("a tile cannot be stored into one element; use T.copy", node)
        if ref.buffer in self.reducers:
            kind = _REDUCER_KINDS[self.reducers[ref.buffer]]
            update = update_of(ref.buffer, ref.indices, value, (kind,))
            if update is not None:  # acc[i] = acc[i] + v: every iteration contributes v
                self.check_reducer_update(ref.buffer, node)
                self.epochs.unread(ref.buffer, ref.loc)
                self.epochs.log(self, ref.buffer, "store", self.loc(node))
                self.emit(ir.Atomic(self.loc(node), kind, ref, update[1]))
                return
        self.emit(ir.Store(self.loc(node), ref.buffer, ref.indices, as_expr(value, self.loc(node))))

    def assign_name(self, name: str, value, node) -> None:
        current, outside = None, False
        for depth in reversed(range(len(self.scopes))):
            if name in self.scopes[depth]:
                current, outside = self.scopes[depth][name], depth < self.frame_base
                break
        if outside and isinstance(current, ir.VarRef):
            current = None  # a caller's local: an inlined helper's assignment makes a local of its own, as Python's
        if isinstance(current, ir.Buffer) and current.scope == ir.VAR and not isinstance(value, ir.Buffer):
            self.emit(ir.Store(self.loc(node), current, (const_int(0),), as_expr(value, self.loc(node))))
            return
        if isinstance(current, ElementRef):  # a T.Ref macro parameter: the caller's element
            self.store(current.load, value, node)
            return
        if vectors.is_vector_var(self, current) and not isinstance(value, ir.Buffer):
            vectors.store(self, vectors.element(self, current, []), value, node)
            return
        if isinstance(value, packed.Vector) and self.kernel is not None:
            value = vectors.named(self, value, name, node)
        if is_python_value(value) or isinstance(value, (ir.Buffer, ir.Region, packed.Vector, DeclaredVar)):
            self.bind_name(name, value)
            return
        value = as_expr(value)
        if self.kernel is None:  # a host-side value (of sizes and scalar parameters): the name stands for it
            if any(isinstance(e, ir.Load) for e in ir.iter_expr_tree(value)):
                raise self.error("a buffer can only be read inside T.Kernel", node)
            self.bind_name(name, value)
            return
        if isinstance(current, ir.VarRef) and current.var.kind == "let":
            var = current.var
        else:
            var = ir.Var(self.fresh_name(name), tvm_dtype(value), "let")  # `signed char x = A[i] + A[i];`
        if var.dtype != value.dtype or (
            is_packed_int4(var.dtype) and isinstance(value, (ir.BinOp, ir.UnaryOp, ir.Call))
        ):
            value = ir.Cast(value, var.dtype)  # stored in the name's type (int4: the low bits of its int32 arithmetic)
        self.emit(ir.Let(self.loc(node), var, value))
        self.bind_name(name, ir.VarRef(var))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        op, pyop = _PY_BINOPS[type(node.op)]
        if isinstance(node.target, ast.Subscript):
            ref = self.expr(node.target)
            if isinstance(ref, packed.Vector):  # an element of a vector buffer
                vectors.store(self, ref, self.binop(op, pyop, ref, self.expr(node.value), node), node)
                return
            if not isinstance(ref, ir.Load):
                raise self.error("augmented assignment to a buffer needs one index per dimension", node.target)
            self.store(ref, self.binop(op, pyop, ref, self.expr(node.value), node), node)
            return
        if isinstance(node.target, ast.Name):
            old = self.lookup(node.target.id, node.target)
            if isinstance(old, ir.Buffer) and old.scope == ir.VAR:
                old = ir.Load(old, (const_int(0),))
            elif isinstance(old, ElementRef):
                old = old.load
            elif vectors.is_vector_var(self, old):
                old = vectors.element(self, old, [])
            self.assign_name(node.target.id, self.binop(op, pyop, old, self.expr(node.value), node), node)
            return
        raise self.error("unsupported augmented assignment target", node.target)

    # ------------------------------------------------------------------ expressions


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


# T.alloc_reducer op -> the ir.Atomic kind of an update
_REDUCER_KINDS = {"sum": "add", "max": "max", "min": "min", "bitand": "and", "bitor": "or", "bitxor": "xor"}


# ====================================================================== entry points
def bind_prim_func(source: FunctionSource, out_idx=None) -> ir.PrimFunc:
    """Lazy style: a ``@T.prim_func`` whose parameters are annotated with T.Tensor."""
    binder = Binder(source)
    binder.bind_params(source.tree, dict(getattr(source.func, "__annotations__", {})))
    n_params = len(binder.params)  # T.alloc_global workspaces are appended after these
    returned = []
    try:
        binder.bind_block(source.tree.body)
    except KernelReturn as ret:
        values = ret.value if isinstance(ret.value, (tuple, list)) else [] if ret.value is None else [ret.value]
        for v in values:
            index = next((i for i in binder.empties if binder.params[i] is v), None)
            if index is None:
                raise TileLangCompileError(
                    "a @T.prim_func returns only the T.empty tensors it declares", binder.loc(source.tree)
                ) from None
            returned.append(index)
    if not binder.kernels and not returned:
        # no T.Kernel: TileLang's CPU target runs such a body (T.Parallel loops and all) as it stands;
        # here it is one block of T.Kernel's default threads
        binder = Binder(source)
        binder.bind_params(source.tree, dict(getattr(source.func, "__annotations__", {})))
        binder.body_stack.append([])
        binder.open_kernel(source.tree, source.tree, [1], (128,), lambda block_vars: None, source.tree.body)
    outputs = normalize_out_idx(out_idx, n_params, binder.loc(source.tree)) + returned
    workspaces = binder.workspaces + [i for i in binder.empties if i not in returned]  # allocated, not returned
    for i in outputs:  # the runtime allocates outputs: tensors, not scalars or T.ptr addresses
        if not isinstance(binder.params[i], ir.Buffer):
            raise TileLangCompileError(
                f"out_idx {i} names parameter '{binder.params[i].name}', which is not a T.Tensor",
                binder.loc(source.tree),
            )
    return ir.PrimFunc(
        source.name,
        binder.params,
        binder.kernels,
        outputs,
        list(binder.sizes.values()),
        binder.loc(source.tree),
        attrs=dict(binder.func_attrs),
        workspaces=workspaces,
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


_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}


def check_representable(b: Binder, value, dtype: DType, node) -> None:
    """A Python number stored in ``dtype`` must fit: 1e300 in a float32 would silently become inf."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if dtype.is_float and math.isfinite(value):
        limit = _FLOAT_MAX.get(dtype.name)
        if limit is not None and abs(value) > limit:
            raise b.error(f"initial value {value!r} exceeds maximum of {dtype.name} ({limit:g})", node)
    elif dtype.is_int and isinstance(value, int):
        low, high = dtype.int_range
        if not low <= value <= high:
            raise b.error(f"initial value {value} does not fit in {dtype.name} [{low}, {high}]", node)
