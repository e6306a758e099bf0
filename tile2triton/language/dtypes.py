"""TileLang dtypes: strings, ``T.float16``-style objects and torch dtypes all name one ``DType``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    """A scalar element type, named as TileLang names it."""

    name: str
    bits: int
    kind: str  # "float", "int", "uint" or "bool"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def triton(self) -> str:
        """The ``tl.*`` attribute name of this dtype."""
        return _TRITON_NAMES[self.name]

    def as_torch(self):
        import torch

        return getattr(torch, _TORCH_NAMES.get(self.name, self.name))

    def __call__(self, value=None):
        # ``T.float32(0)`` builds a typed literal; the binder recognises this object.
        return TypedLiteral(self, value)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"T.{self.name}"


@dataclass(frozen=True)
class TypedLiteral:
    dtype: DType
    value: object


_SPECS = {
    "bool": (8, "bool"),
    "int8": (8, "int"),
    "int16": (16, "int"),
    "int32": (32, "int"),
    "int64": (64, "int"),
    "uint8": (8, "uint"),
    "uint16": (16, "uint"),
    "uint32": (32, "uint"),
    "uint64": (64, "uint"),
    "float16": (16, "float"),
    "bfloat16": (16, "float"),
    "float32": (32, "float"),
    "float64": (64, "float"),
    "float8_e4m3fn": (8, "float"),
    "float8_e5m2": (8, "float"),
}
_TRITON_NAMES = {
    "bool": "int1",
    "float8_e4m3fn": "float8e4nv",
    "float8_e5m2": "float8e5",
    **{n: n for n in _SPECS if n not in ("bool", "float8_e4m3fn", "float8_e5m2")},
}
_TORCH_NAMES = {"float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "long": "int64",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float8_e4m3": "float8_e4m3fn",
    "e4m3_float8": "float8_e4m3fn",
    "e5m2_float8": "float8_e5m2",
}

DTYPES: dict[str, DType] = {name: DType(name, bits, kind) for name, (bits, kind) in _SPECS.items()}


def lookup_dtype(value) -> DType | None:
    """Return the DType for a string, DType or torch.dtype; None when it names no dtype."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        key = value.strip()
        return DTYPES.get(_ALIASES.get(key, key))
    torch_name = str(value)
    if torch_name.startswith("torch."):
        key = torch_name[len("torch.") :]
        return DTYPES.get(_ALIASES.get(key, key))
    return None


def to_dtype(value) -> DType:
    found = lookup_dtype(value)
    if found is None:
        raise TypeError(f"{value!r} is not a dtype TileLang knows (try 'float16', 'float32', 'int8', ...)")
    return found


def promote(a: DType, b: DType) -> DType:
    """The dtype of a binary operation on two non-literal operands (TVM's rule: floats win, wider wins)."""
    if a == b:
        return a
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    if a.is_float:  # float16 vs bfloat16
        return DTYPES["float32"]
    return a if a.kind == "int" else b
