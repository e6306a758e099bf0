"""``tvm.script``: of TVM's script builder only ``ir_builder.base.IRBuilderFrame``, the class scripts
test loop primitives' host-side results against (``isinstance(T.serial(0, n), IRBuilderFrame)``)."""

from . import ir_builder

__all__ = ["ir_builder"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from .. import OUT_OF_SCOPE

    raise AttributeError(f"tilelang.tvm.script.{name}: {OUT_OF_SCOPE}")
