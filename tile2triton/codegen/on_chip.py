"""The on-chip form of the scratch area (scratch.py; ``TILE2TRITON_ON_CHIP_SCRATCH``): on CUDA, the
shared buffers the register path cannot hold live in a static ``.shared`` array the kernel declares
in inline PTX, not in per-program global memory.

Triton's ``tl`` has no pointer into shared memory, but PTX lets a kernel declare an array there and
take its address (``declare``: once, in the prologue).  Each buffer is then a 32-bit shared address
(bytes), and its accesses are the module's helpers (``HELPERS``, joined to emit.JIT_HELPER_SOURCES):
``_shared_load`` / ``_shared_store`` of 16-, 32- and 64-bit elements and ``_shared_atomic_<op>_<type>``
(relaxed add, max, min, or, exchange of 32-bit values), each ``ld/st/atom.shared`` under the access's
mask.  The barriers are scratch.py's, as for global memory.

What the form does not serve restarts the kernel's lowering with the area in global memory
(``OffChip``, caught in emit.lower_kernel): 8-bit and packed dtypes, other atomics or memory orders,
an atomic whose lane tile has fewer elements than the launch has threads (Triton would give an
element to several threads, each performing the atomic), an area past ``LIMIT``, and any rule that
asks for a view's pointer (``PointerTable``).  The runtime lets such a kernel use its static array
beside Triton's own, dynamic, shared memory (runtime/static_shared.py).
"""

from __future__ import annotations

import ast

from .. import ir
from ..language.dtypes import DTYPES
from . import pyast as P
from .ptx import ptx_allowed
from .values import Lowerer, lanes_fill_threads, literal_value

ARRAY = "t2t_scratch"  # the static .shared array's name in the kernel's PTX
# the most bytes the array takes: CUDA limits a kernel's static shared memory to 48 KiB, of which
# ptxas reserves 1 KiB on sm_90 (a larger area stays in global memory); Triton's own, dynamic, shared
# memory comes beside it (runtime/static_shared.py)
LIMIT = 47 * 1024

# element width -> (PTX type suffix, inline-asm register constraint, Triton integer dtype of the bits)
_WIDTHS = {16: ("b16", "h", "int16"), 32: ("b32", "r", "int32"), 64: ("b64", "l", "int64")}

# T.atomic_<kind> on chip, relaxed (TileLang's default): PTX's atom.shared operation and type per
# (kind, dtype); the rest (16-bit and float min/max, 64-bit, T.atomic_load, stronger memory orders)
# keeps the area in global memory
_ATOMICS = {
    ("add", "int32"): ("add", "s32"), ("add", "uint32"): ("add", "u32"), ("add", "float32"): ("add", "f32"),
    ("max", "int32"): ("max", "s32"), ("max", "uint32"): ("max", "u32"),
    ("min", "int32"): ("min", "s32"), ("min", "uint32"): ("min", "u32"),
    ("or", "int32"): ("or", "b32"), ("or", "uint32"): ("or", "b32"),
    ("xchg", "int32"): ("exch", "b32"), ("xchg", "uint32"): ("exch", "b32"), ("xchg", "float32"): ("exch", "b32"),
}  # fmt: skip


class OffChip(Exception):
    """Lowering restarts with the kernel's scratch area in global memory: an access the on-chip form
    does not serve (emit.lower_kernel)."""


class PointerTable(dict):
    """``lw.pointers``: global buffer -> the name of its pointer.  A view of the on-chip area has a
    shared address, not a pointer: a lowering that asks for its pointer (a rule the on-chip form
    does not cover) restarts off chip, never emits a global access to a shared address."""

    def __init__(self):
        super().__init__()
        self.on_chip: dict = {}  # the on-chip views' addresses (scratch.ScratchState.addresses), once there is an area

    def __getitem__(self, buf):
        if buf in self.on_chip:
            raise OffChip(f"'{buf.name}' is reached through a pointer")
        return super().__getitem__(buf)


