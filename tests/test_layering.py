"""The import rules docs/architecture.md states, enforced: each pipeline stage imports only its own
stage and the stages below it (function-level imports included), no stage imports a surface, a
TileLang-mirror shim or the oracle, and no module of the package is over 1,000 lines."""

import ast
import pathlib

import tile2triton

ROOT = pathlib.Path(tile2triton.__file__).parent

# the pipeline, lowest first: a module may import its own stage and those before it
STAGES = [
    ("settings", "math"),
    ("errors", "config"),
    ("layout",),
    ("language",),
    ("ir",),
    ("compat", "hints"),  # TileLang's names: the catalog the binder's messages use
    ("frontend",),  # parse + bind
    ("passes",),  # facts about the IR, and the grid split
    ("codegen",),  # lower + emit
    ("runtime",),
]
# everything else is a surface (the public API: jit, compiler, cli, ...), a TileLang-mirror shim
# (tvm, cuda, carver, ...) or the oracle (tests and tools only); no stage imports one of them
STAGE_OF = {name: rank for rank, names in enumerate(STAGES) for name in names}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path):
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "tile2triton":  # from tile2triton import x / from .. import x: the names are modules
                yield from (f"tile2triton.{a.name}" for a in node.names)
            elif target.startswith("tile2triton."):
                yield target
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("tile2triton"))


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_stages_import_only_themselves_and_below():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        here = _top(_module_name(path))
        if here not in STAGE_OF:
            continue
        for target in _imports(path):
            there = _top(target)
            if STAGE_OF.get(there, len(STAGES)) > STAGE_OF[here]:
                wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert wrong == []


def test_the_oracle_is_imported_by_no_stage_or_surface():
    wrong = [
        f"{path.relative_to(ROOT)} imports {target}"
        for path in sorted(ROOT.rglob("*.py"))
        if _top(_module_name(path)) != "oracle"
        for target in _imports(path)
        if _top(target) == "oracle"
    ]
    assert wrong == []


def test_no_module_or_stub_is_over_1000_lines():
    files = [*ROOT.rglob("*.py"), *ROOT.rglob("*.pyi")]
    long = [str(p.relative_to(ROOT)) for p in files if len(p.read_text().splitlines()) > 1000]
    assert long == []


def test_the_rule_sees_a_violation(tmp_path):
    """The walker reads function-level and relative imports (a check that could not fail is none)."""
    module = tmp_path / "tile2triton" / "ir" / "bad.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from ..runtime import kernel\n    from .. import codegen\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path / "tile2triton"
    try:
        assert sorted(_imports(module)) == ["tile2triton.codegen", "tile2triton.runtime"]
    finally:
        ROOT = saved


def test_the_hooks_lower_stages_declare_are_filled_in_one_place():
    """tile2triton/wiring.py fills every hook; no other module assigns one."""
    from tile2triton import compiler, profiler
    from tile2triton.frontend.source import KernelSource
    from tile2triton.runtime.kernel import JITKernel

    assert KernelSource.binder is compiler.bind_kernel_source
    assert JITKernel.bind_prim_func is compiler.compile_prim_func
    assert JITKernel.profiler_class is profiler.Profiler
    hooks = ("KernelSource.binder =", "JITKernel.bind_prim_func =", "JITKernel.profiler_class =")
    assigning = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if any(h in p.read_text() for h in hooks))
    assert assigning == ["wiring.py"]


def test_the_alias_resolves_the_mirror_and_refuses_the_compiler():
    """Under ``import tilelang`` resolved to tile2triton, TileLang's module names resolve and the
    compiler's own packages are refused with a message (docs/architecture.md, "Which folder is which")."""
    import importlib
    import subprocess
    import sys

    from tile2triton import cli

    script = (
        "from tile2triton.cli import install_tilelang_alias; install_tilelang_alias()\n"
        "import importlib\n"
        "for name in ('tilelang.language', 'tilelang.jit', 'tilelang.profiler', 'tilelang.carver', 'tilelang.layout'):\n"
        "    importlib.import_module(name)\n"
        f"for name in {cli.COMPILER_MODULES!r}:\n"
        "    try:\n"
        "        importlib.import_module('tilelang.' + name)\n"
        "    except ModuleNotFoundError as e:\n"
        '        assert "tile2triton\'s compiler" in str(e), e\n'
        "    else:\n"
        "        raise AssertionError(name)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().endswith("ok"), out.stdout + out.stderr
    for name in cli.COMPILER_MODULES:  # each names a real module of the package
        importlib.util.find_spec(f"tile2triton.{name}")
