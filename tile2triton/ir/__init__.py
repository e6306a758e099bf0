"""TileIR: the typed program tile2triton lowers (`nodes.py`), and the dtype constants every stage uses."""

from .dtypes import BOOL, FLOAT32, INT32  # noqa: F401
from .nodes import *  # noqa: F403
