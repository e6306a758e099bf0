"""Bind an eager-style kernel: ``@tilelang.jit`` on a function that receives the tensors themselves.

``N = T.const("N")``, ``A: T.Tensor((N,), dtype)`` in the body, ``B = T.empty(...)`` and
``return B``.  Binding runs in two phases (TileLang's ``JITFunc``): phase 1 (``declare_eager``)
binds only the declarations before the first ``T.Kernel``, with each ``T.const`` a placeholder,
to learn where every constant appears in the tensor shapes; phase 2 (``bind_eager``) binds the
whole body with the constants' values.  The runtime side (caches, calls) is in ``eager.py``.
"""

from __future__ import annotations

import ast

from .. import ir
from ..errors import TileLangCompileError
from ..language.dtypes import DType, lookup_dtype
from ..language.proxy import TensorType
from .bind import Binder
from .bind_expr import KernelReturn
from .rules_memory import matched_type
from .source import FunctionSource


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

    eager = True

    def __init__(self, source: FunctionSource, values: dict, scalars: dict, const_values: dict | None = None):
        super().__init__(source)
        self.declaring = const_values is None
        self.const_values = const_values or {}
        self.param_names = [a.arg for a in eager_args(source.tree)]
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
        kwarg = source.tree.args.kwarg
        if kwarg is not None:  # ``**metadata``: the dict of the other keyword arguments (eager.py)
            self.bind_name(kwarg.arg, values.get(kwarg.arg, {}))

    def lookup(self, name: str, node):
        value = super().lookup(name, node)
        if (
            self.declaring
            and isinstance(value, PendingTensor)
            and (value.name in self.tensor_decls or value.name not in self.param_names)
        ):
            # a declared tensor or a T.empty output used (``copy_impl(A, B)``, a macro that opens
            # the kernel and reads A.shape): the declarations are over, and phase 2 binds the rest
            raise _StopDeclarations()
        return value

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
            if self.expr(node.annotation) == self.scalar_vars[name].dtype:
                return  # ``M: T.int32`` in the body: the run-time scalar the signature scan found (eager.py)
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

    # --- A = T.match_buffer(A, shape, dtype) for an ``A: T.ptr`` parameter
    def declare_matched(self, name: str, call: ast.Call):
        """The eager_jit notebook's dynamic dimensions: a ``T.ptr`` parameter given a tensor, declared
        in the body by ``T.match_buffer`` as ``A: T.Tensor(shape, dtype)`` would declare it."""
        param = call.args[0].id
        if self.kernel is not None:
            raise self.error(f"declare parameter '{param}' before 'with T.Kernel(...)'", call)
        if param in self.tensor_decls:
            raise self.error(f"parameter '{param}' is declared twice", call)
        ann = matched_type(self, param, self.call_args(self.expr(call.func), call), call)
        loc = self.loc(call)
        self.tensor_decls[param] = (ann, loc)
        if self.declaring:
            return PendingTensor(param)
        buf = self.global_buffer(param, ann, loc)
        self.param_buffers[param] = buf
        self.bind_name(param, buf)
        return buf

    # --- B = T.empty(...)
    def maybe_alloc(self, name: str, call: ast.Call):
        if _matches_param(call, self.param_names):
            return self.declare_matched(name, call)
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
        if dtype is None and len(args) > 1 and (lookup_dtype(args[-1]) is not None or isinstance(args[-1], DType)):
            dtype = args.pop()  # a dtype without a Triton dtype (fp4, ...) too: dtype_arg says why
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            shape = tuple(args[0])
        else:
            shape = tuple(args)
        if not shape:
            raise self.error("T.empty needs a shape", call)
        dt = self.global_dtype_arg("float32" if dtype is None else dtype, call)
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

    def function_return(self, value, node) -> KernelReturn:
        return KernelReturn((value, node))

    def stmt_Return(self, node: ast.Return) -> None:
        if self.inlined_calls:
            super().stmt_Return(node)  # a macro's / helper's result (bind.Binder.inline_macro)
        if self.kernel is not None:
            raise self.error("'return' inside T.Kernel: return the T.empty outputs after the kernel", node)
        if self.declaring:
            raise _StopDeclarations()
        value = self.expr(node.value) if node.value is not None else None
        raise KernelReturn((value, node))


def _matches_param(call: ast.Call, params) -> bool:
    """``T.match_buffer(A, ...)`` of a parameter ``A`` (by its attribute name: the binder checks the rest)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return (
        name == "match_buffer" and bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id in params
    )


def matched_params(tree: ast.FunctionDef) -> set:
    """The parameters an eager kernel's body declares with ``T.match_buffer(A, shape, dtype)``."""
    params = {a.arg for a in eager_args(tree)}
    return {n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call) and _matches_param(n, params)}


def eager_args(tree: ast.FunctionDef) -> list:
    args = tree.args
    return list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)


def declare_eager(source: FunctionSource, values: dict, scalars: dict) -> EagerDecls:
    """Phase 1: bind the declarations before the first T.Kernel with constants as placeholders."""
    binder = EagerBinder(source, values, scalars)
    _signature_tensors(binder, source)
    try:
        binder.bind_block(source.tree.body)
    except (_StopDeclarations, KernelReturn):
        pass
    return EagerDecls(binder.consts, binder.tensor_decls, binder.loc(source.tree))


def _signature_tensors(binder: EagerBinder, source: FunctionSource) -> None:
    """``def f(A: T.Tensor((128,), T.float32), ...)``: a tensor declared in the signature."""
    for arg in eager_args(source.tree):
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
    except KernelReturn as ret:
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
    n_out = len(params)
    params += [binder.params[i] for i in binder.workspaces]  # T.alloc_global, allocated per call
    func = ir.PrimFunc(source.name, params, binder.kernels, list(range(n_in, n_out)),
                       list(binder.sizes.values()), tree_loc, dict(binder.consts),
                       dict(binder.func_attrs), workspaces=list(range(n_out, len(params))))  # fmt: skip
    return func
