"""Source -> TileIR: read the kernel's Python AST (source.py) and bind it to TileIR (bind.py, with the
binding rules in rules.py, TileLang's operand regions in regions.py and eager-style kernels in eager_bind.py)."""

from . import rules_grid, rules_tvm  # noqa: F401,E402 - they register their RULES
