"""The dtypes the compiler itself names (conditions, indices, accumulation)."""

from ..language.dtypes import DTYPES

BOOL = DTYPES["bool"]
INT32 = DTYPES["int32"]
FLOAT32 = DTYPES["float32"]
