"""Gluon-routed modules carry a line map (codegen/gluon_routes.line_map), so an error Triton raises
on their code is reported at the TileLang line, as for the tl lowering (runtime/diagnostics.py)."""

import re

import pytest
from t2t_util import compile_gluon_for_hopper
from test_gluon_attention import HAS_GLUON, _gluon_module, attention

from tile2triton.errors import GeneratedCodeError
from tile2triton.runtime import diagnostics


def _statement_after(source: str, construct: str) -> tuple[int, int]:
    """(line of the origin comment naming ``construct``, line of the first statement under it)."""
    lines = source.split("\n")
    for k, text in enumerate(lines):
        if text.lstrip().startswith("#") and construct in text:
            return k + 1, k + 2
    raise AssertionError(f"no origin comment names {construct}")


def test_gluon_module_maps_generated_lines_to_tilelang_lines():
    module = _gluon_module(attention(2, 3, 333, 128, False, "bshd"))
    assert module.line_map
    comment, statement = _statement_after(module.source, "T.reduce_max")
    loc = diagnostics.origin_of(module.line_map, statement)
    tilelang_line = int(re.search(r":(\d+): ", module.source.split("\n")[comment - 1]).group(1))
    assert loc.line == tilelang_line and loc.file.endswith("test_gluon_attention.py")


@pytest.mark.skipif(not HAS_GLUON, reason="this Triton has no Gluon")
def test_triton_error_in_a_gluon_kernel_is_reported_at_the_tilelang_line(tmp_path):
    module = _gluon_module(attention(2, 3, 333, 128, False, "bshd"))
    comment, statement = _statement_after(module.source, "T.reduce_max")
    lines = module.source.split("\n")
    indent = re.match(r"\s*", lines[statement - 1]).group(0)
    lines[statement - 1] = f"{indent}gl.no_such_function(0)  # a line Triton rejects"
    module.source = "\n".join(lines)
    with pytest.raises(Exception) as raised:
        compile_gluon_for_hopper(module, tmp_path, "*fp16", {"Bias": "*fp32"})
    mapped = diagnostics.translate(raised.value, module, str(tmp_path / f"generated_gluon_{tmp_path.name}.py"))
    assert isinstance(mapped, GeneratedCodeError)
    tilelang_line = int(re.search(r":(\d+): ", lines[comment - 1]).group(1))
    assert mapped.loc.line == tilelang_line
