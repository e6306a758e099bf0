"""The BENCHMARKS.md section from the part files of one run (later files win per case): the suite's
shapes (``part_K_of_N.json``) or, from a ``--variants`` run (``variants_part_K_of_N.json``), the
other shapes of variants.py, each under its own heading; one summary takes one kind."""

from __future__ import annotations

import glob
import json
import math
import os

HEADING = "## TileLang's performance-regression suite (same source)"
VARIANTS_HEADING = "## TileLang's regression suite at other shapes"
PART_FILES = ("part_*_of_*.json", "variants_part_*_of_*.json")
ABSENT_PACKAGES = ("fla", "flash_attn")


def load(paths: list) -> list:
    """Rows of the part files (``part_*.json`` or ``variants_part_*.json`` in a folder, or the files
    named), one per case; the files must be of one kind."""
    rows: dict = {}
    kinds = set()
    for p in paths:
        files = (
            sorted(f for pattern in PART_FILES for f in glob.glob(os.path.join(p, "**", pattern), recursive=True))
            if os.path.isdir(p)
            else [p]
        )
        for f in files:
            with open(f) as fh:
                part = json.load(fh)
            kinds.add(int(part.get("variants", 0)))  # 0: the suite's shapes; else the variant set
            for row in part["rows"]:
                rows[(row["file"], row["case"])] = row
    if len(kinds) > 1:
        raise SystemExit("--summary: part files of the suite's shapes and of --variants sets mixed; give one kind")
    return [rows[k] for k in sorted(rows)]


def _reported_call(record: dict) -> dict:
    """The bench call whose event time the case reported (the one nearest its latency); {} if none."""
    bench = record.get("bench") or []
    latency = record.get("latency")
    if record.get("status") != "ok" or not bench or latency is None:
        return {}
    return min(bench, key=lambda c: abs(c["ms"] - latency))


def kernel_ms(record: dict) -> float | None:
    """Device time of the kernels of the bench call whose event time the case reported."""
    k = _reported_call(record).get("kernel_ms")
    return k if isinstance(k, float) and k > 0 else None


def kernel_split(record: dict) -> dict:
    """That bench call's device ms per kernel name (``child.kernel_times``; empty in older runs)."""
    return _reported_call(record).get("kernels") or {}


def _split(kernels: dict) -> str:
    return ", ".join(f"`{name[:60]}` {ms:.4f}" for name, ms in sorted(kernels.items(), key=lambda kv: -kv[1]))


def _absent_package(error: str) -> str | None:
    for name in ABSENT_PACKAGES:
        if f"No module named '{name}" in error:
            return name
    return None


def geomean(xs: list) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _ms(x) -> str:
    return "-" if x is None else f"{x:.4f}"


def _ratio(x) -> str:
    return "-" if x is None else f"{x:.2f}×"


def _error(record: dict) -> str:
    lines = [ln for ln in (record.get("error") or "not run").splitlines() if ln.strip()]
    return (lines[0] if lines else "?")[:120].replace("|", "/")


def markdown(rows: list, title: str = "") -> str:
    variants = any("variant" in row or str(row.get("skipped", "")).startswith("no variant") for row in rows)
    shapes = [f"- `{r['case'].removeprefix('regression_')}`: {r['variant']}" for r in rows if "variant" in r]
    table, events, kernels, splits = [], [], [], []
    tilelang_fails, absent, t2t_fails, skipped = [], [], [], []
    for row in rows:
        name = f"`{row['case'].removeprefix('regression_')}`"
        where = f"{name} ({row['file']})"
        if "skipped" in row:
            skipped.append(f"{where}: {row['skipped']}")
            continue
        tl, t2 = row["tilelang"], row["tile2triton"]
        if tl["status"] != "ok" or not tl.get("latency"):
            package = _absent_package(tl.get("error", ""))
            (absent if package else tilelang_fails).append(
                f"{where}: " + (f"needs `{package}`" if package else _error(tl))
            )
            continue
        if t2["status"] != "ok" or not t2.get("latency"):
            t2t_fails.append(f"{where}: {_error(t2)}")
            continue
        event = tl["latency"] / t2["latency"]
        k1, k2 = kernel_ms(tl), kernel_ms(t2)
        kernel = k1 / k2 if k1 and k2 else None
        events.append(event)
        split1, split2 = kernel_split(tl), kernel_split(t2)
        if len(split1) > 1 or len(split2) > 1:
            splits.append(f"{name}: TileLang {_split(split1) or '-'}; tile2triton {_split(split2) or '-'}")
        if kernel is not None:
            kernels.append(kernel)
        table.append(f"| {name} | {row['file']} | {_ms(tl['latency'])} | {_ms(t2['latency'])} | {_ms(k1)} | {_ms(k2)} "
                     f"| {row.get('outputs', '-').replace('|', '/')} | {_ratio(event)} | {_ratio(kernel)} |")  # fmt: skip
    out = [VARIANTS_HEADING if variants else HEADING, ""]
    if title:
        out += [title, ""]
    out += [
        "| case | file | TileLang ms | tile2triton ms | TileLang kernel ms | tile2triton kernel ms | outputs "
        "| event ratio | kernel ratio |",
        "|---|---|---|---|---|---|---|---|---|",
        *table,
        "",
        f"Geometric means (TileLang ms / tile2triton ms): event ratio {_ratio(geomean(events))} over "
        f"{len(events)} cases, kernel ratio {_ratio(geomean(kernels))} over {len(kernels)} cases.",
    ]
    for heading, items in (
        ("Kernel ms per kernel, for the cases that launch more than one", splits),
        ("Cannot run on tile2triton (not counted)", t2t_fails),
        ("Fail on TileLang (not counted)", tilelang_fails),
        ("Need a package the GPU machine lacks (not counted)", absent),
        ("Not timed (not counted)", skipped),
    ):
        if items:
            out += ["", f"{heading}:", *[f"- {item}" for item in items]]
    if shapes:
        out += ["", "Shapes (benchmarks/tilelang_regression_suite/variants.py):", *shapes]
    return "\n".join(out) + "\n"
