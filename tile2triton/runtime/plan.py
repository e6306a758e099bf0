"""The call plan: everything about a kernel's calls that does not depend on the argument values.

Built once per kernel: per input a small record of what to check (dtype object, rank, static
shape, sizes to bind, contiguity), output shapes folded to constants where static, and the
Triton arguments as positions in one slot list (the kernel's parameters, then its sizes).
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import torch

from .. import ir
from ..errors import KernelCallError
from ..ir.evaluate import NotHostEvaluable, host_fn, row_major_strides, same_exprs
from ..language.dtypes import is_packed, packed_storage_torch
from ..passes.analysis import referenced_buffers

_COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
INT_RANGE = {8: (-(2**7), 2**7), 16: (-(2**15), 2**15), 32: (-(2**31), 2**31), 64: (-(2**63), 2**63)}


def plan_host_fn(e):
    """``host_fn`` for the plan: an expression the host cannot evaluate is the caller's error."""
    try:
        return host_fn(e)
    except NotHostEvaluable as exc:
        raise KernelCallError(str(exc)) from None


class TensorSpec:
    """What an input tensor must be (built once; checked on every call)."""

    __slots__ = ("index", "name", "param", "dtype", "ndim", "static_shape", "checks", "binds", "contiguous",
                 "stride_binds", "stride_checks", "packed")  # fmt: skip

    def __init__(self, index: int, param: ir.Buffer):
        self.index = index
        self.param = param
        self.name = param.name
        # packed fp4 / int4: a byte tensor (no torch dtype to compare: the detailed path checks it)
        self.packed = is_packed(param.dtype)
        self.dtype = None if self.packed else param.dtype.as_torch()
        self.ndim = param.ndim
        shape = tuple(param.shape)
        self.static_shape = shape if all(isinstance(d, int) for d in shape) else None
        self.checks = [(d, s) for d, s in enumerate(shape) if isinstance(s, int)]
        self.binds = [(d, s.var) for d, s in enumerate(shape) if isinstance(s, ir.VarRef)]
        default = row_major_strides(shape)
        strides = tuple(param.strides) if param.strides is not None else default
        self.contiguous = same_exprs(strides, default)
        self.stride_binds = (
            [] if self.contiguous else [(d, s.var) for d, s in enumerate(strides) if isinstance(s, ir.VarRef)]
        )
        self.stride_checks = (
            [] if self.contiguous else [(d, s) for d, s in enumerate(strides) if not isinstance(s, ir.VarRef)]
        )


class ScalarSpec(NamedTuple):
    """A run-time scalar parameter: its argument position, variable, the Python types it accepts
    and the range [low, high) of its values."""

    index: int
    var: ir.Var
    types: tuple
    low: float
    high: float


def scalar_spec(index: int, var: ir.Var) -> ScalarSpec:
    dt = var.dtype
    if dt.kind == "ptr":  # an address (tensor.data_ptr()); a tensor takes the detailed path, which reads it
        return ScalarSpec(index, var, (int,), 0, 2**64)
    if dt.is_float:
        return ScalarSpec(index, var, (float, int, bool), float("-inf"), float("inf"))
    if dt.kind == "bool":
        return ScalarSpec(index, var, (bool, int), 0, 2)
    lo, hi = INT_RANGE.get(dt.bits, (-(2**63), 2**63))
    if dt.kind == "uint":
        lo, hi = 0, 2**dt.bits
    return ScalarSpec(index, var, (int, bool), lo, hi)


def _half(fn):
    """The byte count of a packed fp4 last dim of ``fn`` values (a host fn; an int is even, the
    binder checks it): two values per byte, so the count must be even."""
    if not callable(fn):
        return fn // 2

    def half(values):
        n = fn(values)
        if n % 2:
            raise KernelCallError(f"a 4-bit output's last dim is {n}, which is odd: its bytes hold two values each")
        return n // 2

    return half


def plan_name(func: ir.PrimFunc) -> str:
    """How call errors name the kernel: ``factory.prim_func`` for a ``@tilelang.jit`` factory's."""
    factory = func.attrs.get("tile2triton.factory")
    return f"{factory}.{func.name}" if factory else func.name


