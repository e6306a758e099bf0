"""The detailed validation of a call's arguments (the slow path): runs when a cheap check of the
call plan fails, or for plans whose checks need the sizes first, and raises a ``KernelCallError``
naming the parameter, what it expects and what was given (by type, shape, dtype and device,
never by contents)."""

from __future__ import annotations

import torch

from .. import ir
from ..errors import KernelCallError, UnboundSizeError
from ..ir.evaluate import format_expr, host_eval
from ..ir.nodes import iter_expr_tree
from ..language.dtypes import PACKED_STORAGE_TORCH_NAMES, packed_name
from .plan import INT_RANGE, CallPlan, TensorSpec

_SHORT = 40  # longest repr of a scalar or string an error message shows


def diagnose(plan: CallPlan, args, slots: list) -> tuple[dict, torch.device | None]:
    """Check every argument in detail; raise a KernelCallError naming the first bad one.
    Fills ``slots`` with the arguments; returns the sizes' values and the tensors' device."""
    values: dict = {}
    bound_by: dict = {}
    devices = []  # (parameter name, device) of the tensor arguments
    for spec, arg in zip(plan.specs, args):
        if isinstance(spec, TensorSpec):
            if arg is None and spec.param in plan.unreferenced:  # a null pointer the kernel never reads
                slots[spec.index] = None
                continue
            _check_tensor(plan, spec, arg, values, bound_by)
            devices.append((spec.name, arg.device))
            one_device(plan.name, devices)
            slots[spec.index] = arg.view(torch.uint8) if spec.packed else arg
        elif spec.var.dtype.kind == "ptr":
            i, var = spec.index, spec.var
            slots[i] = _address(plan, var, arg)
            if isinstance(arg, torch.Tensor):
                devices.append((var.name, arg.device))
                one_device(plan.name, devices)
        else:
            i, var = spec.index, spec.var
            _check_scalar(plan, var, arg)
            values[var] = slots[i] = arg
    if plan.expr_dims:
        _solve_linear_dims(plan, args, values)  # a size seen only as n * 4 + 1: solved from that dim
        check_sizes(plan, values)  # an expression dim (M // 2) is checked against the bound sizes
    for spec, d, fn in plan.expr_dims:
        arg = args[plan.inputs.index(spec.index)]
        want = fn(values) if callable(fn) else fn
        if _shape(spec, arg)[d] != want:
            raise KernelCallError(
                f"{plan.name}: parameter '{spec.name}' expects shape {fmt_shape(spec.param.shape, values)}, "
                f"got {_shown_shape(spec, arg)} (dim {d} should be {want})"
            )
    for spec, arg in zip(plan.specs, args):
        if isinstance(spec, TensorSpec) and not spec.contiguous:
            _check_strides(plan, spec, arg, values)
    return values, devices[0][1] if devices else None


def one_device(fname: str, devices: list, runnable: bool = True) -> torch.device | None:
    """The one device of the tensor arguments, given as (parameter name, device) pairs; an error
    naming the parameters if they are on several, or (``runnable``) on a device Triton does not
    run on (meta tensors are fine for shape inference)."""
    for name, device in devices:
        if runnable and device.type not in ("cuda", "cpu"):
            raise KernelCallError(
                f"{fname}: parameter '{name}' is on {device}; tile2triton runs on cuda tensors "
                "(Triton) or cpu tensors (Triton's interpreter)"
            )
    if not devices:
        return None
    first, device = devices[0]
    for name, other in devices[1:]:
        if other != device:
            raise KernelCallError(
                f"{fname}: parameter '{name}' is on {other}, but '{first}' is on {device}; "
                "all tensors must be on one device"
            )
    return device


def _shape(spec: TensorSpec, arg) -> tuple:
    """The logical shape of an argument: packed fp4 / int4 holds two values per byte of its last dim."""
    if not spec.packed or arg.dim() == 0:
        return tuple(arg.shape)
    return (*arg.shape[:-1], 2 * arg.shape[-1])


def _strides(spec: TensorSpec, arg) -> tuple:
    """The logical strides (in elements) of an argument; packed fp4 / int4: twice the byte strides,
    except the last dim's, whose bytes hold consecutive pairs (its byte stride must be 1)."""
    if not spec.packed or arg.dim() == 0:
        return tuple(arg.stride())
    return (*(2 * s for s in arg.stride()[:-1]), arg.stride(-1))


def _shown_shape(spec: TensorSpec, arg) -> str:
    if spec.packed:
        return f"{tuple(arg.shape)} bytes ({packed_name(spec.param.dtype)} shape {_shape(spec, arg)})"
    return str(tuple(arg.shape))


