"""Is a regression case's event time its host time?  One TileLang example's ``run_regression_perf``
through tile2triton, with the timer it reaches (``Profiler.do_bench`` or the ``do_bench`` the example
imports) replaced by a probe that prints, for the timed callable:

* ``host us``: 300 calls back to back (``time.perf_counter``), then one synchronize; median of 5 rounds;
* ``event us``: ``triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")``, the suite's
  timer (L2 flushed before each call);
* ``no-flush us``: the same CUDA events around each of 200 calls without the flush between them;
* ``kernel us``: the CUDA time of one call's kernels (torch.profiler, as the suite's ``kernel_ms``);
* with ``--parts`` (tile2triton): ``checks us`` and ``launches us`` (``_parts``).

Where ``event us`` is near ``host us`` and far above ``kernel us``, the host did not keep ahead of the
GPU in the timed loop (issue 23: ``mha_inference``'s event time read 30 to 65 us with the same
26 us of kernels).  Session 28 (``gpu_logs/2026-12-04_s28_host_bound_probe.log``): the flush zeroes 256 MB
in 61.5 us of GPU time while the host records an event (14.2 us) and makes the call; the event reads
host time once the host's path to the call's last launch is longer than the zeroing, for either
implementation (``sparse_gqa_decode_varlen_indice``: ours 35-54 us of host, event 12; TileLang's 52-54,
event 34-39).  On the GPU machine, from the repo root:

    PYTHONPATH=. python3 benchmarks/host_bound_probe.py EXAMPLES FILE [KEY=VALUE ...] [--impl tilelang]

FILE is the example relative to EXAMPLES (``flash_decoding/example_mha_inference.py``); KEY=VALUE
pairs are ``run_regression_perf``'s arguments (ints, floats, True/False).  ``--impl tilelang`` runs real
TileLang instead (its site on PYTHONPATH, as the suite's ``--site``), for the same rows on the same machine.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _no_flush_us(fn) -> float:
    import torch

    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(200)]
    for _ in range(25):
        fn()
    for start, end in pairs:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs) * 1e3


def probe(fn, *args, **kwargs):
    import torch
    import triton.testing

    sys.path.insert(0, os.path.join(HERE, "tilelang_regression_suite"))
    sys.path.insert(0, HERE)
    from child import kernel_ms  # the suite's kernel time
    from hostcost_probe import _host_us  # 300 calls back to back, median of 5 rounds

    row = {
        "host us": _host_us(fn, torch.cuda.synchronize, host_only=False),
        "event us": triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3,
        "no-flush us": _no_flush_us(fn),
        "kernel us": kernel_ms(fn) * 1e3,
    }
    if PARTS:
        row.update(_parts(fn, _host_us))
    print("| " + " | ".join(f"{k} {v:.1f}" for k, v in row.items()) + " |", flush=True)
    return 1.0


PARTS = False  # --parts: tile2triton's call taken apart


def _parts(fn, host_us) -> dict:
    """tile2triton's call taken apart, host us each: ``checks`` (the call with every ``DirectLaunch``
    launch made a no-op: the example's own code, the generated launcher's checks, outputs and keys)
    and ``launches`` (the call's launches replayed as the launcher made them)."""
    import torch

    from tile2triton.runtime.launcher import DirectLaunch

    call, by_address, seen = DirectLaunch.__call__, DirectLaunch.launch_addresses, []

    def record_call(self, *args):
        seen.append((call, self, args))
        return call(self, *args)

    def record_address(self, *args):
        done = by_address(self, *args)
        if done:
            seen.append((by_address, self, args))
        return done

    DirectLaunch.__call__, DirectLaunch.launch_addresses = record_call, record_address
    try:
        fn()
        DirectLaunch.__call__, DirectLaunch.launch_addresses = lambda *a: None, lambda *a: True
        checks = host_us(fn, torch.cuda.synchronize, host_only=False)
    finally:
        DirectLaunch.__call__, DirectLaunch.launch_addresses = call, by_address

    def launches():
        for method, direct, args in seen:
            method(direct, *args)

    return {"checks us": checks, "launches us": host_us(launches, torch.cuda.synchronize, host_only=False)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples")
    ap.add_argument("file")
    ap.add_argument("pairs", nargs="*", help="run_regression_perf's arguments, KEY=VALUE")
    ap.add_argument("--impl", default="tile2triton", choices=("tile2triton", "tilelang"))
    ap.add_argument("--parts", action="store_true", help="tile2triton: checks us and launches us of the call")
    ns = ap.parse_args(argv)
    global PARTS
    PARTS = ns.parts and ns.impl == "tile2triton"
    kwargs = {}
    for pair in ns.pairs:
        key, value = pair.split("=", 1)
        kwargs[key] = ast.literal_eval(value)
    if ns.impl == "tile2triton":
        from tile2triton.cli import install_tilelang_alias

        install_tilelang_alias()
    import tilelang.profiler  # tile2triton's under the alias

    tilelang.profiler.do_bench = probe  # what Profiler.do_bench calls, in both implementations
    if ns.impl == "tilelang":
        import tilelang.profiler.bench

        tilelang.profiler.bench.do_bench = probe
    sys.path.insert(0, os.path.join(ns.examples, os.path.dirname(ns.file)))
    example = importlib.import_module(os.path.basename(ns.file)[:-3])
    if hasattr(example, "do_bench"):  # imported by name from tilelang.profiler
        example.do_bench = probe
    example.run_regression_perf(**kwargs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