class CallPlan:
    """Everything about a call that does not depend on the argument values."""

    def __init__(self, func: ir.PrimFunc, target: str | None):
        self.func = func
        self.name = plan_name(func)
        self.params = list(func.params)
        self.inputs = [i for i in range(len(func.params)) if i not in func.out_idx and i not in func.workspaces]
        self.n_in = len(self.inputs)
        self.input_names = [func.params[i].name for i in self.inputs]
        self.specs: list[TensorSpec | ScalarSpec] = []
        for i in self.inputs:
            p = func.params[i]
            self.specs.append(TensorSpec(i, p) if isinstance(p, ir.Buffer) else scalar_spec(i, p))
        self.n_params = len(func.params)
        # tensor parameters no kernel names: None may be passed for them (TileLang's nullptr)
        used = {b.root for kernel in func.kernels for b in referenced_buffers(kernel)}
        self.unreferenced = {p for p in func.params if isinstance(p, ir.Buffer) and p.root not in used}
        self.sizes_read = {  # sizes a kernel body names (a nullable buffer's size may be unbound otherwise)
            e.var
            for kernel in func.kernels
            for st in ir.walk([kernel])
            for x in ir.stmt_exprs(st)
            for e in ir.iter_expr_tree(x)
            if isinstance(e, ir.VarRef)
        }
        # tensors of dtypes with no Triton dtype of their own, passed as uint8 views (float8_e8m0fnu)
        self.storage_views = [
            i for i, p in enumerate(func.params) if isinstance(p, ir.Buffer) and p.dtype.triton == "uint8"
            and p.dtype.name != "uint8"
        ]  # fmt: skip
        self.sizes = list(func.sizes)
        # (index, torch dtype, static shape or None, [host fns]): the outputs, then the T.alloc_global
        # workspaces (allocated the same way, not returned)
        self.outputs = []
        self.output_views = {}  # parameter index -> the torch dtype an output is returned as (packed fp4)
        for i in [*func.out_idx, *func.workspaces]:
            p = func.params[i]
            fns = [plan_host_fn(d) for d in p.shape]
            dtype = p.dtype.as_torch() if not is_packed(p.dtype) else torch.uint8
            if is_packed(p.dtype):  # two values per byte: the storage's last dim is half the logical one
                fns[-1] = _half(fns[-1])
                self.output_views[i] = packed_storage_torch(p.dtype)
            static = None if any(callable(f) for f in fns) else tuple(fns)
            self.outputs.append((i, dtype, static, fns))
        # deferred checks: dims/strides given by expressions of sizes (e.g. 2 * N)
        self.expr_dims = []
        for spec in self.specs:
            if isinstance(spec, TensorSpec):
                for d, s in enumerate(spec.param.shape):
                    if not isinstance(s, (int, ir.VarRef)):
                        self.expr_dims.append((spec, d, plan_host_fn(s)))
        # T.assume comparisons of sizes and scalars (frontend/rules_misc.py): checked at every call, as TileLang does
        self.assumes = [(_COMPARE[op], plan_host_fn(lhs), plan_host_fn(rhs), text)
                        for op, lhs, rhs, text in func.attrs.get("host_assumes", ())]  # fmt: skip
        self.simple = not self.expr_dims and not any(
            isinstance(s, TensorSpec) and (s.stride_binds or s.stride_checks) for s in self.specs
        )
        slots = {id(p): k for k, p in enumerate(func.params)}
        slots.update({id(v): self.n_params + k for k, v in enumerate(self.sizes)})
        self.slots = slots
        self.single = len(func.out_idx) == 1
        self.n_returned = len(func.out_idx)
        self.target = target

    def bind_keywords(self, args: tuple, kwargs: dict) -> tuple:
        """The inputs in parameter order for a call with keywords (``kernel(A=a, B=b)``, as
        TileLang's kernels take them); a KernelCallError for a name that is not an input."""
        n = len(args) + len(kwargs)
        if len(args) > self.n_in:
            raise KernelCallError(
                f"{self.name} expects {self.n_in} argument(s) ({', '.join(self.input_names)}), got {n}"
            )
        bound = list(args) + [_MISSING] * (self.n_in - len(args))
        position = {name: j for j, name in enumerate(self.input_names)}
        for key, value in kwargs.items():
            j = position.get(key)
            if j is None:
                if any(self.params[i].name == key for i in self.func.out_idx):
                    raise KernelCallError(
                        f"{self.name}: '{key}' is an output (out_idx): the kernel allocates and returns it"
                    )
                raise KernelCallError(
                    f"{self.name} got an unexpected keyword argument '{key}'; its inputs are {', '.join(self.input_names)}"
                )
            if bound[j] is not _MISSING:
                raise KernelCallError(f"{self.name} got multiple values for argument '{key}'")
            bound[j] = value
        missing = [repr(self.input_names[j]) for j, a in enumerate(bound) if a is _MISSING]
        if missing:
            raise KernelCallError(f"{self.name} missing argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        return tuple(bound)


_MISSING = object()


def check_assumes(plan: CallPlan, values: dict) -> None:
    """TileLang's run-time check of host-evaluable ``T.assume`` conditions: a RuntimeError naming the one
    that does not hold for this call's sizes and scalars."""
    for compare, lhs, rhs, text in plan.assumes:
        a = lhs(values) if callable(lhs) else lhs
        b = rhs(values) if callable(rhs) else rhs
        if not compare(a, b):
            raise RuntimeError(f"{plan.name}: Assume: {text} does not hold")
