"""TileLang dtypes: strings, ``T.float16``-style objects and torch dtypes all name one ``DType``."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass


class DType(str):
    """A scalar element type, named as TileLang names it.

    Like TileLang's dtypes it is a ``str`` (``T.float16 == "float16"``), so host code such as
    ``getattr(torch, T.float16)`` or ``torch.__getattribute__(dtype)`` works."""

    bits: int
    kind: str  # "float", "int", "uint", "bool", "ptr" (T.ptr), or "unsupported" (a TileLang name with no Triton dtype)

    def __new__(cls, name: str, bits: int, kind: str):
        obj = super().__new__(cls, name)
        object.__setattr__(obj, "bits", bits)
        object.__setattr__(obj, "kind", kind)
        return obj

    def __setattr__(self, key, value):
        raise AttributeError(f"DType is immutable (cannot set {key})")

    def __reduce__(self):
        return (DType, (self.name, self.bits, self.kind))

    @property
    def name(self) -> str:
        return str.__str__(self)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def int_range(self) -> tuple[int, int]:
        """The smallest and largest value of an integer dtype."""
        if self.kind == "uint":
            return 0, 2**self.bits - 1
        return -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1

    @property
    def supported(self) -> bool:
        return self.kind != "unsupported"

    @property
    def triton(self) -> str:
        """The ``tl.*`` attribute name of this dtype."""
        return _TRITON_NAMES[self.name]

    def as_torch(self):
        import torch

        if not self.supported:
            found = getattr(torch, _TORCH_NAMES.get(self.name, self.name), None)
            if found is None:
                raise TypeError(f"T.{self.name} has no torch dtype: {UNSUPPORTED_DTYPES[self.name]}")
            return found
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

    # Host code (TileLang's test_tilelang_intimm: ``a = T.int32(); a & 0x7FFFFFFF``): integer operators give
    # a typed literal of the left operand's dtype, wrapped to its bits; a declaration (value None) stays
    # unknown.  Kernel bodies never reach these: the binder lowers typed literals itself.
    def _int_op(self, other, fn, reverse=False):
        other_value = other.value if isinstance(other, TypedLiteral) else other
        if not isinstance(other_value, (int, type(None))) or not isinstance(self.value, (int, type(None))):
            return NotImplemented
        if self.value is None or other_value is None:
            return TypedLiteral(self.dtype, None)
        value = fn(other_value, self.value) if reverse else fn(self.value, other_value)
        bits = getattr(self.dtype, "bits", 0)
        if getattr(self.dtype, "kind", "") in ("int", "uint") and bits:
            value &= (1 << bits) - 1
            if self.dtype.kind == "int" and value >= 1 << (bits - 1):
                value -= 1 << bits
        return TypedLiteral(self.dtype, value)

    def __and__(self, other):
        return self._int_op(other, operator.and_)

    def __or__(self, other):
        return self._int_op(other, operator.or_)

    def __xor__(self, other):
        return self._int_op(other, operator.xor)

    def __lshift__(self, other):
        return self._int_op(other, operator.lshift)

    def __rshift__(self, other):
        return self._int_op(other, operator.rshift)

    def __rand__(self, other):
        return self._int_op(other, operator.and_, True)

    def __ror__(self, other):
        return self._int_op(other, operator.or_, True)

    def __rxor__(self, other):
        return self._int_op(other, operator.xor, True)


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
    # exponent-only scale format (2 ** (bits - 127), 0xFF NaN): stored as uint8 in Triton, held as
    # float32 in registers (codegen converts at loads, stores and casts)
    "float8_e8m0fnu": (8, "float"),
}
_TRITON_NAMES = {
    "bool": "int1",
    "float8_e4m3fn": "float8e4nv",
    "float8_e5m2": "float8e5",
    "float8_e8m0fnu": "uint8",
    **{n: n for n in _SPECS if n not in ("bool", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")},
}
_TORCH_NAMES = {"float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "uint": "uint32",
    "ulong": "uint64",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float8_e4m3": "float8_e4m3fn",
    "e4m3_float8": "float8_e4m3fn",
    "e5m2_float8": "float8_e5m2",
}

DTYPES: dict[str, DType] = {name: DType(name, bits, kind) for name, (bits, kind) in _SPECS.items()}

# TF32 is float32 storage that TileLang's gemm multiplies at TF32 precision; tl.dot on float32
# operands does the same on the GPU (its default input_precision is "tf32"), so T.tfloat32 is
# float32 here (and in torch: getattr(torch, T.tfloat32) is torch.float32).
_ALIASES["tfloat32"] = "float32"

# TileLang dtype names without a Triton dtype: usable as names in host code (T.float4_e2m1fn,
# getattr(torch, T.float8_e8m0fnu) where torch has it); a kernel that uses one fails with this reason.
UNSUPPORTED_DTYPES: dict[str, str] = {
    "float8_e4m3fnuz": "the fnuz fp8 formats (AMD) are not Triton dtypes on NVIDIA GPUs or the interpreter",
    "float8_e5m2fnuz": "the fnuz fp8 formats (AMD) are not Triton dtypes on NVIDIA GPUs or the interpreter",
    "float8_e4m3b11fnuz": "float8_e4m3b11fnuz is not supported by tile2triton's Triton lowering",
    "float8_e3m4": "float8_e3m4 is not a Triton dtype",
    "float6_e2m3fn": "fp6 formats are not Triton dtypes",
    "float6_e3m2fn": "fp6 formats are not Triton dtypes",
    "float4_e2m1fn": "fp4 is the element dtype of tensors, T.empty outputs, shared/fragment/local buffers and "
    "T.cast results (packed two per byte in memory), not a dtype this construct takes",
    "float4_e2m1_unpacked": "it is the shared-memory layout of fp4 operands of Blackwell's tcgen05 MMA "
    "(kind::f8f6f4, one value per byte slot), filled only by T.tma_copy from a packed T.float4_e2m1fn tensor; "
    "TileLang gives it no register type either (no element reads, stores, casts or SIMT copies), and Hopper has "
    "no tcgen05: keep fp4 in T.float4_e2m1fn buffers (packed; element access and casts are supported)",
    "int4": "int4 is the element dtype of tensors, T.empty outputs, shared/fragment/local buffers and "
    "T.cast results (packed two per byte in memory), not a dtype this construct takes",
    "uint4": "uint4 is the element dtype of tensors, T.empty outputs, shared/fragment/local buffers and "
    "T.cast results (packed two per byte in memory), not a dtype this construct takes",
}
PACKED_4BIT = ("float4_e2m1fn", "int4", "uint4")  # the 4-bit dtypes held two per byte (PACKED_STORAGE_TORCH_NAMES)
_UNSUPPORTED_BITS = {"float6": 6, "float4_e2m1_unpacked": 8, "float4": 4, "int4": 4, "uint4": 4}
UNSUPPORTED: dict[str, DType] = {
    name: DType(name, next((b for p, b in _UNSUPPORTED_BITS.items() if name.startswith(p)), 8), "unsupported")
    for name in UNSUPPORTED_DTYPES
}
_TRITON_NAMES["float4_e2m1fn"] = "uint8"  # fp4 in registers: its 4-bit code (codegen/fp4.py)
# torch storage of the sub-byte formats, as TileLang's as_torch() gives it
_TORCH_NAMES["float4_e2m1fn"] = "float4_e2m1fn_x2"
_TORCH_NAMES["float4_e2m1fnx2"] = "float4_e2m1fn_x2"
_TORCH_NAMES["int4"] = "int8"
_TORCH_NAMES["uint4"] = "uint8"
# int4 / uint4 in registers: the value, sign-extended to int8 / zero-extended to uint8 (codegen/fp4.py)
_TRITON_NAMES["int4"] = "int8"
_TRITON_NAMES["uint4"] = "uint8"

# Vector dtypes (T.float16x2, T.float4_e2m1fnx2, ...): names for host code, like the formats above;
# those of the dtypes above are vector values and on-chip buffers in a kernel (frontend/vectors.py)
_VECTOR_REASON = "vector dtypes (lanes > 1) have no Triton equivalent: Triton vectorizes tiles itself"
_VECTOR_USE = (
    "a vector dtype (lanes > 1) is the dtype of vector values, T.alloc_* buffers and global tensors (a "
    "trailing lane axis of the element dtype), not of a scalar here: Triton has no vector element types"
)
_PACKED_VECTOR_USE = (
    "a vector of packed 4-bit values is the dtype of global tensors only (a trailing lane axis of the packed "
    "element, two values a byte), not of a value or an on-chip buffer here"
)
for _base in [*_SPECS, *list(UNSUPPORTED_DTYPES), "tfloat32", "float8_e4m3"]:
    if _base in ("bool", "float4_e2m1_unpacked"):  # no vector forms of these (as in TileLang)
        continue
    _bits = _SPECS[_base][0] if _base in _SPECS else UNSUPPORTED[_base].bits if _base in UNSUPPORTED else 32
    for _lanes in (2, 4, 8, 16, 32, 64):
        UNSUPPORTED_DTYPES[f"{_base}x{_lanes}"] = (
            _VECTOR_USE if _base in _SPECS else _PACKED_VECTOR_USE if _base in PACKED_4BIT else _VECTOR_REASON
        )
        UNSUPPORTED[f"{_base}x{_lanes}"] = DType(f"{_base}x{_lanes}", _bits, "unsupported")


class PointerType(DType):
    """``T.ptr`` / ``T.handle``: a raw address (TileLang's ``handle``).

    A kernel parameter annotated with it takes a tensor or an address (``tensor.data_ptr()``), and
    ``T.make_tensor`` views memory through it.  Stored in memory (``T.Tensor([G], T.ptr)``, a table
    of pointers) it is its 64-bit address, as TileLang lowers it: ``lookup_dtype`` gives int64."""

    def __call__(self, dtype=None, storage_scope="global", *, is_size_var=False):
        # TileLang's T.ptr(dtype, storage_scope) builds a handle variable: here, the same annotation
        return self

    def __reduce__(self):
        return (PointerType, (self.name, self.bits, self.kind))

    def __repr__(self) -> str:
        return "T.ptr"


POINTER = PointerType("handle", 64, "ptr")
_TRITON_NAMES["handle"] = "int64"  # the address as Triton holds it before it becomes a typed pointer
_TORCH_NAMES["handle"] = "int64"


def _key(value) -> str | None:
    if isinstance(value, str):
        key = value.strip()
    elif str(value).startswith("torch."):
        key = str(value)[len("torch.") :]
    else:
        return None
    return _ALIASES.get(key, key)


def lookup_dtype(value) -> DType | None:
    """Return the DType for a string, DType or torch.dtype; None when it names no dtype a kernel can use."""
    if isinstance(value, PointerType):
        return DTYPES["int64"]  # a pointer held in memory: its address
    if isinstance(value, DType):
        return value if value.supported else None
    key = _key(value)
    return None if key is None else DTYPES.get(key)


def dtype_error(value) -> str:
    """Why ``value`` is not a dtype a kernel can use (one line)."""
    key = _key(value)
    if key in UNSUPPORTED_DTYPES:
        return f"T.{key} is a TileLang dtype that tile2triton does not support: {UNSUPPORTED_DTYPES[key]}"
    return f"{value!r} is not a dtype TileLang knows (try 'float16', 'float32', 'int8', ...)"


def to_dtype(value) -> DType:
    found = lookup_dtype(value)
    if found is None:
        raise TypeError(dtype_error(value))
    return found


def resolve_torch_storage_dtype(value) -> DType:
    """The TileLang dtype of the torch storage of ``value`` (TileLang's helper of the same name):
    itself for the formats torch has, ``int8`` for ``int4``, ``float4_e2m1fnx2`` (or ``int8`` where
    torch lacks fp4) for ``float4_e2m1fn``."""
    if isinstance(value, DType):
        key = value.name
    else:
        key = _key(value)
        if key is None:
            raise TypeError(dtype_error(value))
    if key in DTYPES:
        return DTYPES[key]
    if key not in UNSUPPORTED:
        raise TypeError(dtype_error(value))
    import torch

    storage = getattr(torch, _TORCH_NAMES.get(key, key), None)
    if storage is None:
        if key.startswith("float4_e2m1fn"):
            return DTYPES["int8"]
        raise TypeError(f"T.{key} has no torch storage dtype: {UNSUPPORTED_DTYPES[key]}")
    name = str(storage)[len("torch.") :]
    name = {"float4_e2m1fn_x2": "float4_e2m1fnx2"}.get(name, name)  # torch's spelling -> TileLang's
    return DTYPES.get(name) or UNSUPPORTED[name]


# Packed fp4 (T.float4_e2m1fn) in global memory: two values per byte, the low nibble first; torch
# tensors of these dtypes hold it (TileLang's storage of fp4, see resolve_torch_storage_dtype).
FP4_STORAGE_TORCH_NAMES = ("uint8", "int8", "float4_e2m1fn_x2")


# The 4-bit dtypes held two per byte in memory (the element of even index in the low nibble) and the
# torch dtypes of tensors that hold them (TileLang passes int8 bytes for int4)
PACKED_STORAGE_TORCH_NAMES = {
    "float4_e2m1fn": FP4_STORAGE_TORCH_NAMES,
    "int4": ("int8", "uint8"),
    "uint4": ("uint8", "int8"),
}


def is_packed_fp4(dtype) -> bool:
    """Whether ``dtype`` is packed fp4 (``T.float4_e2m1fn``): global tensors of it are bytes."""
    return isinstance(dtype, DType) and dtype.name == "float4_e2m1fn"


def is_packed_int4(dtype) -> bool:
    """Whether ``dtype`` is ``T.int4`` / ``uint4``: packed like fp4, integers in registers."""
    return isinstance(dtype, DType) and dtype.name in ("int4", "uint4")


def is_packed(dtype) -> bool:
    """Whether global tensors of ``dtype`` are bytes holding two 4-bit values each (fp4, int4, uint4)."""
    return isinstance(dtype, DType) and dtype.name in PACKED_STORAGE_TORCH_NAMES


def packed_name(dtype: DType) -> str:
    """How messages name a packed 4-bit dtype: fp4, int4, uint4."""
    return "fp4" if is_packed_fp4(dtype) else dtype.name


def packed_dtype(value) -> DType | None:
    """The packed 4-bit dtype ``value`` names (``T.int4``, ``"uint4"``, ...), or None."""
    key = _key(value) if not isinstance(value, DType) else value.name
    return UNSUPPORTED[key] if key in PACKED_STORAGE_TORCH_NAMES else None


def tensor_dtype(value) -> DType:
    """The element dtype of ``T.Tensor(shape, value)``: a kernel dtype, or a packed 4-bit one."""
    return packed_dtype(value) or to_dtype(value)


def typed_int(dim):
    """``T.int32(64)`` as a size: its int (TileLang takes typed integer constants as sizes); else ``dim``."""
    if isinstance(dim, TypedLiteral) and dim.dtype.is_int and isinstance(dim.value, int):
        return dim.value
    return dim


def vector_parts(value) -> tuple[DType, int] | None:
    """``float32x2`` -> (float32, 2), ``float4_e2m1fnx2`` -> (packed fp4, 2): a vector dtype whose
    element is a kernel dtype or a packed 4-bit one; None for anything else."""
    key = value.name if isinstance(value, DType) else _key(value)
    m = re.match(r"^(\w+?)x(\d+)$", key or "")
    if m is None or key not in UNSUPPORTED:
        return None
    element = packed_dtype(m.group(1)) or DTYPES.get(m.group(1))
    return (element, int(m.group(2))) if element is not None else None


def global_dtype(value) -> DType:
    """The dtype of a global tensor (``T.Tensor``, ``T.empty``): ``tensor_dtype``'s, or a vector dtype
    (the binder lays its lanes out as a trailing axis of its element dtype)."""
    if vector_parts(value) is not None:
        return UNSUPPORTED[value.name if isinstance(value, DType) else _key(value)]
    return tensor_dtype(value)


def packed_storage_torch(dtype: DType):
    """The torch dtype of the packed tensors tile2triton allocates (``T.empty``): TileLang's choice."""
    import torch

    return fp4_storage_torch() if is_packed_fp4(dtype) else getattr(torch, _TORCH_NAMES[dtype.name])


def fp4_storage_torch():
    """The torch dtype of fp4 tensors tile2triton allocates (``T.empty``): TileLang's choice."""
    import torch

    return getattr(torch, "float4_e2m1fn_x2", torch.int8)


def _fp4_name(value) -> str:
    name = value.name if isinstance(value, DType) else str(value).strip()
    return {"custom[float4_e2m1_unpacked]8": "float4_e2m1_unpacked"}.get(name, name)


def is_float4_e2m1fn(value) -> bool:
    """TileLang's predicate: packed fp4 (``float4_e2m1fn`` and its vector forms)."""
    return _fp4_name(value).startswith("float4_e2m1fn")


def is_float4_e2m1_unpacked(value) -> bool:
    """TileLang's predicate: fp4 held one value per byte (``float4_e2m1_unpacked``)."""
    return _fp4_name(value) == "float4_e2m1_unpacked"


def is_float4(value) -> bool:
    """Any fp4 E2M1 variant, packed or unpacked."""
    return is_float4_e2m1fn(value) or is_float4_e2m1_unpacked(value)


DType.is_float4_e2m1fn = is_float4_e2m1fn
DType.is_float4_e2m1_unpacked = is_float4_e2m1_unpacked
DType.is_float4 = is_float4


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


def dtype(value) -> DType:
    """``tilelang.language.dtypes.dtype(x)``: the DType of a name, DType or torch dtype, in host code.

    Unlike ``T.dtype`` inside a kernel, names with no Triton dtype (``float8_e8m0fnu``, ...) are
    returned too: host code may name them (a kernel that uses one still fails with the reason)."""
    if isinstance(value, DType):
        return value
    found = lookup_dtype(value)
    if found is not None:
        return found
    key = _key(value)
    if key in UNSUPPORTED:
        return UNSUPPORTED[key]
    if key == "float4_e2m1fn_x2":  # torch's name of packed fp4
        return UNSUPPORTED["float4_e2m1fn"]
    raise TypeError(dtype_error(value))


# TileLang's list of every dtype name (``tilelang.language.dtypes._all_dtypes``): the C names, the
# supported dtypes and the names host code may use but kernels may not.
_C_NAMES = ("bool", "short", "int", "uint", "long", "half", "float", "double")
# uint4 is spelt T.dtype("uint4") only: TileLang has no T.uint4 (nor its vector names)
_all_dtypes = [
    name
    for name in dict.fromkeys([*_C_NAMES, *DTYPES, *UNSUPPORTED, "float8_e4m3", "tfloat32"])
    if not name.startswith("uint4")
]


def __getattr__(name: str):
    # TileLang's module exposes its tables and one attribute per dtype (``dtypes.float16``,
    # ``dtypes.float``); built on first use so that importing this module does not import torch.
    if name in ("_TORCH_DTYPE_TO_STR", "_STR_TO_TORCH_DTYPE"):
        import torch

        table = {}
        for dt in [*DTYPES.values(), *UNSUPPORTED.values()]:
            torch_dtype = getattr(torch, _TORCH_NAMES.get(dt.name, dt.name), None)
            if isinstance(torch_dtype, torch.dtype) and torch_dtype not in table:
                table[torch_dtype] = dt.name
        globals()["_TORCH_DTYPE_TO_STR"] = table
        globals()["_STR_TO_TORCH_DTYPE"] = {v: k for k, v in table.items()}
        return globals()[name]
    key = _ALIASES.get(name, name)
    if key in DTYPES:
        return DTYPES[key]
    if key in UNSUPPORTED:
        return UNSUPPORTED[key]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
