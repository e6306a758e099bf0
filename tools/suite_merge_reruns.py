#!/usr/bin/env python3
"""Fold re-runs of some files into a ``tools/tilelang_suite.py --json`` result.

    python3 tools/suite_merge_reruns.py BASE.json OUT.json RERUN.json [RERUN.json ...]

For every item that failed in BASE and ran (not skipped) in a re-run, the re-run's outcome and
message replace BASE's, and the item is marked ``rerun`` with the re-run's file name; later re-runs
win.  A file BASE collected no item of (an import or collection error ended it) takes the re-run's
items whole, skipped ones included: those were not run on the GPU since the fix, and count as such.  Used when a fix lands after the GPU run: the files it touches are re-run (on the CPU
interpreter with ``--cuda-as-cpu``) and the tables say which items come from where.
"""

from __future__ import annotations

import json
import os
import sys


def _files(data: dict) -> list:
    runs = data.get("implementations") or {}
    return runs["t2t"]["files"] if "t2t" in runs else data["files"]


def merge(base: dict, reruns: list[tuple[str, dict]]) -> list[tuple]:
    by_file = {f["file"]: f for f in _files(base)}
    changed = []
    for label, rerun in reruns:
        for cf in _files(rerun):
            gf = by_file.get(cf["file"])
            if gf is None:
                continue
            if not gf.get("items") and cf.get("items"):  # nothing collected in BASE: the re-run's items
                gf["items"] = [dict(i, rerun=label) for i in cf["items"] if i.get("kind", "item") == "item"]
                changed += [
                    (cf["file"], i["nodeid"].split("::", 1)[-1], "uncollected", i["outcome"]) for i in gf["items"]
                ]
            items = {i["nodeid"].split("::", 1)[-1]: i for i in cf["items"] if i.get("kind", "item") == "item"}
            for gi in gf["items"]:
                ci = items.get(gi["nodeid"].split("::", 1)[-1])
                if gi["outcome"] not in ("failed", "error") or ci is None or ci["outcome"] == "skipped":
                    continue
                if (ci["outcome"], ci["msg"]) != (gi["outcome"], gi["msg"]):
                    changed.append((cf["file"], gi["nodeid"].split("::", 1)[-1], gi["outcome"], ci["outcome"]))
                gi.update(outcome=ci["outcome"], msg=ci["msg"], rerun=label)
            counts: dict = {}
            for gi in gf["items"]:
                counts[gi["outcome"]] = counts.get(gi["outcome"], 0) + 1
            gf["counts"] = counts
            gf["status"] = "failed" if counts.get("failed") or counts.get("error") else "passed"
    return changed


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    base = json.load(open(sys.argv[1]))
    reruns = [(os.path.basename(p), json.load(open(p))) for p in sys.argv[3:]]
    changed = merge(base, reruns)
    json.dump(base, open(sys.argv[2], "w"))
    for row in changed:
        print(*row)
    print(f"{len(changed)} items took a re-run's outcome")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