def wanted(options, kernel: ir.Kernel) -> bool:
    """The on-chip form where inline PTX compiles (CUDA targets), as ``on_chip_scratch`` says, before
    lowering: ``"on"``, or (``"atomics"``, ``"loops"``) a kernel with atomics on shared buffers
    (histograms, slot claims: each an L2 round trip in global memory), where the H200 measured it
    2-3x faster.  ``"loops"`` (the default) also takes it after lowering (``wanted_after``)."""
    if options.on_chip_scratch == "off" or not ptx_allowed(options):
        return False
    return options.on_chip_scratch == "on" or any(
        isinstance(s, ir.Atomic) and s.dst.buffer.scope == ir.SHARED for s in ir.walk(kernel.body)
    )


def wanted_after(options, scratch) -> bool:
    """``"loops"``: a kernel lowered with its area in global memory is lowered again on chip where it
    loads or stores the area's elements at computed positions inside a loop it emits
    (``ScratchState.loop_gathers``): a bitonic sort's compare-and-swap rounds, each a gather and a
    scatter, ran 5.18 -> 4.20 ms on chip.  Whole tiles and rows (a tile staged through a permuted
    buffer, a butterfly's row exchange, a gemm operand) keep global memory, whose accesses are
    vectorized: on chip they ran slower, one inline-PTX access an element."""
    if options.on_chip_scratch != "loops" or not ptx_allowed(options) or scratch.on_chip:
        return False
    return scratch.loop_gathers and scratch.bytes <= LIMIT  # a larger area stays in global memory


