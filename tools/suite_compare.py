#!/usr/bin/env python3
"""Compare two ``tools/tilelang_suite.py --json`` results: real TileLang (``--native``) and tile2triton.

    python3 tools/suite_compare.py NATIVE.json T2T.json [--checkout DIR] [--markdown OUT.md]

(one ``--both`` JSON may be given twice: its ``native`` and ``t2t`` runs are read from it.)
NATIVE may also be the text log of a ``--native`` run (``*.log``): it names every failed, errored and
skipped item and counts each file's passes, so the items it does not name, among those tile2triton's
run collected from the same file, are TileLang's passes (a file whose counts disagree is reported).

For every item real TileLang passes, the item's outcome through tile2triton, and for each one
tile2triton does not pass, whether it is excluded: the test inspects TileLang's generated CUDA/TIR
text (or TileLang's lowering objects and API), checks no kernel result, or needs a package the GPU
machine lacks.  Issue 26 tightened the rule: an item whose failure is tile2triton's own (a compile
error of tile2triton, Triton rejecting the generated code, a launch that fails) is never excluded,
so an exclusion means that tile2triton compiled (and, where the test launches it, ran) the test's kernel and the failure is an
assertion about TileLang's text, IR or internal API.  The three CUDA C constructs (``T.import_source``,
``T.call_extern``, ``T.CUDASourceCodeKernel``) remain, marked as the accepted limit.  The decision
reads tile2triton's failure message and, with ``--checkout``, the test function's own source; each
excluded item is listed with its reason so the judgement can be checked, and the counts are given per
test folder.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
from collections import Counter, defaultdict

# the failure itself shows the test was reading generated text or TileLang's compiler objects
TEXT_FAILURES = re.compile(
    r"in '# Triton generated|in \"# Triton generated|Expected .* in (generated |kernel )?(CUDA )?source|is not vectorized"
    r"|expected a vectorized|no attribute '(lower|get_tir|script|adapter|get_host_source|get_kernel_source_tir)'"
    r"|AssertionError: # Triton generated|module 'tile2triton' has no attribute 'lower'|Expected .* in source"
    # testing/python/{fastmath,math}'s check_fastmath_usage: CUDA function names counted in the kernel's source
    r"|Expected fastmath calls but found none|Found unexpected fastmath calls|AssertionError: No \w+ calls found"
    r"|AssertionError: expected \w+ in generated source"  # test_math_fast_math.py's htan( check
)
# calls in the test's body that read generated text or TIR
TEXT_CALLS = re.compile(
    r"get_kernel_source|get_host_source|\.script\(|tilelang\.lower\(|\blower\(|assert_structural_equal"
    r"|get_tir|\.mod\b|IRModule|tvm\.tirx\.|from tvm\.script|IRBuilder"
)
# what a test that checks a kernel's results calls on them
RESULT_CHECKS = re.compile(
    r"assert_close|allclose|torch\.equal|assert_allclose|torch_assert|assert_similar|\.tolist\(\)|== ref|ref_program"
    r"|torch\.testing|np\.testing|numpy\.testing|\.all\(\)|\.any\(\)|\.item\(\)|\.cpu\(\)|\.numpy\(\)|isnan|isinf"
)
# tile2triton's own failures: never excluded (issue 26)
T2T_FAILURES = re.compile(
    r"tile2triton\.errors\.|TileLangCompileError|GeneratedCodeError|KernelCallError|Triton rejected"
    r"|triton\.compiler\.errors|CompilationError|is not supported by tile2triton|tile2triton does not support"
    r"|InterpreterError|out of resources|illegal memory access|module 'tile2triton[\w.]*' has no attribute"
)
# Triton cannot link CUDA C device code: the accepted limit (README's "not yet" row)
CUDA_C = re.compile(r"import_source|call_extern|call_pure_extern|CUDASourceCodeKernel")
# tile2triton's named refusals for a hardware reason: Blackwell-only (sm_100) instructions and storage, and
# Hopper's distributed shared memory (another block's shared memory, which Triton's tl cannot address)
# (README's "not yet" row); they remain, counted apart as CUDA C is
HARDWARE = re.compile(
    r"requires Blackwell|requires sm_100a|T\.float4_e2m1_unpacked is a TileLang dtype|T\.clc_"
    r"|cannot address another block's shared memory"  # Hopper's distributed shared memory (T.copy_cluster, ...)
)
# the test expects TileLang to reject a program that tile2triton accepts (a limit of TileLang's, listed)
NOT_RAISED = re.compile(r"DID NOT RAISE")
# failures only a kernel being compiled or launched raises
COMPILING = re.compile(
    r"TileLangCompileError|LoweringCheckError|GeneratedCodeError|CompilationError|Triton rejected|KernelCallError"
)
# what a test that builds a kernel calls (a test with none of these builds TVM IR or calls an API only)
BUILDS_KERNEL = re.compile(
    r"@T\.prim_func|tilelang\.jit|tilelang\.compile|tilelang\.lower|T\.Kernel|JITKernel|\bcompile\(|\bkernel\b"
    r"|get_kernel_source"
)
PACKAGES = re.compile(r"No module named '(fla|flash_attn|cutlass|triton_kernels)'")
# a bare count comparison failing in a test that counts strings in the kernel's source
COUNT_FAILURE = re.compile(r"AssertionError: assert \d+ == \d+")
COUNTS_TEXT = re.compile(r"(get_kernel_source\(\)|source)\.count\(")
# parametrize ids that print a dtype: TileLang's T.float8_e4m3 prints as itself, tile2triton's (the same
# e4m3fn format, as TileLang maps it on NVIDIA GPUs) as float8_e4m3fn
ID_ALIASES = [(re.compile(r"float8_e4m3(?!fn)"), "float8_e4m3fn")]


def folder_of(path: str) -> str:
    """``examples`` or ``testing/python/<folder>``: the suite's set a file belongs to."""
    parts = path.split("/")
    return "/".join(parts[:3]) if parts[:2] == ["testing", "python"] and len(parts) > 3 else parts[0]


