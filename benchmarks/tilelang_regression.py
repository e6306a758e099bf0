"""TileLang's own performance-regression suite, the same source through real TileLang and through
tile2triton, timed alike, outputs compared.

    python3 benchmarks/tilelang_regression.py TILELANG_CHECKOUT [--part K/N] [--site DIR] [--out DIR]
                                              [-j N] [--files SUBSTR...] [--variants]
    python3 benchmarks/tilelang_regression.py --summary DIR_OR_JSON... [--title TEXT]

The suite is every ``regression_*`` function of TILELANG_CHECKOUT/examples/**/regression_*.py, run
unmodified.  Each runs in a child process per implementation (tilelang_regression_suite/child.py)
where both implementations' ``do_bench`` is one timer: event ms, ``triton.testing.do_bench``
median (warmup=25, rep=200, L2 flushed); kernel ms, the device time of every CUDA kernel a call
launches (torch.profiler / CUPTI, flush excluded).  A warm phase runs every case in parallel
(compiles), then each file is timed alone, TileLang then tile2triton.  The tensors the first call
of each timed callable returns are sampled on both sides and compared within a tolerance for
their dtype ('agree', 'differ: ...', 'not exposed' when nothing returns a tensor, 'inputs
differ' when the random generators did not stand alike).  A part writes OUT/part_K_of_N.json;
``--summary`` merges parts into the BENCHMARKS.md section
"## TileLang's performance-regression suite (same source)".

On the GPU machine (no network), from the project root, carrying the TileLang wheels that
/work/shared/tools/tilelang-wheels.sh builds (DEST=.whl) and a TileLang checkout (here .tl,
git-ignored: ``examples/`` is all the suite reads).  Three parts fit three 10-minute calls:

    SITE=$(mktemp -d) && python3 -m pip install -q --no-index --no-deps --no-compile --target $SITE .whl/*.whl \
      && ln -sf libz3.so.4.15 $SITE/z3/lib/libz3.so && export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda \
      && python3 benchmarks/tilelang_regression.py .tl --site $SITE --part 1/3 -j 14 --out $OUT/r1
    (the same with --part 2/3 --out $OUT/r2, --part 3/3 --out $OUT/r3)
    python3 benchmarks/tilelang_regression.py --summary r1 r2 r3 > section.md

A device call carries at most 64 MiB with the working tree; the wheels (57 MB) no longer fit beside it.
Session 12 carried them unpacked and xz-compressed (36 MB), made here once and unpacked there in place
of the pip install: ``for w in .whl/*.whl; do unzip -q -o $w -d site; done && tar cf - -C site . | xz -6
-T2 > .tl/site.tar.xz``, then ``mkdir -p $SITE && tar xJf .tl/site.tar.xz -C $SITE`` and the same link.
``tools/carry_tilelang.sh CHECKOUT`` makes that .tl (with the examples and a setup.sh that unpacks both there).

``--variants [SET]`` runs every case at another shape instead (tilelang_regression_suite/variants.py: one
per case in each of two sets, with its reason; set 2 changes what set 1 kept: head dims, causality, dtype,
tile tails; ``process_func`` is intercepted in both implementations' children alike),
writing OUT/variants_part_K_of_N.json; ``--summary`` of those prints "## TileLang's regression suite
at other shapes" (same columns, the shapes listed below).  The same three calls, with cold caches:

    ... python3 benchmarks/tilelang_regression.py .tl --site $SITE --variants --part 1/3 -j 15 --out $OUT/v1
    python3 benchmarks/tilelang_regression.py --summary v1 v2 v3 > variants_section.md

Cases that fail on TileLang or need a package the machine lacks (fla, flash_attn) are listed
under the table, not counted; so are those that cannot run on tile2triton.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tilelang_regression_suite import report, run  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkout", nargs="?", help="a TileLang checkout (its examples/ folder is the suite)")
    p.add_argument("--part", default="1/1", help="K/N: the K-th of N parts of about equal case counts")
    p.add_argument("--site", default="", help="where real TileLang is installed (PYTHONPATH of its children)")
    p.add_argument("--out", default="tilelang_regression_out", help="folder for the JSON files")
    p.add_argument("-j", type=int, default=12, help="parallel children in the warm phase")
    p.add_argument("--files", nargs="*", default=[], help="only files whose path contains one of these")
    p.add_argument("--variants", nargs="?", type=int, const=1, default=0, choices=(1, 2), metavar="SET",
                   help="each case at its shape in variants.py's set SET (1, the default, or 2)")  # fmt: skip
    p.add_argument("--no-warm", action="store_true", help="skip the warm phase (caches already warm)")
    p.add_argument("--deadline", type=int, default=560,
                   help="seconds after which no further file is timed (a file timed near it gets the time left, at least 30 s)")  # fmt: skip
    p.add_argument("--warm-timeout", type=int, default=420)
    p.add_argument("--time-timeout", type=int, default=240)
    p.add_argument("--summary", nargs="+", metavar="PART", help="merge part files/folders; print the section")
    p.add_argument("--title", default="", help="--summary: a line under the heading (machine, versions)")
    a = p.parse_args(argv)
    if a.summary:
        print(report.markdown(report.load(a.summary), a.title), end="")
        return 0
    if not a.checkout:
        p.error("give a TileLang checkout, or --summary")
    examples = os.path.join(a.checkout, "examples")
    if not os.path.isdir(examples):
        examples = a.checkout  # an examples folder given directly
    path = run.run_part(
        examples, a.part, a.site, a.out, a.j, a.files, a.deadline, a.warm_timeout, a.time_timeout,
        warm=not a.no_warm, variants=a.variants,
    )  # fmt: skip
    print(report.markdown(report.load([path])), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