def _address(lw: Lowerer, view: ir.Buffer, offs: ast.expr | None) -> ast.expr:
    """The shared address (bytes) of ``view``'s elements at element offsets ``offs`` (None: its first)."""
    base = P.name(lw.scratch.addresses[view])
    if offs is None or isinstance(offs, ast.Constant) and offs.value == 0:
        return base
    return P.binop("+", base, P.binop("*", offs, P.const(view.dtype.bits // 8)))


def _active(mask: ast.expr | None) -> ast.expr:
    return P.const(True) if mask is None else mask


def load(lw: Lowerer, view: ir.Buffer, offs: ast.expr | None, mask: ast.expr | None) -> ast.expr:
    """``ld.shared`` of ``view``'s elements at ``offs`` where ``mask`` holds (0 elsewhere)."""
    bits = view.dtype.bits
    lw.helpers.add("_shared_load")
    node = P.call("_shared_load", _address(lw, view, offs), _active(mask), P.const(bits))
    return _from_bits(node, view.dtype)


def store(lw: Lowerer, view: ir.Buffer, offs: ast.expr | None, mask: ast.expr | None, value: ast.expr) -> None:
    """``st.shared`` of ``value`` (``view``'s dtype) at ``offs`` where ``mask`` holds.  An element
    that Triton's layout gives several threads is stored by each, the same value."""
    bits = view.dtype.bits
    lw.helpers.add("_shared_store")
    node = P.call("_shared_store", _address(lw, view, offs), _to_bits(value, view.dtype), _active(mask), P.const(bits))
    lw.emit(P.expr_stmt(node))


def atomic(lw: Lowerer, s: ir.Atomic, view: ir.Buffer, offs: ast.expr, mask: ast.expr | None, value) -> ast.expr:
    """``atom.shared`` of ``value`` (a Tile of ``view``'s dtype) at ``offs`` where ``mask`` holds;
    its previous value.  Each element must run on one thread: the operand is spread over the whole
    lane space (the caller), which a launch of at most as many threads as lanes holds without
    replicating an element (Triton's layouts spread a tile of at least one element a thread)."""
    op = _ATOMICS.get((s.kind, view.dtype.name))
    if op is None or value is None or s.order not in (None, "relaxed"):
        raise OffChip(f"T.atomic_{s.kind} of {view.dtype.name}, {s.order}")
    if not lanes_fill_threads(lw):
        raise OffChip(f"T.atomic_{s.kind} of fewer elements than threads")
    kind, ptx_type = op
    helper = f"_shared_atomic_{kind}_{ptx_type}"
    lw.helpers.add(helper)
    if ptx_type == "f32":  # a float32 operand and result
        return P.call(helper, _address(lw, view, offs), value.node, _active(mask))
    call = P.call(helper, _address(lw, view, offs), _to_bits(value.node, view.dtype), _active(mask))
    return _from_bits(call, view.dtype)


def _to_bits(node: ast.expr, dt) -> ast.expr:
    """``node`` of ``dt`` as the signed integer of its width (what the inline PTX moves)."""
    bits_dtype = DTYPES[_WIDTHS[dt.bits][2]]
    if dt == bits_dtype:
        return node
    if literal_value(node) is not None:  # a Python number (``-1.25`` too): a value of dt first
        node = P.call("tl.full", P.list_([]), node, P.dtype(dt))
    return P.call(P.attr(node, "to"), P.dtype(bits_dtype), bitcast=True)


def _from_bits(node: ast.expr, dt) -> ast.expr:
    bits_dtype = DTYPES[_WIDTHS[dt.bits][2]]
    return node if dt == bits_dtype else P.call(P.attr(node, "to"), P.dtype(dt), bitcast=True)


def _helpers() -> dict:
    """The @triton.jit helpers of the on-chip form (they join emit.JIT_HELPER_SOURCES)."""
    out = {}
    lines = []
    for bits, (suffix, reg, dtype) in _WIDTHS.items():
        branch = "if" if not lines else "elif"
        lines.append(f"""    {branch} bits == {bits}:
        return tl.inline_asm_elementwise(
            "{{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.{suffix} $0, 0; @p ld.shared.{suffix} $0, [$1]; }}",
            "={reg},r,r", [address, on], dtype=tl.{dtype}, is_pure=False, pack=1)""")
    out["_shared_load"] = (
        "\n@triton.jit\ndef _shared_load(address, mask, bits: tl.constexpr):\n"
        "    # per element: the value at a shared address where mask holds, 0 elsewhere (codegen/on_chip.py)\n"
        "    on = tl.where(mask, 1, 0)\n" + "\n".join(lines) + "\n"
    )
    lines = []
    for bits, (suffix, reg, _) in _WIDTHS.items():
        branch = "if" if not lines else "elif"
        lines.append(f"""    {branch} bits == {bits}:
        tl.inline_asm_elementwise(
            "{{ .reg .pred p; setp.ne.b32 p, $3, 0; @p st.shared.{suffix} [$1], $2; mov.b32 $0, 0; }}",
            "=r,r,{reg},r", [address, value, on], dtype=tl.int32, is_pure=False, pack=1)""")
    out["_shared_store"] = (
        "\n@triton.jit\ndef _shared_store(address, value, mask, bits: tl.constexpr):\n"
        "    # per element: value to a shared address where mask holds (codegen/on_chip.py)\n"
        "    on = tl.where(mask, 1, 0)\n" + "\n".join(lines) + "\n"
    )
    for kind, ptx_type in sorted(set(_ATOMICS.values())):
        reg, dtype = ("f", "float32") if ptx_type == "f32" else ("r", "int32")
        zero = "0f00000000" if ptx_type == "f32" else "0"
        name = f"_shared_atomic_{kind}_{ptx_type}"
        out[name] = f"""
@triton.jit
def {name}(address, value, mask):
    # per element: atom.shared.{kind}.{ptx_type} where mask holds, the previous value (codegen/on_chip.py)
    return tl.inline_asm_elementwise(
        "{{ .reg .pred p; setp.ne.b32 p, $3, 0; mov.b32 $0, {zero}; @p atom.shared.{kind}.{ptx_type} $0, [$1], $2; }}",
        "={reg},r,{reg},r", [address, value, tl.where(mask, 1, 0)], dtype=tl.{dtype}, is_pure=False, pack=1)
"""
    return out


HELPERS = _helpers()


def serves(dt) -> bool:
    """Can the on-chip form hold a buffer of ``dt`` (16-, 32- or 64-bit elements)?"""
    return dt.bits in _WIDTHS


def declare(size: int) -> ast.expr:
    """The static array of ``size`` bytes, declared in inline PTX; its shared address."""
    if size > LIMIT:
        raise OffChip(f"{size} bytes of shared buffers")
    ptx = f".shared .align 16 .b8 {ARRAY}[{size}];\n\tmov.u32 $0, {ARRAY};"
    return P.call(
        "tl.inline_asm_elementwise", P.const(ptx), P.const("=r,r"), P.list_([P.call("tl.program_id", 0)]),
        dtype=P.dtype(DTYPES["int32"]), is_pure=P.const(True), pack=P.const(1),
    )  # fmt: skip