def _items(path: str, mode: str) -> dict:
    data = json.load(open(path))
    runs = data.get("implementations") or {}
    files = runs[mode]["files"] if mode in runs else data["files"]
    out = {}
    for f in files:
        seen = False
        for it in f["items"]:
            if it.get("kind", "item") != "item":
                continue
            name = it["nodeid"].split("::", 1)[1]
            out[(f["file"], name)] = (it["outcome"], it.get("msg", ""))
            seen = True
        if not seen:
            why = "; ".join(e.get("msg", "") for e in f.get("collect_errors") or []) or f["status"]
            out[(f["file"], None)] = (f["status"], why)
    return out


_LOG_FILE = re.compile(r"^(passed|failed|timeout|collection error|error)\s+(\S+)\s+\[(.*)\]")
_LOG_ITEM = re.compile(r"^    (failed|skipped|error)\s+(.+?): (.*)$")


def _items_from_log(path: str, t2t: dict) -> dict:
    """A ``--native`` run's text log as ``_items`` would read its JSON, with the item names of
    tile2triton's run of the same files (the log names only items that did not pass)."""
    named, counts, order = defaultdict(dict), {}, []
    current = None
    for line in open(path):
        line = line.rstrip("\n")
        match = _LOG_FILE.match(line)
        if match:
            status, current = match[1], match[2]
            counts[current] = (status, dict(kv.split("=") for kv in match[3].split() if "=" in kv))
            order.append(current)
            continue
        match = _LOG_ITEM.match(line)
        if match and current:
            named[current][match[2]] = (match[1], match[3])
    by_file = defaultdict(list)
    for file, name in t2t:
        if name is not None:
            by_file[file].append(name)
    out = {}
    for file in order:
        status, count = counts[file]
        if status == "collection error" or not count:
            out[(file, None)] = (status, "; ".join(m for _, m in named[file].values()) or status)
            continue
        # an id prints float8_e4m3 in one run and float8_e4m3fn in the other, either way round
        passes = [
            _as_tilelang_prints(n)
            for n in by_file.get(file, [])
            if not {n, _as_tilelang_prints(n), _alias(n)} & named[file].keys()
        ]
        if len(passes) != int(count.get("passed", 0)):
            print(
                f"  {file}: the log counts {count.get('passed', 0)} passes, tile2triton's run collected {len(passes)}"
            )
        for name in passes:
            out[(file, name)] = ("passed", "")
        for name, (outcome, msg) in named[file].items():
            out[(file, name)] = (outcome, msg)
    return out


