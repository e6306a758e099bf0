"""``tvm.script.ir_builder.base``: ``IRBuilderFrame``, the class of what ``T.serial(...)`` returns in
host code (``language/_frames.py``)."""

from ....language._frames import IRBuilderFrame

__all__ = ["IRBuilderFrame"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from ... import OUT_OF_SCOPE

    raise AttributeError(f"tilelang.tvm.script.ir_builder.base.{name}: {OUT_OF_SCOPE}")
