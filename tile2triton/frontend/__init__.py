"""Source -> TileIR: read the kernel's Python AST (source.py) and bind it to TileIR (bind.py)."""
