"""``tvm.target.Target``: a compilation target.  tile2triton reads only its kind ("cuda" runs on
the GPU through Triton, "cpu"/"llvm"/"c" through Triton's interpreter, "auto" follows the tensors)."""

from __future__ import annotations

import re


class TargetKind:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


class Target:
    """``Target("cuda")``, ``Target("cuda -arch=sm_90")``, ``Target({"kind": "cuda", "arch": "sm_90"})``.

    Also a context manager (``with Target("cuda"):``) whose innermost instance ``Target.current()`` returns."""

    _stack: list = []

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            self.kind, self.attrs, self.host = target.kind, dict(target.attrs), host or target.host
            return
        if isinstance(target, dict):
            attrs = dict(target)
            kind = str(attrs.pop("kind", "cuda"))
        else:
            text = str(target).strip()
            words = text.split()
            if not words:
                raise ValueError("tvm.target.Target: empty target string")
            kind, attrs = words[0], {}
            for word in words[1:]:
                m = re.fullmatch(r"-{1,2}([\w-]+)(?:=(.*))?", word)
                if m is None:
                    raise ValueError(f"tvm.target.Target: cannot parse {word!r} in {text!r}")
                attrs[m.group(1).replace("-", "_")] = m.group(2) if m.group(2) is not None else True
        self.kind = TargetKind(kind)
        self.attrs = attrs
        self.host = None if host is None else Target(host)

    def __getattr__(self, name):
        attrs = self.__dict__.get("attrs", {})
        if name in attrs:
            return attrs[name]
        if name in ("arch", "mcpu", "mattr", "model", "libs", "keys"):
            return attrs.get(name, "" if name in ("arch", "mcpu", "model") else [])
        raise AttributeError(name)

    def __str__(self) -> str:
        rest = " ".join(f"-{k}={v}" if v is not True else f"-{k}" for k, v in self.attrs.items())
        return f"{self.kind.name} {rest}".strip()

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, (Target, str)) and str(self) == str(Target(other) if isinstance(other, str) else other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __enter__(self):
        Target._stack.append(self)
        return self

    def __exit__(self, *exc):
        Target._stack.pop()

    @staticmethod
    def current(allow_none: bool = True):
        if Target._stack:
            return Target._stack[-1]
        if allow_none:
            return None
        raise RuntimeError("tvm.target.Target.current(): no target in scope")

    def export(self) -> dict:
        return {"kind": self.kind.name, **self.attrs}


def cuda(model="unknown", arch=None, options=None) -> Target:
    return Target(f"cuda{'' if arch is None else f' -arch={arch}'}")


__all__ = ["Target", "TargetKind", "cuda"]