def _check_tensor(plan: CallPlan, spec: TensorSpec, arg, values: dict, bound_by: dict) -> None:
    fname, name, param = plan.name, spec.name, spec.param
    decl = f"T.Tensor({fmt_shape(param.shape)}, {param.dtype.name})"
    if arg is None:  # None stands for a null pointer only where no kernel names the tensor
        raise KernelCallError(f"{fname}: parameter '{name}' expects a torch.Tensor {decl}, got None (a kernel uses it)")
    if not isinstance(arg, torch.Tensor):
        raise KernelCallError(f"{fname}: parameter '{name}' expects a torch.Tensor {decl}, got {describe(arg)}")
    if spec.packed:
        storage = PACKED_STORAGE_TORCH_NAMES[param.dtype.name]
        if str(arg.dtype)[len("torch.") :] not in storage:
            kinds = ", ".join(f"torch.{t}" for t in storage[:-1]) + f" or torch.{storage[-1]}"
            raise KernelCallError(
                f"{fname}: parameter '{name}' is packed {packed_name(param.dtype)} ({decl}): it expects a {kinds} "
                f"tensor holding two values per byte, got {arg.dtype}"
            )
        if arg.dim() and arg.shape[-1] > 1 and arg.stride(-1) != 1:
            raise KernelCallError(
                f"{fname}: parameter '{name}' is packed {packed_name(param.dtype)}: its last dim must have byte stride 1, "
                f"got strides {tuple(arg.stride())}"
            )
    elif arg.dtype != spec.dtype:
        raise KernelCallError(f"{fname}: parameter '{name}' expects dtype {spec.dtype}, got {arg.dtype}")
    if arg.dim() != spec.ndim:
        raise KernelCallError(
            f"{fname}: parameter '{name}' expects a {spec.ndim}-D tensor of shape {fmt_shape(param.shape)}, "
            f"got a {arg.dim()}-D tensor of shape {tuple(arg.shape)}"
        )
    shape, strides = _shape(spec, arg), _strides(spec, arg)
    for d, want in spec.checks:
        if shape[d] != want:
            raise KernelCallError(
                f"{fname}: parameter '{name}' expects shape {fmt_shape(param.shape)}, got {_shown_shape(spec, arg)} "
                f"(dim {d} should be {want})"
            )
    for d, var in spec.binds:
        actual = shape[d]
        if var in values and values[var] != actual:
            other, od = bound_by[var]
            raise KernelCallError(
                f"{fname}: parameter '{name}' has shape {_shown_shape(spec, arg)}: dim {d} gives {var.name}={actual}, "
                f"but '{other}' dim {od} gave {var.name}={values[var]}"
            )
        values[var] = actual
        bound_by.setdefault(var, (name, d))
    for d, var in spec.stride_binds:
        actual = strides[d]
        if var in values and values[var] != actual:
            raise KernelCallError(
                f"{fname}: parameter '{name}' stride {d} gives {var.name}={actual}, "
                f"but {var.name}={values[var]} elsewhere"
            )
        values[var] = actual
    if spec.contiguous and not arg.is_contiguous():
        raise KernelCallError(
            f"{fname}: parameter '{name}' must be contiguous (row-major strides "
            f"{fmt_shape(_row_major_values(shape))}), got strides {strides}; "
            "pass .contiguous(), or declare it with T.StridedTensor(shape, strides, dtype)"
        )


def _check_strides(plan: CallPlan, spec: TensorSpec, arg, values: dict) -> None:
    shape, strides = _shape(spec, arg), _strides(spec, arg)
    for d, s in spec.stride_checks:
        want = host_eval(s, values)
        if shape[d] > 1 and strides[d] != want:
            raise KernelCallError(
                f"{plan.name}: parameter '{spec.name}' expects stride {want} in dim {d} "
                f"(declared strides {fmt_shape(spec.param.strides, values)}), got strides {strides}"
            )


def _check_scalar(plan: CallPlan, var: ir.Var, arg) -> None:
    fname, dt = plan.name, var.dtype
    ok = isinstance(arg, (int, float, bool)) and not isinstance(arg, torch.Tensor)
    if ok and not dt.is_float and isinstance(arg, float):
        ok = False
    if not ok:
        raise KernelCallError(f"{fname}: parameter '{var.name}' expects a {dt.name} scalar, got {describe(arg)}")
    if dt.is_int and isinstance(arg, int) and dt.bits in INT_RANGE:
        lo, hi = INT_RANGE[dt.bits] if dt.kind == "int" else (0, 2**dt.bits)
        if not lo <= arg < hi:
            raise KernelCallError(
                f"{fname}: parameter '{var.name}' expects a {dt.name} scalar, got {arg} (out of range)"
            )


def _address(plan: CallPlan, var: ir.Var, arg) -> int:
    """The address a ``T.ptr`` parameter passes: a tensor's ``data_ptr()``, or an int given as one."""
    if isinstance(arg, torch.Tensor):
        return arg.data_ptr()
    if isinstance(arg, int) and not isinstance(arg, bool) and 0 <= arg < 2**64:
        return arg
    raise KernelCallError(
        f"{plan.name}: parameter '{var.name}' (T.ptr) expects a torch.Tensor or an address "
        f"(tensor.data_ptr(), an int), got {describe(arg)}"
    )


