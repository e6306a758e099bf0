"""Oracles that check tile2triton's generated code without trusting it.

* ``reference`` executes a kernel's TileIR with torch on the CPU (TileLang's semantics, no Triton);
* ``fuzz`` generates random TileLang programs and checks tile2triton against the reference.

``fuzz`` is imported on demand (``from tile2triton.oracle import fuzz``); neither module needs
hypothesis, which only the test suite's adapter (``fuzz.hypothesis_programs``) imports.
"""
