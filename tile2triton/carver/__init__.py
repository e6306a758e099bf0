"""``tilelang.carver``: device descriptions (``arch``) that scripts query for sizes such as the SM
count.  The roller that derives tile configurations from them is not provided (see ``template``)."""

from . import arch

__all__ = ["arch"]