def _solve_linear_dims(plan: CallPlan, args, values: dict) -> None:
    """Bind a size that no dim gives by itself from a dim that is a linear expression of it alone
    (``T.Tensor((n * 3 + 1,), ...)``, as TileLang's binder solves ``a * n + b``): with every other
    size bound, the dim is ``a * n + b``; ``n = (dim - b) / a`` where that is a whole number
    (else a KernelCallError)."""
    for spec, d, fn in plan.expr_dims:
        unknown = [v for v in _size_vars(spec.param.shape[d]) if v not in values]
        if len(set(unknown)) != 1 or not callable(fn):
            continue
        var = unknown[0]
        try:
            b = fn({**values, var: 0})
            a = fn({**values, var: 1}) - b
            linear = a != 0 and fn({**values, var: 5}) == b + 5 * a and fn({**values, var: 12}) == b + 12 * a
        except (ArithmeticError, LookupError, TypeError, ValueError):  # not an affine function of var
            continue
        if not linear:
            continue
        arg = args[plan.inputs.index(spec.index)]
        n, rest = divmod(arg.shape[d] - b, a)
        if rest != 0 or n < 0:
            raise KernelCallError(
                f"{plan.name}: parameter '{spec.name}' has shape {tuple(arg.shape)}: dim {d} is "
                f"{format_expr(spec.param.shape[d], values)}, which no whole {var.name} >= 0 gives"
            )
        values[var] = n


def _size_vars(e) -> list:
    return [x.var for x in iter_expr_tree(e) if isinstance(x, ir.VarRef) and x.var.kind == "size"]


def check_sizes(plan: CallPlan, values: dict) -> None:
    """Every size bound, or an error; a size whose tensors were all passed as None (TileLang's
    nullable buffers) is 0 when one tensor has it or when no kernel reads it."""
    for size in plan.sizes:
        if size in values:
            continue
        sources = [s for s in plan.specs if isinstance(s, TensorSpec) and any(v is size for _, v in s.binds)]
        if sources and (len(sources) == 1 or size not in plan.sizes_read):
            values[size] = 0
            continue
        raise UnboundSizeError(
            f"{plan.name}: size '{size.name}' is not given by any input tensor's shape (it needs at least one "
            "non-null buffer whose shape has it)"
        )


def wrong_target(plan: CallPlan, target: str, device) -> None:
    name = next((s.name for s in plan.specs if isinstance(s, TensorSpec)), None)
    where = f"parameter '{name}' is on {device}" if name else f"the outputs would be on {device}"
    raise KernelCallError(
        f"{plan.name}: compiled for target '{target}', but {where}"
        + ("; move the tensors to the GPU" if target == "cuda" else "; pass CPU tensors")
    )


def describe(arg) -> str:
    """A wrong argument as an error message shows it: its type, and its shape, dtype and device
    where it has them (an array), its length (a sequence) or its value (a short scalar)."""
    if isinstance(arg, torch.Tensor):
        where = "" if arg.device.type == "cpu" else f" on {arg.device}"
        return f"a torch.Tensor of shape {tuple(arg.shape)} and dtype {arg.dtype}{where}"
    kind = type(arg)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"
    shape = getattr(arg, "shape", None)
    if isinstance(shape, tuple) or (shape is not None and hasattr(shape, "__len__") and not callable(shape)):
        parts = [f"shape {tuple(shape)}"]
        dtype = getattr(arg, "dtype", None)
        if dtype is not None:
            parts.append(f"dtype {dtype}")
        text = f"a {name} of " + " and ".join(parts)
        if kind.__module__.split(".")[0] == "numpy" and kind.__name__ == "ndarray":
            text += " (convert it with torch.from_numpy(...))"
        return text
    if arg is None or isinstance(arg, (bool, int, float, complex, str, bytes)):
        text = repr(arg)
        if len(text) <= _SHORT:
            return f"{name} {text}"
        return f"{name} of length {len(arg)}" if isinstance(arg, (str, bytes)) else name
    if isinstance(arg, (list, tuple, dict, set, frozenset)):
        return f"{name} of length {len(arg)}"
    return f"a value of type {name}"


def _row_major_values(shape) -> tuple:
    strides, running = [], 1
    for d in reversed(tuple(shape)):
        strides.append(running)
        running *= d
    return tuple(reversed(strides))


def fmt_shape(shape, values: dict | None = None) -> str:
    """A declared shape or strides as the user wrote them: ``(M, N=40, (2 * K))``."""
    parts = [str(d) if isinstance(d, int) else format_expr(d, values if isinstance(d, ir.VarRef) else None)
             for d in shape]  # fmt: skip
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
