#!/usr/bin/env python3
"""Compose docs/tilelang_suite_other_folders.md from per-folder ``tools/tilelang_suite.py --both`` results.

    python3 tools/suite_folders_doc.py HEAD.md OUT.md --checkout TILELANG_CHECKOUT FOLDER=RESULT.json ...

HEAD.md is the hand-written part (where the runs come from, what remains by cause; the current doc
may serve: only its text before the first table is read); then one
summary row per folder and, per folder, ``tools/suite_compare.py``'s tables of its result (issue 26's
rule), each section naming the JSON it comes from.  A folder whose TileLang run passed nothing is
listed under the table, not given a section.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite_compare  # noqa: E402

COLUMNS = ("native", "t2t", "excluded", "remaining", "cuda_c", "hardware")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("head")
    ap.add_argument("out")
    ap.add_argument("results", nargs="+", metavar="FOLDER=RESULT.json")
    ap.add_argument("--checkout", required=True)
    args = ap.parse_args()
    rows, sections, empty = [], [], []
    for spec in args.results:
        folder, path = spec.split("=", 1)
        t2t, native = suite_compare._items(path, "t2t"), suite_compare._items(path, "native")
        per_file, excluded, remaining = suite_compare.compare(native, t2t, args.checkout)
        total = Counter()
        for c in per_file.values():
            total.update(c)
        if not total["native"]:
            empty.append(folder)
            continue
        rows.append(f"| `testing/python/{folder}` | " + " | ".join(str(total[k]) for k in COLUMNS) + " |")
        body = suite_compare.markdown(per_file, excluded, remaining)
        sections.append(f"### `testing/python/{folder}`\n\nFrom `{path}`.\n\n{body.rstrip()}\n")
    with open(args.head) as f:
        text = f.read().split("\n| folder |")[0].rstrip() + "\n\n"
    text += (
        "| folder | TileLang passes | tile2triton passes | excluded | remaining | of them CUDA C | of them hardware |\n"
    )
    text += "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    if empty:
        text += f"\nTileLang's own run passed no item of: {', '.join(f'`{e}`' for e in empty)}.\n"
    text += "\n" + "\n".join(sections)
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