def _as_tilelang_prints(name: str) -> str:
    """A tile2triton item name as TileLang's run prints it, where the ids differ (ID_ALIASES)."""
    for pattern, alias in ID_ALIASES:
        name = name.replace(alias, pattern.pattern.split("(")[0])
    return name


def _test_source(checkout: str | None, path: str, name: str, cache: dict) -> str:
    """The test function's source and the module-level functions it calls (three levels)."""
    if checkout is None:
        return ""
    if path not in cache:
        try:
            text = open(os.path.join(checkout, path)).read()
            tree = ast.parse(text)
            cache[path] = {
                n.name: ast.get_source_segment(text, n) or ""
                for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        except (OSError, SyntaxError):
            cache[path] = {}
    funcs = cache[path]
    todo, seen, body = [name.split("[")[0]], set(), ""
    for _ in range(3):
        nxt = []
        for n in todo:
            if n in seen or n not in funcs:
                continue
            seen.add(n)
            body += funcs[n] + "\n"
            nxt += [m for m in re.findall(r"\b([A-Za-z_]\w*)\(", funcs[n]) if m in funcs]
        todo = nxt
    return body


def exclusion(msg: str, source: str) -> str | None:
    """Issue 12's reason to exclude a failing item, or None."""
    if PACKAGES.search(msg):
        return "needs a package absent on the GPU machine"
    if NOT_RAISED.search(msg):  # before T2T_FAILURES: the expected class may be tile2triton.errors.TVMError
        return "expects TileLang to reject a program tile2triton compiles (TileLang's limit or check)"
    if COMPILING.search(msg):
        return None  # a kernel was being compiled or launched: tile2triton's failure, remaining
    if source and not BUILDS_KERNEL.search(source) and not RESULT_CHECKS.search(source):
        return "builds no kernel (TVM IR objects or an API called outside a kernel)"
    if T2T_FAILURES.search(msg):
        return None  # tile2triton's compile error, Triton's rejection, a failed launch: remaining
    if TEXT_FAILURES.search(msg):
        return "inspects TileLang's generated code"
    if COUNT_FAILURE.search(msg) and COUNTS_TEXT.search(source):
        return "inspects TileLang's generated code (counts strings in it)"
    if source and not RESULT_CHECKS.search(source):
        if TEXT_CALLS.search(source):
            return "inspects TileLang's generated code or TIR (no result check)"
        return "checks no kernel result (an API or front-end test)"
    return None


def _alias(name: str) -> str:
    for pattern, replacement in ID_ALIASES:
        name = pattern.sub(replacement, name)
    return name


def compare(native: dict, t2t: dict, checkout: str | None) -> tuple[dict, list, list]:
    per_file: dict = defaultdict(Counter)
    excluded, remaining, cache = [], [], {}
    for (path, name), (outcome, _) in sorted(native.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if name is None or outcome != "passed":
            continue
        per_file[path]["native"] += 1
        got, msg = t2t.get((path, name)) or t2t.get((path, _alias(name))) or t2t.get((path, None)) or ("not run", "")
        if got == "passed":
            per_file[path]["t2t"] += 1
            continue
        why = exclusion(msg, _test_source(checkout, path, name, cache))
        row = (path, name, got, " ".join(msg.split())[:160])
        if why:
            per_file[path]["excluded"] += 1
            excluded.append((*row, why))
        else:
            per_file[path]["remaining"] += 1
            per_file[path]["cuda_c"] += bool(CUDA_C.search(msg))
            per_file[path]["hardware"] += bool(HARDWARE.search(msg))
            remaining.append(row)
    return per_file, excluded, remaining


def per_folder(per_file: dict) -> dict:
    folders: dict = defaultdict(Counter)
    for path, c in per_file.items():
        folders[folder_of(path)].update(c)
    return folders


def markdown(per_file: dict, excluded: list, remaining: list) -> str:
    total = Counter()
    for c in per_file.values():
        total.update(c)
    lines = [
        f"Real TileLang passes {total['native']} items; tile2triton passes {total['t2t']} of them; "
        f"{total['excluded']} are excluded (reasons below); {total['remaining']} remain, "
        f"{total['cuda_c']} of them CUDA C (the accepted limit) and {total['hardware']} named refusals for a "
        "hardware reason (Blackwell-only constructs, Hopper's distributed shared memory).",
        "",
        "| folder | TileLang passes | tile2triton passes | excluded | remaining | of them CUDA C | of them hardware |",
        "|---|---|---|---|---|---|---|",
    ]
    for folder, c in sorted(per_folder(per_file).items()):
        lines.append(
            f"| `{folder}` | {c['native']} | {c['t2t']} | {c['excluded']} | {c['remaining']} | {c['cuda_c']} "
            f"| {c['hardware']} |"
        )
    lines += [
        "",
        "| file | TileLang passes | tile2triton passes | excluded | remaining |",
        "|---|---|---|---|---|",
    ]
    for path in sorted(per_file):
        c = per_file[path]
        if c["native"] == c["t2t"]:
            continue
        lines.append(f"| `{path}` | {c['native']} | {c['t2t']} | {c['excluded']} | {c['remaining']} |")
    lines.append("| all other files | | every item TileLang passes | | |")
    lines += ["", "### Excluded items", "", "| file | item | reason | tile2triton's message |", "|---|---|---|---|"]
    for path, name, _, msg, why in excluded:
        lines.append(f"| `{os.path.basename(path)}` | `{name}` | {why} | {msg.replace('|', '/')} |")
    lines += ["", "### Items that remain", "", "| file | item | outcome | message |", "|---|---|---|---|"]
    for path, name, got, msg in remaining:
        lines.append(f"| `{os.path.basename(path)}` | `{name}` | {got} | {msg.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("native")
    ap.add_argument("t2t")
    ap.add_argument("--checkout", help="the TileLang checkout the tests came from (reads the test sources)")
    ap.add_argument("--markdown", help="write the tables here")
    args = ap.parse_args()
    t2t = _items(args.t2t, "t2t")
    native = _items_from_log(args.native, t2t) if args.native.endswith(".log") else _items(args.native, "native")
    per_file, excluded, remaining = compare(native, t2t, args.checkout)
    total = Counter()
    for c in per_file.values():
        total.update(c)
    print(
        f"TileLang passes {total['native']}; tile2triton passes {total['t2t']} of them; "
        f"excluded {total['excluded']}; remaining {total['remaining']} ({total['cuda_c']} CUDA C, the accepted limit)"
    )
    for folder, c in sorted(per_folder(per_file).items()):
        print(f"  {folder:<34} TileLang {c['native']:4d}  tile2triton {c['t2t']:4d}  excluded {c['excluded']:4d}  "
              f"remaining {c['remaining']:4d}")  # fmt: skip
    causes = Counter(re.sub(r"\d+", "N", m)[:90] for _, _, _, m in remaining)
    for cause, n in causes.most_common(25):
        print(f"  {n:4d}  {cause}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(per_file, excluded, remaining))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
