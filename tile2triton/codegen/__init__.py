"""TileIR -> Triton: lowering rules (rules.py) driven by lower.py, printed by emit.py."""
