"""``tvm.script.ir_builder``: only ``base`` (``IRBuilderFrame``)."""

from . import base

__all__ = ["base"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from ... import OUT_OF_SCOPE

    raise AttributeError(f"tilelang.tvm.script.ir_builder.{name}: {OUT_OF_SCOPE}")
