"""``tvm.DataType``: a dtype string parsed into code, bits and lanes (what scripts read off it)."""

from __future__ import annotations

import re


class DataTypeCode:
    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    BFLOAT = 4
    CUSTOM = 129  # "custom[name]bits"


_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64"}
_PATTERN = re.compile(r"(bool|handle|int|uint|float|bfloat|tfloat)(\d*)(_[a-z0-9_]+)?(?:x(\d+))?")


class DataType(str):
    """``DataType("float16x4")``: ``.bits`` 16, ``.lanes`` 4, ``.type_code`` FLOAT.  A ``str``."""

    NAME = {v: k.lower() for k, v in vars(DataTypeCode).items() if not k.startswith("_")}

    def __new__(cls, dtype):
        text = _ALIASES.get(str(dtype).replace("torch.", ""), str(dtype).replace("torch.", ""))
        obj = super().__new__(cls, text)
        custom = re.fullmatch(r"custom\[([^\]]+)\](\d+)(?:x(\d+))?", text)
        m = _PATTERN.fullmatch(text)
        if custom:
            code, bits, lanes = DataTypeCode.CUSTOM, int(custom.group(2)), int(custom.group(3) or 1)
        elif m:
            kind, digits, _suffix, lanes = m.groups()
            code = {"int": DataTypeCode.INT, "uint": DataTypeCode.UINT, "bool": DataTypeCode.UINT,
                    "handle": DataTypeCode.HANDLE, "bfloat": DataTypeCode.BFLOAT}.get(kind, DataTypeCode.FLOAT)  # fmt: skip
            bits = int(digits) if digits else {"bool": 1, "handle": 64}.get(kind, 32)
            lanes = int(lanes or 1)
        else:
            raise ValueError(f"tvm.DataType: cannot parse dtype {text!r}")
        obj.type_code, obj.bits, obj.lanes = code, bits, lanes
        return obj

    @property
    def itemsize(self) -> int:
        return (self.bits * self.lanes + 7) // 8

    def with_lanes(self, lanes: int) -> DataType:
        base = str(self).split("x")[0] if self.lanes > 1 else str(self)
        return DataType(base if lanes == 1 else f"{base}x{lanes}")

    def is_scalar(self) -> bool:
        return self.lanes == 1

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"
