"""How a ``T`` primitive behaves outside a kernel body: ``_kernel_only`` (raises ``KernelOnlyError``),
``_host_ok`` (works on plain numbers), and the call expressions host code builds on symbols
(``_vote``, ``_fastmath_on_symbol``; ``tvm/tirx.py`` registers ``_host_call_class``).
"""

from __future__ import annotations

import builtins
import inspect as _inspect

from ._sizes import Dynamic
from .dtypes import to_dtype


class KernelOnlyError(RuntimeError):
    pass


def _kernel_only(name: str, host_check=None):
    """``fn`` as a kernel-only primitive; ``host_check(fn, args, kwargs)``, where given, runs first in
    host code (TileLang checks some arguments before it says the call belongs in a kernel)."""

    def mark(fn):
        fn.__t2t__ = name

        def outside(*args, **kwargs):
            if host_check is not None:
                host_check(fn, args, kwargs)
            raise KernelOnlyError(f"T.{name} can only be used inside a @T.prim_func or @tilelang.jit kernel body")

        outside.__t2t__ = name
        outside.__signature_source__ = fn
        outside.__name__ = fn.__name__
        outside.__doc__ = fn.__doc__
        outside.__wrapped__ = fn
        return outside

    return mark


def _host_ok(name: str):
    """Primitives that also work on plain Python numbers in host code."""

    def mark(fn):
        fn.__t2t__ = name
        return fn

    return mark


# The class of a call expression built in host code (``tvm/tirx.py``'s ``Call`` registers itself
# here when imported; a symbol such as ``tirx.Var`` comes from that module, so it is set by then).
_host_call_class: type | None = None


def _fastmath_on_symbol(name: str, x: Dynamic):
    """``T.__exp(tirx.Var("v", "float16"))`` in host code: TileLang checks the dtype and builds a
    call expression; tile2triton records the call (only a kernel body lowers it)."""
    if not (x.dtype.is_float and x.dtype.bits >= 16):  # float16/bfloat16/float32/float64, not fp8
        raise TypeError(f"T.{name} only supports floating-point inputs, but got {x.dtype}")
    if _host_call_class is None:
        raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")
    return _host_call_class(str(x.dtype), f"tl.{name}", [x])


def _predicate_dtype(value) -> str | None:
    """The dtype TVM's ``tirx.convert`` gives a predicate (None when host code cannot tell)."""
    if isinstance(value, builtins.bool):
        return "bool"
    if isinstance(value, builtins.int):
        return "int32"
    if isinstance(value, builtins.float):
        return "float32"
    dtype = getattr(value, "dtype", None)
    return None if dtype is None else str(dtype)


def _vote(name: str, result_dtype: str):
    """A vote primitive.  In host code (as in TileLang) it checks its predicate and builds a call
    expression that only a kernel body lowers; in a kernel the binder's rule lowers it."""

    def mark(fn):
        fn.__t2t__ = name

        def outside(*args, **kwargs):
            bound = _inspect.signature(fn).bind(*args, **kwargs)
            bound.apply_defaults()
            dtype = _predicate_dtype(bound.arguments["predicate"])
            if dtype is not None and to_dtype(dtype).is_float:
                raise TypeError(f"T.{name} requires an integer or boolean predicate, but got {dtype}.")
            if _host_call_class is None:
                raise KernelOnlyError(f"T.{name} can only be used inside a kernel body")
            return _host_call_class(result_dtype, f"tl.{name}", list(bound.arguments.values()))

        outside.__t2t__ = name
        outside.__signature_source__ = fn
        outside.__name__ = fn.__name__
        outside.__doc__ = fn.__doc__
        outside.__wrapped__ = fn
        return outside

    return mark
