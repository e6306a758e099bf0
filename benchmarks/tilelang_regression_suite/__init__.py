"""TileLang's performance-regression suite through real TileLang and through tile2triton
(benchmarks/tilelang_regression.py is the command): ``run`` drives the child processes,
``child`` runs one regression file under one implementation, ``outputs`` compares what the two
computed, ``report`` writes the BENCHMARKS.md section."""
