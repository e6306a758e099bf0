"""Binding rules: one per ``T.*`` primitive, in ``RULES`` (tag -> rule).

A rule is called as ``rule(binder, node, args)`` with the call's ``ast.Call`` node and its
arguments bound to the primitive's signature (``language/__init__.py``); it emits statements
through the binder and returns the call's value.  The binder is handed in: this module never
imports ``bind.py`` (which imports this one), and ``BinderLike`` names what a rule may use.
"""

from __future__ import annotations

import ast
import functools
import inspect
import operator
import weakref
from typing import Protocol

from .. import ir
from ..errors import CheckFailedError, InvalidArgumentError, TileLangCompileError
from ..ir import BOOL, FLOAT32, INT32
from ..ir.exprs import as_expr, binary_dtype, const_int, ir_key, is_python_value, is_weak, static
from ..language.dtypes import DTYPES, DType, TypedLiteral, lookup_dtype
from ..language.proxy import TensorType
from ..layout import MetadataLayout
from . import packed, vectors
from .regions import extent_of, legalize_pairwise_extents, to_region, whole
from .source import KernelSource

UNARY_MATH = {
    "exp", "exp2", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "sin", "cos",
    "tan", "erf", "floor", "ceil", "round", "nearbyint", "trunc", "isnan", "isinf", "isfinite",
    "__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan",
}  # fmt: skip
_PREDICATES = {"isnan", "isinf", "isfinite"}
_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


class BinderLike(Protocol):
    """What a binding rule uses of the binder (``bind.Binder``; ``eager_bind.EagerBinder``)."""

    kernel: ir.Kernel | None  # the T.Kernel being bound, None outside one
    func_attrs: dict  # PrimFunc.attrs being collected
    eager: bool  # an eager-style kernel (T.const / T.empty are allowed)
    reducers: dict  # T.alloc_reducer buffer -> its op (sum, max, min)
    outer_tensors: list  # T.make_tensor buffers made before the T.Kernel blocks (made again in each)
    params: list  # the kernel's parameters (Buffer / Var), in order

    def loc(self, node: ast.AST) -> ir.Loc: ...
    def expr(self, node: ast.AST): ...
    def error(self, message: str, node: ast.AST, hint: str | None = None) -> TileLangCompileError: ...
    def emit(self, stmt: ir.Stmt) -> None: ...
    def fresh_name(self, name: str) -> str: ...
    def bind_name(self, name: str, value) -> None: ...
    def dtype_arg(self, value, node: ast.AST) -> DType: ...
    def binop(self, op: str, pyop, a, b, node: ast.AST): ...
    def select(self, cond, a, b) -> ir.Select: ...
    def global_buffer(self, name: str, ttype: TensorType, loc: ir.Loc) -> ir.Buffer: ...
    def declare_const(self, names, dtype, node: ast.AST): ...  # eager binders only
    def barrier_event(self, kind: str, ref, parity, node: ast.AST, name: str) -> None: ...
    def check_reducer_update(self, buffer: ir.Buffer, node: ast.AST) -> None: ...
    def loop_exit(self, node_type, node: ast.AST) -> None: ...


RULES: dict = {}


def rule(*names):
    """Register ``fn(b, node, args)`` for primitives ``names``; a rule serving several names takes a
    fourth parameter, ``name``: the primitive called (not the call's spelling: ``op = T.cumsum; op(x)``)."""

    def register(fn):
        takes_name = "name" in inspect.signature(fn).parameters
        for n in names:
            RULES[n] = functools.partial(fn, name=n) if takes_name else fn
        return fn

    return register


def _operand(b: BinderLike, value, node, what: str):
    if isinstance(value, (ir.Buffer, ir.Region, ir.Load)):
        return value
    raise b.error(f"{what} must be a buffer, a buffer region or a buffer element, got {value!r}", node)


@rule("copy")
def bind_copy(b: BinderLike, node, args):
    src = _operand(b, args["src"], node, "T.copy source")
    dst = _operand(b, args["dst"], node, "T.copy destination")
    src_ext, dst_ext = extent_of(src), extent_of(dst)
    if src_ext is None and dst_ext is None:
        b.emit(ir.Store(b.loc(node), dst.buffer, dst.indices, ir.Cast(src, dst.buffer.dtype)))
        return None
    if isinstance(src, ir.Buffer) and isinstance(dst, ir.Buffer) and tuple(src.shape) != tuple(dst.shape):
        raise b.error(f"T.copy between whole buffers needs equal shapes: {src.shape} vs {dst.shape}", node)
    src_ext = src_ext if src_ext is not None else [1] * len(dst_ext)
    dst_ext = dst_ext if dst_ext is not None else [1] * len(src_ext)
    src_ext, dst_ext = legalize_pairwise_extents(src_ext, dst_ext)
    b.emit(ir.Copy(b.loc(node), to_region(src, src_ext), to_region(dst, dst_ext)))
    return None


def _fill_region(b: BinderLike, target, node) -> ir.Region:
    if isinstance(target, ir.Buffer):
        return whole(target)
    if isinstance(target, ir.Region):
        return target
    if isinstance(target, ir.Load):
        return to_region(target, [1] * target.buffer.ndim)
    raise b.error("T.fill / T.clear take a buffer or a region", node)


@rule("fill")
def bind_fill(b: BinderLike, node, args):
    region = _fill_region(b, args["buffer"], node)
    b.emit(ir.Fill(b.loc(node), region, as_expr(args["value"], b.loc(node))))


@rule("clear")
def bind_clear(b: BinderLike, node, args):
    region = _fill_region(b, args["buffer"], node)
    b.emit(ir.Fill(b.loc(node), region, const_int(0)))


def _gemm_operand(b: BinderLike, value, node, what) -> ir.Region:
    if isinstance(value, ir.Buffer):
        return whole(value)
    if isinstance(value, ir.Region):
        return value
    raise b.error(f"T.gemm operand {what} must be a shared or fragment buffer (or a region of one)", node)


def _staged(b: BinderLike, region: ir.Region, node, read: bool = True) -> tuple[ir.Region, list]:
    """A tile op's operand that is a sub-region of a shared/fragment buffer (``A_s[:, k0:k1]``,
    ``A_s[b, :, :]``): staged through a register tile of the region's shape, copied in (``read``)
    and, by the statements returned, copied back after the op writes it."""
    buf = region.buffer
    if region.is_whole() or buf.scope not in (ir.SHARED, ir.FRAGMENT):
        return region, []
    if not all(isinstance(e, int) for e in region.extents):
        raise b.error(f"a sub-region of '{buf.name}' used by a tile operation needs static extents", node)
    loc = b.loc(node)
    part = ir.Buffer(b.fresh_name(f"{buf.name}_part"), ir.FRAGMENT, tuple(region.extents), buf.dtype, loc)
    b.emit(ir.Alloc(loc, part))
    if read:
        b.emit(ir.Copy(loc, region, whole(part)))
    return whole(part), [ir.Copy(loc, whole(part), region)]


@rule("gemm", "wgmma_gemm")
def bind_gemm(b: BinderLike, node, args):
    a, _ = _staged(b, _gemm_operand(b, args["A"], node, "A"), node)
    bb, _ = _staged(b, _gemm_operand(b, args["B"], node, "B"), node)
    c, write_back = _staged(b, _gemm_operand(b, args["C"], node, "C"), node)
    ta, tb = args["transpose_A"], args["transpose_B"]
    if not isinstance(ta, bool) or not isinstance(tb, bool):
        raise b.error("transpose_A / transpose_B must be compile-time bools", node)
    b.emit(ir.Gemm(b.loc(node), a, bb, c, ta, tb, as_expr(args["clear_accum"])))
    for stmt in write_back:
        b.emit(stmt)


# 2:4 structured sparsity (tile2triton/cuda/intrinsics/sparse_layout.py has the format):
# A's dtype width -> (values kept per group, group size along K).
_SPARSE_GROUPS = {8: (2, 4), 16: (2, 4), 32: (1, 2)}


@rule("gemm_sp")
def bind_gemm_sp(b: BinderLike, node, args):
    """``T.gemm_sp(A_sparse, E, B, C)``: C (+)= decompress(A_sparse, E) @ op(B).  Bound as what it
    means: a T.Parallel rebuilds the dense A tile from the kept values and their 4-bit position codes
    in E, then a dense T.gemm multiplies it (the same sums the sparse tensor-core MMA computes)."""
    a_sp, _ = _staged(b, _gemm_operand(b, args["A_sparse"], node, "A_sparse"), node)
    meta, _ = _staged(b, _gemm_operand(b, args["E"], node, "E"), node)
    ta, te, tb = args["transpose_A"], args["transpose_E"], args["transpose_B"]
    if not all(isinstance(t, bool) for t in (ta, te, tb)):
        raise b.error("transpose_A / transpose_E / transpose_B must be compile-time bools", node)
    for region, what in ((a_sp, "A_sparse"), (meta, "E")):
        if region.buffer.scope not in (ir.SHARED, ir.FRAGMENT) or region.buffer.ndim != 2:
            raise b.error(f"T.gemm_sp operand {what} must be a 2-D shared or fragment buffer", node)
    a_dtype, e_dtype = a_sp.buffer.dtype, meta.buffer.dtype
    if a_dtype.bits not in _SPARSE_GROUPS or not a_dtype.supported:
        raise b.error(f"T.gemm_sp: 2:4 sparsity is defined for 8-, 16- and 32-bit A, not {a_dtype}", node)
    if not e_dtype.is_int or e_dtype.bits not in (8, 16, 32):
        raise b.error(f"T.gemm_sp: the metadata E must be int8/16/32 (or unsigned), not {e_dtype}", node)
    elem, group = _SPARSE_GROUPS[a_dtype.bits]
    codes_per_meta = e_dtype.bits // 4  # one 4-bit position code per group
    e_factor = codes_per_meta * group  # dense K columns described by one metadata element
    a_rows, a_cols = a_sp.buffer.shape
    block_m, half_k = (a_cols, a_rows) if ta else (a_rows, a_cols)
    block_k = half_k * group // elem
    e_rows, e_cols = meta.buffer.shape
    e_m, e_k = (e_cols, e_rows) if te else (e_rows, e_cols)
    if (e_m, e_k * e_factor) != (block_m, block_k):
        want = (block_k // e_factor, block_m) if te else (block_m, block_k // e_factor)
        raise b.error(
            f"T.gemm_sp: E has shape {tuple(meta.buffer.shape)}, but an A_sparse tile of {tuple(a_sp.buffer.shape)} "
            f"({a_dtype}, {e_dtype} metadata: {e_factor} columns of K per element) needs {want}",
            node,
        )
    loc = b.loc(node)
    dense = ir.Buffer(b.fresh_name(f"{a_sp.buffer.name}_dense"), ir.FRAGMENT, (block_m, block_k), a_dtype, loc)
    b.emit(ir.Alloc(loc, dense))
    i, k = ir.Var("i", INT32, "lane"), ir.Var("k", INT32, "lane")

    def arith(op, x, y):
        return ir.BinOp(op, as_expr(x), as_expr(y), INT32)

    grp = arith("//", ir.VarRef(k), group)
    meta_col = arith("//", grp, codes_per_meta)
    word = ir.Cast(ir.Load(meta.buffer, (meta_col, ir.VarRef(i)) if te else (ir.VarRef(i), meta_col)), INT32)
    code = ir.Var("code", INT32, "let")  # the group's 4-bit position code
    body = [ir.Let(loc, code, arith("&", arith(">>", word, arith("*", arith("%", grp, codes_per_meta), 4)), 15))]
    position = arith("%", ir.VarRef(k), group)
    value = as_expr(0)
    for j in reversed(range(elem)):  # kept value j: its position is code bits [2j+1:2j]
        kept = arith("+", arith("*", grp, elem), j) if elem > 1 else grp
        load = ir.Load(a_sp.buffer, (kept, ir.VarRef(i)) if ta else (ir.VarRef(i), kept))
        slot = arith("&", arith(">>", ir.VarRef(code), 2 * j) if j else ir.VarRef(code), 3)
        if group == 2:  # 32-bit values: positions count 16-bit halves (half 2 is element 1)
            slot = arith(">>", slot, 1)
        value = b.select(ir.Compare("==", slot, position, BOOL), load, value)
    body.append(ir.Store(loc, dense, (ir.VarRef(i), ir.VarRef(k)), ir.Cast(as_expr(value), a_dtype)))
    b.emit(ir.Parallel(loc, [i, k], [block_m, block_k], body))
    bind_gemm(b, node, {**args, "A": dense, "transpose_A": False})


def _bind_reduce(b: BinderLike, node, kind, args, clear):
    src, dst = args["buffer"], args["out"]
    src = src if isinstance(src, ir.Region) else whole(src) if isinstance(src, ir.Buffer) else None
    dst = dst if isinstance(dst, ir.Region) else whole(dst) if isinstance(dst, ir.Buffer) else None
    if src is None or dst is None:
        raise b.error("T.reduce_* take a source buffer and an output buffer", node)
    dim = args["dim"]
    ndim = len(src.extents)
    if not isinstance(dim, int) or not -ndim <= dim < ndim:
        raise b.error(f"reduction dim {dim!r} is out of range for a {ndim}-D buffer", node)
    if not isinstance(clear, bool):
        raise b.error("clear must be a compile-time bool", node)
    src, _ = _staged(b, src, node)
    dst, write_back = _staged(b, dst, node, read=not clear)
    nan_propagate = args.get("nan_propagate", False)
    if not isinstance(nan_propagate, bool):
        raise b.error("nan_propagate must be a compile-time bool", node)
    b.emit(ir.Reduce(b.loc(node), kind, src, dst, dim % ndim, clear, nan_propagate))
    for stmt in write_back:
        b.emit(stmt)


def _reduce_rule(kind):
    def bind(b, node, args):
        _bind_reduce(b, node, kind, args, args.get("clear", True))

    return bind


for _kind in ("sum", "max", "min", "absmax", "abssum"):
    RULES["reduce_" + _kind] = _reduce_rule(_kind)


@rule("reduce")
def bind_reduce(b: BinderLike, node, args):
    _bind_reduce(b, node, args["reduce_type"], args, args["clear"])


@rule("cumsum", "cummax")
def bind_scan(b: BinderLike, node, args, name):
    src = _fill_region(b, args["src"], node)
    dst = src if args["dst"] is None else _fill_region(b, args["dst"], node)
    dim = args["dim"] % len(src.extents)
    op = "max" if name == "cummax" else "sum"
    in_place = dst is src
    src, write_back = _staged(b, src, node)
    if in_place:
        dst = src
    else:
        dst, write_back = _staged(b, dst, node, read=False)
    b.emit(ir.Scan(b.loc(node), src, dst, dim, bool(args["reverse"]), op))
    for stmt in write_back:
        b.emit(stmt)


@rule("im2col")
def bind_im2col(b: BinderLike, node, args):
    """TileLang's im2col (NHWC image, square kernel), bound as the T.Parallel it means: tile element
    (i, j) is ``img[n, h, w, c]`` of output pixel ``m = nhw_step * block_m + i`` and patch column
    ``k = c_step * block_k + j``, or 0 in the padding."""
    img, col = args["img"], _fill_region(b, args["col"], node)
    if not isinstance(img, ir.Buffer) or img.ndim != 4:
        raise b.error("T.im2col takes an NHWC image tensor (4-D)", node)
    if not col.is_whole() or col.buffer.ndim != 2:
        raise b.error("T.im2col writes a whole 2-D tile", node)
    K, s, d, p = (args[k] for k in ("kernel", "stride", "dilation", "pad"))
    if not all(isinstance(v, int) for v in (K, s, d, p)):
        raise b.error("T.im2col's kernel, stride, dilation and pad must be compile-time ints", node)
    _, H, W, C = img.shape
    block_m, block_k = col.buffer.shape

    def op(o, x, y):
        return b.binop(o, _ARITH[o], x, y, node)

    OH = op("+", op("//", op("-", op("-", op("+", H, 2 * p), (K - 1) * d), 1), s), 1)
    OW = op("+", op("//", op("-", op("-", op("+", W, 2 * p), (K - 1) * d), 1), s), 1)
    i, j = ir.Var("i", INT32, "lane"), ir.Var("j", INT32, "lane")
    m = op("+", op("*", args["nhw_step"], block_m), ir.VarRef(i))
    k = op("+", op("*", args["c_step"], block_k), ir.VarRef(j))
    n, oh, ow = op("//", m, op("*", OH, OW)), op("//", op("%", m, op("*", OH, OW)), OW), op("%", m, OW)
    kh, kw, c = op("//", k, K * C), op("%", op("//", k, C), K), op("%", k, C)
    h = op("-", op("+", op("*", oh, s), op("*", kh, d)), p)
    w = op("-", op("+", op("*", ow, s), op("*", kw, d)), p)
    inside = [ir.Compare(cmp, as_expr(x), as_expr(lim), BOOL) for x in (h, w) for cmp, lim in ((">=", 0),)]
    inside += [ir.Compare("<", as_expr(h), as_expr(H), BOOL), ir.Compare("<", as_expr(w), as_expr(W), BOOL)]
    cond = inside[0]
    for part in inside[1:]:
        cond = ir.BinOp("and", cond, part, BOOL)
    value = b.select(cond, ir.Load(img, tuple(as_expr(x) for x in (n, h, w, c))), 0)
    store = ir.Store(b.loc(node), col.buffer, (ir.VarRef(i), ir.VarRef(j)), value)
    b.emit(ir.Parallel(b.loc(node), [i, j], [block_m, block_k], [store]))


@rule("reshape")
def bind_reshape(b: BinderLike, node, args):
    src, shape = args["src"], args["shape"]
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if isinstance(src, ir.Buffer) and src.scope in (ir.SHARED, ir.FRAGMENT):
        count = 1
        for d in src.shape:
            count *= d
        new = 1
        for d in shape:
            new *= d if isinstance(d, int) else 0
        if new != count:
            raise b.error(f"T.reshape of '{src.name}' {tuple(src.shape)} to {shape} changes its size", node)
        view = ir.Buffer(b.fresh_name(f"{src.name}_view"), src.scope, shape, src.dtype, b.loc(node))
        view.alias_of = src
        b.emit(ir.Alloc(b.loc(node), view))
        return view
    if not isinstance(src, ir.Buffer) or src.scope != ir.GLOBAL:
        raise b.error("T.reshape takes a global tensor or a shared/fragment buffer", node)
    if all(isinstance(d, int) for d in (*src.shape, *shape)) and _product(src.shape) != _product(shape):
        # the view would reach past the tensor's storage
        raise b.error(f"T.reshape of '{src.name}' {tuple(src.shape)} to {shape} changes its size", node)
    view = b.global_buffer(
        b.fresh_name(f"{src.name}_view"),
        TensorType(tuple(shape) if isinstance(shape, (list, tuple)) else (shape,), src.dtype),
        b.loc(node),
    )
    view.alias_of = src
    return view


@rule("view")
def bind_view(b: BinderLike, node, args):
    """``T.view(src, shape, dtype)``: ``src``'s memory seen with another shape and/or dtype of the same
    total bits (a reshape, or a bit reinterpretation of the same bytes)."""
    src = args["src"]
    if not isinstance(src, ir.Buffer):
        raise b.error("T.view takes a global tensor or a shared/fragment buffer", node)
    shape = args["shape"] if args["shape"] is not None else src.shape
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    dtype = b.dtype_arg(args["dtype"], node) if args["dtype"] is not None else src.dtype
    if dtype.bits < 8 or src.dtype.bits < 8:
        raise b.error(f"T.view between {src.dtype.name} and {dtype.name}: sub-byte dtypes are not supported", node)
    if all(isinstance(d, int) for d in (*src.shape, *shape)):
        if _product(src.shape) * src.dtype.bits != _product(shape) * dtype.bits:
            raise b.error(
                f"T.view of '{src.name}' {tuple(src.shape)} {src.dtype.name} as {shape} {dtype.name} "
                "changes its size in bits",
                node,
            )
    if src.scope in (ir.SHARED, ir.FRAGMENT):
        if not all(isinstance(d, int) for d in shape):
            raise b.error("T.view of a shared/fragment buffer needs a constant shape", node)
        view = ir.Buffer(b.fresh_name(f"{src.name}_view"), src.scope, shape, dtype, b.loc(node))
        view.alias_of = src
        b.emit(ir.Alloc(b.loc(node), view))
        return view
    if src.scope != ir.GLOBAL:
        raise b.error("T.view takes a global tensor or a shared/fragment buffer", node)
    view = b.global_buffer(b.fresh_name(f"{src.name}_view"), TensorType(shape, dtype), b.loc(node))
    view.alias_of = src
    return view


# T.rng_*: one Philox stream per T.rng_init (Triton's tl.randint/rand/randn), keyed by the seed and the
# sequence number; the counter starts at the offset and every draw takes the next block of RNG_BLOCK
# counters (one per T.Parallel element), so draws differ across statements, loop iterations and elements.
# The values are not curand's: programs may rely on determinism and distribution, not on exact values.
_RNG_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # kernel -> (key var, counter var)
_RNG_GENERATORS = ("curandStateMRG32k3a_t", "curandStatePhilox4_32_10_t", "curandStateXORWOW_t")


@rule("rng_init")
def bind_rng_init(b: BinderLike, node, args):
    if b.kernel is None:
        raise b.error("T.rng_init must stand inside a T.Kernel", node)
    if args["generator"] not in _RNG_GENERATORS:
        raise b.error(
            f"T.rng_init: unknown generator {args['generator']!r} (one of {', '.join(_RNG_GENERATORS)})", node
        )
    if args["seq"] is None:
        raise b.error("T.rng_init without a sequence number: pass seq (e.g. the block or thread index)", node)
    int64 = DTYPES["int64"]
    seed, seq, off = (ir.Cast(as_expr(args[k]), int64) for k in ("seed", "seq", "off"))
    for value, what in ((args["seed"], "seed"), (args["seq"], "seq"), (args["off"], "off")):
        if not (isinstance(value, int) or (isinstance(value, ir.Expr) and value.dtype.is_int)):
            raise b.error(f"T.rng_init: {what} must be an integer", node)
    key = ir.Var(b.fresh_name("rng_key"), int64, "let")
    counter = ir.Var(b.fresh_name("rng_counter"), int64, "let")
    # the sequence number goes into the high half of Philox's 64-bit key
    b.emit(ir.Let(b.loc(node), key, ir.BinOp("+", seed, ir.BinOp("<<", seq, ir.Const(32, int64), int64), int64)))
    b.emit(ir.Let(b.loc(node), counter, off))
    _RNG_STATE[b.kernel] = (key, counter)


@rule("rng_rand", "rng_rand_float")
def bind_rng_rand(b: BinderLike, node, args, name):
    state = _RNG_STATE.get(b.kernel) if b.kernel is not None else None
    if state is None:
        raise b.error(f"T.{name} before T.rng_init in this kernel", node)
    if name == "rng_rand":
        return ir.Call("rng_rand", tuple(ir.VarRef(v) for v in state), DTYPES["uint32"])
    bit, dist = args["bit"], args["dist"]
    if bit not in (32, 64) or dist not in ("uniform", "normal"):
        raise b.error(
            f"T.rng_rand_float(bit={bit!r}, dist={dist!r}): bit is 32 or 64, dist 'uniform' or 'normal'", node
        )
    dtype = DTYPES["float32" if bit == 32 else "float64"]
    return ir.Call(f"rng_{dist}", tuple(ir.VarRef(v) for v in state), dtype)


@rule("make_tensor", "make_tensor_from_addr")
def bind_make_tensor(b: BinderLike, node, args):
    return make_tensor(b, node, args, "tensor")


def make_tensor(b: BinderLike, node, args, name: str) -> ir.Buffer:
    """``T.make_tensor(ptr, shape, dtype, strides)``: a global tensor over a raw address (a ``T.ptr``
    parameter, or an int64 address read in the kernel: ``T.make_tensor(ptrs[g], ...)``).  Inside a
    T.Kernel the address is taken where the call stands; before the kernels, at the top of each."""
    address = args["ptr"] if "ptr" in args else args["addr"]
    what = f"T.{'make_tensor' if 'ptr' in args else 'make_tensor_from_addr'}"
    if isinstance(address, (ir.Buffer, ir.Region)):
        tensor = address.buffer if isinstance(address, ir.Region) else address
        raise b.error(
            f"{what} takes a T.ptr parameter or an int64 address, got the tensor '{tensor.name}'", node,
            "index a table of pointers (ptrs[g]), or view a tensor with T.Tensor(shape, dtype, A.data)",
        )  # fmt: skip
    if not isinstance(address, ir.Expr) or is_python_value(address):
        raise b.error(
            f"{what} takes a T.ptr parameter or an int64 address, got {address!r}", node,
            "declare a parameter 'p: T.ptr' and pass the tensor (or tensor.data_ptr()) when calling the kernel",
        )  # fmt: skip
    if not (address.dtype.kind == "ptr" or (address.dtype.is_int and address.dtype.bits == 64)):
        raise b.error(f"{what}: an address is 64 bits wide, got a value of dtype {address.dtype.name}", node)
    if args.get("storage_scope", "global") != "global":
        raise b.error(f"{what} makes global tensors, got storage_scope={args['storage_scope']!r}", node)
    shape, strides = args["shape"], args["strides"]
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if strides is not None:
        strides = tuple(strides) if isinstance(strides, (list, tuple)) else (strides,)
        if len(strides) != len(shape):
            raise b.error(f"{what}: {len(strides)} strides for a {len(shape)}-D shape", node)
    buf = b.global_buffer(b.fresh_name(name), TensorType(shape, b.dtype_arg(args["dtype"], node), strides), b.loc(node))
    buf.address = address
    if b.kernel is None:
        b.outer_tensors.append(buf)
    else:
        b.emit(ir.MakeTensor(b.loc(node), buf))
    return buf


@rule("match_buffer")
def bind_match_buffer(b: BinderLike, node, args):
    """``A = T.match_buffer(a, shape, dtype)`` on a ``T.handle`` parameter ``a`` (TileLang's buffer
    map): ``a`` becomes a tensor parameter of that shape and dtype, checked at every call."""
    param = args["param"]
    var = param.var if isinstance(param, ir.VarRef) else None
    if b.kernel is not None or b.eager or var is None or var.dtype.kind != "ptr" or var not in b.params:
        raise b.error(
            "T.match_buffer binds a T.handle parameter of a @T.prim_func to a tensor, before the T.Kernel blocks",
            node, "declare the parameter as T.Tensor(shape, dtype) instead, or view memory with T.make_tensor",
        )  # fmt: skip
    if args["shape"] is None:
        raise b.error(f"T.match_buffer of parameter '{var.name}' needs its shape", node)
    if args["elem_offset"] not in (None, 0) or args["data"] is not None or args["scope"] != "global":
        raise b.error("T.match_buffer with data=, elem_offset= or a scope other than global is not supported", node)
    shape, strides = args["shape"], args["strides"]
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    strides = None if strides is None else tuple(strides) if isinstance(strides, (list, tuple)) else (strides,)
    buf = b.global_buffer(var.name, TensorType(shape, b.dtype_arg(args["dtype"], node), strides), b.loc(node))
    b.params[b.params.index(var)] = buf
    b.bind_name(var.name, buf)  # the handle's name now is the tensor too
    return buf


def _product(shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


@rule("transpose")
def bind_transpose(b: BinderLike, node, args):
    """``T.transpose(src, dst)``: ``dst[j, i] = src[i, j]``, bound as the T.Parallel it means."""
    src, dst = _fill_region(b, args["src"], node), _fill_region(b, args["dst"], node)
    if not (src.is_whole() and dst.is_whole() and src.buffer.ndim == 2 and dst.buffer.ndim == 2):
        raise b.error("T.transpose takes two whole 2-D buffers", node)
    m, n = src.buffer.shape
    if tuple(dst.buffer.shape) != (n, m):
        raise b.error(f"T.transpose: dst must have shape {(n, m)}, got {tuple(dst.buffer.shape)}", node)
    i, j = ir.Var("i", INT32, "lane"), ir.Var("j", INT32, "lane")
    body = [
        ir.Store(
            b.loc(node), dst.buffer, (ir.VarRef(j), ir.VarRef(i)), ir.Load(src.buffer, (ir.VarRef(i), ir.VarRef(j)))
        )
    ]
    b.emit(ir.Parallel(b.loc(node), [i, j], [m, n], body))


# The C++ memory orders each operation accepts (a load cannot release, a store cannot acquire).
_ALL_ORDERS = (None, "relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
_MEMORY_ORDERS = {
    "atomic_load": ("relaxed", "consume", "acquire", "seq_cst"),
    "atomic_store": ("relaxed", "release", "seq_cst"),
}


def _memory_order_error(name: str, order) -> str | None:
    if order in _MEMORY_ORDERS.get(name, _ALL_ORDERS):
        return None
    valid = ", ".join(repr(o) for o in _MEMORY_ORDERS.get(name, _ALL_ORDERS[1:]))
    return f"T.{name} does not support memory_order={order!r}; use one of {valid}"


def _check_memory_order(b: BinderLike, node, name: str, order) -> None:
    message = _memory_order_error(name, order)
    if message is not None:
        raise InvalidArgumentError(message, b.loc(node))


_UNKNOWN = object()  # an argument whose value is not known when the kernel is decorated


def _value_at_definition(expr: ast.expr, scope):
    """A literal, a bound name or an attribute of one (``T.float32``); else _UNKNOWN."""
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name):
        return scope[expr.id] if expr.id in scope else _UNKNOWN
    if isinstance(expr, ast.Attribute):
        base = _value_at_definition(expr.value, scope)
        return _UNKNOWN if base is _UNKNOWN else getattr(base, expr.attr, _UNKNOWN)
    return _UNKNOWN


def _definition_memory_order(name: str, args: dict) -> TileLangCompileError | None:
    order = args.get("memory_order", _UNKNOWN)
    message = _memory_order_error(name, order) if isinstance(order, str) else None
    return InvalidArgumentError(message) if message else None


def _definition_reducer_dtype(name: str, args: dict) -> TileLangCompileError | None:
    op, dt = args.get("op", "sum"), lookup_dtype(args.get("dtype", _UNKNOWN))
    if isinstance(op, str) and op.startswith("bit") and dt is not None and not (dt.is_int or dt == BOOL):
        return CheckFailedError(f"bitwise reducer op {op!r} requires an integer dtype, got {dt.name}")
    return None


# what TileLang checks while it builds the prim_func, per primitive
_DEFINITION_CHECKS = {"atomic_load": _definition_memory_order, "atomic_store": _definition_memory_order,
                      "alloc_reducer": _definition_reducer_dtype}  # fmt: skip


def _arguments_at_definition(source: KernelSource) -> None:
    """Arguments TileLang rejects while it builds a prim_func (``T.atomic_load(...,
    memory_order="release")``, a bitwise ``T.alloc_reducer`` of floats): an error when the kernel is
    decorated, as in TileLang, where the argument is a literal or a name bound by then (anything
    else is checked when the kernel is bound)."""
    for node in ast.walk(source.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        check = _DEFINITION_CHECKS.get(node.func.attr)
        fn = _value_at_definition(node.func, source.scope) if check is not None else None
        if getattr(fn, "__t2t__", None) != node.func.attr:
            continue  # not that T primitive
        values = [_value_at_definition(a, source.scope) for a in node.args]
        named = {k.arg: _value_at_definition(k.value, source.scope) for k in node.keywords if k.arg}
        try:
            bound = inspect.signature(fn).bind(*values, **named)
        except TypeError:
            continue  # the binder says what is wrong with the call
        bound.apply_defaults()
        error = check(node.func.attr, {k: v for k, v in bound.arguments.items() if v is not _UNKNOWN})
        if error is not None:
            end = node.end_col_offset if node.end_lineno == node.lineno else None
            error.loc = ir.Loc(source.file, node.lineno, node.col_offset, end)
            error.args = (error.render(),)
            raise error


KernelSource.definition_checks.append(_arguments_at_definition)


def _atomic_rule(kind):
    def bind(b: BinderLike, node, args):
        _check_memory_order(b, node, f"atomic_{kind}", args.get("memory_order"))
        dst, value = args["dst"], args["value"]
        if isinstance(dst, ir.Load) and not isinstance(value, (ir.Buffer, ir.Region)):
            return _element_atomic(b, node, kind, dst, as_expr(value), args.get("return_prev", False))
        if args.get("return_prev"):
            raise b.error(f"T.atomic_{kind}(..., return_prev=True) takes one element (dst[i, j]), not a tile", node)
        dst = _operand(b, dst, node, "atomic destination")
        if isinstance(value, (ir.Buffer, ir.Region, ir.Load)):
            src_ext, dst_ext = extent_of(value), extent_of(dst)
            src_ext = src_ext if src_ext is not None else [1] * len(dst_ext)
            dst_ext = dst_ext if dst_ext is not None else [1] * len(src_ext)
            src_ext, dst_ext = legalize_pairwise_extents(src_ext, dst_ext)
            b.emit(ir.Atomic(b.loc(node), kind, to_region(dst, dst_ext), to_region(value, src_ext)))
        else:
            region = dst if isinstance(dst, ir.Region) else whole(dst)
            b.emit(ir.Atomic(b.loc(node), kind, region, as_expr(value)))
        return None

    return bind


for _kind in ("add", "max", "min"):
    RULES["atomic_" + _kind] = _atomic_rule(_kind)


def _element_atomic(b: BinderLike, node, kind: str, dst: ir.Load, value, return_prev) -> ir.Expr | None:
    """One element's atomic; with ``return_prev`` its value is the element's previous value."""
    if not isinstance(return_prev, bool):
        raise b.error("return_prev must be a compile-time bool", node)
    result = ir.Var(b.fresh_name("prev"), dst.buffer.dtype, "let") if return_prev else None
    b.emit(ir.Atomic(b.loc(node), kind, dst, value, result))
    return ir.VarRef(result) if result is not None else None


@rule("atomic_or")
def bind_atomic_or(b: BinderLike, node, args):
    dst = args["dst"]
    if not isinstance(dst, ir.Load) or not dst.buffer.dtype.is_int:
        raise b.error("T.atomic_or takes one element of an integer buffer (dst[i])", node)
    _check_memory_order(b, node, "atomic_or", args.get("memory_order"))
    return _element_atomic(b, node, "or", dst, as_expr(args["value"], b.loc(node)), True)


@rule("atomic_load")
def bind_atomic_load(b: BinderLike, node, args):
    if not isinstance(args["src"], ir.Load):
        raise b.error("T.atomic_load takes one element (src[i])", node)
    _check_memory_order(b, node, "atomic_load", args["memory_order"])
    return _element_atomic(b, node, "load", args["src"], None, True)


@rule("atomic_store")
def bind_atomic_store(b: BinderLike, node, args):
    if not isinstance(args["dst"], ir.Load):
        raise b.error("T.atomic_store takes one element (dst[i])", node)
    _check_memory_order(b, node, "atomic_store", args["memory_order"])
    _element_atomic(b, node, "xchg", args["dst"], as_expr(args["src"], b.loc(node)), False)


@rule("atomic_addx2", "atomic_addx4")
def bind_atomic_add_vector(b: BinderLike, node, args, name):
    """``T.atomic_addx4(dst[i, j], src[i, j])``: the atomic adds of dst[i, j + k] += src[i, j + k], k < 4."""
    lanes = 2 if name == "atomic_addx2" else 4

    def element(ref, what):
        if isinstance(ref, ir.Buffer):
            ref = whole(ref)
        if isinstance(ref, ir.Region):
            ref = ir.Load(ref.buffer, ref.starts)
        if not isinstance(ref, ir.Load) or not ref.indices:
            raise b.error(f"T.{name}: {what} must be an element (A[i, j]) or a region of a buffer", node)
        return ref

    dst, src = element(args["dst"], "dst"), args["value"]
    src = element(src, "value") if isinstance(src, (ir.Buffer, ir.Region, ir.Load)) else None
    if src is None:
        raise b.error(f"T.{name} adds {lanes} consecutive elements of a buffer (value=A[i, j])", node)

    def shifted(ref: ir.Load, k: int) -> ir.Load:
        last = ref.indices[-1]
        return ir.Load(ref.buffer, (*ref.indices[:-1], ir.BinOp("+", last, const_int(k), last.dtype)), ref.loc)

    prev = [
        _element_atomic(b, node, "add", shifted(dst, k), shifted(src, k), args["return_prev"]) for k in range(lanes)
    ]
    # return_prev: the vector of previous values, as a tuple (stored with ``Prev[i : i + lanes] = ...``)
    return tuple(prev) if args["return_prev"] else None


def _reducer(b: BinderLike, value, node, what: str) -> ir.Buffer:
    if not isinstance(value, ir.Buffer) or value not in b.reducers:
        raise b.error(f"{what} takes a buffer from T.alloc_reducer", node)
    return value


@rule("reducer_init")
def bind_reducer_init(b: BinderLike, node, args):
    acc = _reducer(b, args["reducer"], node, "T.reducer_init")
    init = args["init"]
    # an explicitly typed value must have the reducer's dtype (Python numbers convert)
    typed = isinstance(init, TypedLiteral) or (isinstance(init, ir.Expr) and not is_weak(init))
    given = getattr(init, "dtype", None)
    if typed and given != acc.dtype:
        raise b.error(f"T.reducer_init init value dtype {given.name} does not match reducer '{acc.name}' dtype "
                      f"{acc.dtype.name}", node)  # fmt: skip
    b.epochs.log(b, acc, "init", b.loc(node))
    if init is None:  # the op's identity
        op, dt = b.reducers[acc], acc.dtype
        if op in ("sum", "bitor", "bitxor"):
            init = 0
        elif op == "bitand":
            init = -1 if dt.kind == "int" else 2**dt.bits - 1  # all ones
        elif dt.is_float:
            init = float("-inf") if op == "max" else float("inf")
        else:
            init = -(2 ** (dt.bits - 1)) if op == "max" else 2 ** (dt.bits - 1) - 1
    b.epochs.quiet = True  # its fill is the epoch's start, not a user's store
    try:
        b.emit(ir.Fill(b.loc(node), whole(acc), ir.Cast(as_expr(init, b.loc(node)), acc.dtype)))
    finally:
        b.epochs.quiet = False


@rule("reducer_update")
def bind_reducer_update(b: BinderLike, node, args):
    target = args["target"]
    if not isinstance(target, ir.Load) or target.buffer not in b.reducers:
        raise b.error("T.reducer_update takes acc[indices] of a T.alloc_reducer buffer", node)
    b.check_reducer_update(target.buffer, node)
    b.epochs.unread(target.buffer, target.loc)
    b.epochs.log(b, target.buffer, "update", b.loc(node))
    kind = {"sum": "add", "bitand": "and", "bitor": "or", "bitxor": "xor"}.get(
        b.reducers[target.buffer], b.reducers[target.buffer]
    )
    b.emit(ir.Atomic(b.loc(node), kind, target, as_expr(args["value"], b.loc(node))))


@rule("finalize_reducer")
def bind_finalize_reducer(b: BinderLike, node, args):
    acc = _reducer(b, args["reducer"], node, "T.finalize_reducer")
    batch, count = args["batch"], _product(acc.shape)
    # batch only groups TileLang's cross-thread combines; a value no grouping can have is a mistake
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InvalidArgumentError(
            f"T.finalize_reducer: batch must be >= 1 (a compile-time int), got {batch!r}", b.loc(node)
        )
    if batch > count:
        raise b.error(f"T.finalize_reducer: batch={batch} exceeds total output elements ({count})", node)
    if count % batch:
        raise b.error(f"T.finalize_reducer: batch={batch} must evenly divide the reducer's {count} elements", node)
    dst = args["dst"]
    b.epochs.log(b, acc, "legacy_finalize" if dst is None else "finalize", b.loc(node))
    if dst is None:
        return  # the legacy in-place form: the reducer already holds the result
    if dst in b.reducers:
        raise b.error(f"T.finalize_reducer destination '{dst.name}' must be an ordinary fragment, not a reducer", node)
    if not isinstance(dst, ir.Buffer) or tuple(dst.shape) != tuple(acc.shape):
        raise b.error(f"T.finalize_reducer: dst must be a buffer of the reducer's shape {list(acc.shape)}", node)
    b.emit(ir.Copy(b.loc(node), whole(acc), whole(dst)))


# ------------------------------------------------------------------ Hopper barriers, warp specialization
# ``with T.ws(k):`` sections run in program order, every statement at block level (a tile op a warp
# group issues computes the same tile); barrier waits and arrives then order nothing that program
# order does not already order, so they are dropped, and T.tma_copy is the T.copy it completes.
# That holds when every wait is for an arrive earlier in program order: bind.Binder checks it
# (``check_barrier_order``) and names the wait that would need the sections to run concurrently.
class BarrierArray:
    """``T.alloc_barrier(...)``: compile-time handles; ``mbars[i]`` is one barrier."""

    def __init__(self, name: str):
        self.name = name

    def __getitem__(self, index):
        return BarrierRef(self, index)


class BarrierRef:
    def __init__(self, array: BarrierArray, index=None):
        self.array, self.index = array, index

    def key(self):
        index = self.index
        return (id(self.array), None if index is None else index if is_python_value(index) else ir_key(index))


def _barrier(b: BinderLike, value, node) -> BarrierRef:
    if isinstance(value, BarrierArray):
        return BarrierRef(value)
    if not isinstance(value, BarrierRef):
        raise b.error("expected a barrier from T.alloc_barrier", node)
    return value


@rule("alloc_barrier")
def bind_alloc_barrier(b: BinderLike, node, args):
    return BarrierArray(b.fresh_name("mbarrier"))


@rule("barrier_wait", "mbarrier_wait_parity")
def bind_barrier_wait(b: BinderLike, node, args, name):
    b.barrier_event("wait", _barrier(b, args["mbarrier"], node), args["parity"], node, name)


@rule("barrier_arrive", "mbarrier_arrive")
def bind_barrier_arrive(b: BinderLike, node, args, name):
    b.barrier_event("arrive", _barrier(b, args["mbarrier"], node), None, node, name)


@rule("tma_copy")
def bind_tma_copy(b: BinderLike, node, args):
    if args["cluster_mask"] is not None:
        _check_multicast_source(b, args["src"], node)
    if args["barrier"] is not None:
        b.barrier_event("arrive", _barrier(b, args["barrier"], node), None, node, "tma_copy")
    return bind_copy(b, node, {"src": args["src"], "dst": args["dst"]})


def _check_multicast_source(b: BinderLike, src, node) -> None:
    """``cluster_mask``: the lowest-ranked block of the mask loads the tile and multicasts it to the
    others' shared memory, so each block receives that block's source region.  A T.copy in every
    block gives the same only when the region is the same for every block: no block index in it."""
    if isinstance(src, ir.Region):
        exprs = [*src.starts, *[e for e in src.extents if isinstance(e, ir.Expr)]]
    elif isinstance(src, ir.Load):
        exprs = list(src.indices)
    else:
        exprs = []
    for e in exprs:
        for x in ir.iter_expr_tree(e) if isinstance(e, ir.Expr) else ():
            if (isinstance(x, ir.VarRef) and x.var.kind in ("block", "thread")) or isinstance(x, ir.Load):
                raise b.error(
                    "T.tma_copy(..., cluster_mask=...) multicasts the lowest-ranked block's source region to the "
                    "others; tile2triton supports it only when the source region does not depend on the block "
                    "(no block or thread index, and no loaded value, in its indices)",
                    node,
                )


@rule("ws")
def bind_misplaced_ws(b: BinderLike, node, args):
    raise b.error("T.ws opens a block: write 'with T.ws(...):'", node)


def check_barrier_order(b: BinderLike, events: list, loop_var) -> None:
    """Every barrier wait must be for an arrive earlier in program order: one earlier in the same
    loop body, or (a wait whose parity is 1 in the first iteration) the previous iteration's."""
    arrived = set()
    for kind, ref, parity, node, name in events:
        if kind == "arrive":
            arrived.add(ref.key())
            continue
        if ref.key() in arrived:
            continue
        first = ir_eval_at(parity, loop_var, 0)
        if first is not None and first % 2 == 1:
            continue
        raise b.error(
            f"T.{name} waits for an arrive that comes later in program order: tile2triton runs warp-specialized "
            "sections (T.ws) one after another, so the producer must come before its consumer",
            node,
        )


def ir_eval_at(e, var, value):
    """The int value of ``e`` with ``var`` = ``value`` (None where another name or operation enters)."""
    ops = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
           "^": operator.xor, "&": operator.and_, "|": operator.or_}  # fmt: skip
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.VarRef):
        return value if var is not None and e.var is var else None
    if isinstance(e, ir.BinOp) and e.op in ops:
        x, y = ir_eval_at(e.lhs, var, value), ir_eval_at(e.rhs, var, value)
        if x is None or y is None or (e.op in ("//", "%") and y == 0):
            return None
        return ops[e.op](x, y)
    return None


@rule(
    "wait_wgmma",
    "no_set_max_nreg",
    "disable_warp_group_reg_alloc",
    "assume",
    "set_max_nreg",
    "inc_max_nreg",
    "dec_max_nreg",
    "annotate_producer_reg_dealloc",
    "annotate_consumer_reg_alloc",
    "tma_store_arrive",
    "tma_store_wait",
    "fence_proxy_async",
)
def bind_no_effect(b: BinderLike, node, args):
    return None


@rule("dp4a")
def bind_dp4a(b: BinderLike, node, args):
    """CUDA's ``__dp4a`` on four consecutive int8 elements of A and B (from the element given, along
    the last dim) into the int32 element of C, written out as its sum of products."""
    loads = []
    for what, want in (("A", DTYPES["int8"]), ("B", DTYPES["int8"]), ("C", INT32)):
        value = args[what]
        if isinstance(value, ir.Buffer):
            value = ir.Load(value, tuple(as_expr(0) for _ in value.shape))
        if not isinstance(value, ir.Load):
            raise b.error(f"T.dp4a operand {what} must be a buffer element (A_local[k]) or a buffer", node)
        if value.buffer.dtype != want:
            kind = "inputs" if what != "C" else "an int32 accumulator"
            raise b.error(f"dp4a requires {kind}, got {what}.dtype='{value.buffer.dtype.name}'", node)
        loads.append(value)
    a, bb, c = loads
    total = c
    for k in range(4):
        at = [
            ir.Load(x.buffer, (*x.indices[:-1], as_expr(b.binop("+", operator.add, x.indices[-1], k, node))))
            for x in (a, bb)
        ]
        product = ir.BinOp("*", ir.Cast(at[0], INT32), ir.Cast(at[1], INT32), INT32)
        total = ir.BinOp("+", total, product, INT32)
    b.emit(ir.Store(b.loc(node), c.buffer, c.indices, total))


@rule("annotate_safe_value")
def bind_annotate_safe_value(b: BinderLike, node, args):
    """The value out-of-bounds loads of a global tensor read (TileLang's ``safe_value_map``), kept on
    the block it is in: the kernel's (the whole T.Kernel) or a ``T.sblock``'s (rules_scopes.py)."""
    mapping = args["safe_value_map"]
    if b.kernel is None:
        raise b.error("T.annotate_safe_value must be inside a T.Kernel", node)
    values = getattr(b, "sblock_safe_values", None) or [b.kernel.safe_values]
    if not isinstance(mapping, dict):
        raise b.error("T.annotate_safe_value takes a dict {global tensor: value}", node)
    for buf, value in mapping.items():
        if not isinstance(buf, ir.Buffer) or buf.scope != ir.GLOBAL:
            raise b.error("T.annotate_safe_value keys must be global tensors (kernel parameters)", node)
        value = value.value if isinstance(value, TypedLiteral) else value
        if not isinstance(value, (bool, int, float)):
            raise b.error(f"the safe value of '{buf.name}' must be a compile-time number, got {value!r}", node)
        old = values[-1].get(buf.root)
        if old is not None and old != value:
            raise b.error(
                f"'{buf.name}' already has the safe value {old!r} in this block; "
                "a different one needs a block of its own (with T.sblock(...):)",
                node,
            )
        values[-1][buf.root] = value


@rule("annotate_layout")
def bind_annotate_layout(b: BinderLike, node, args):
    """Layouts are hints (Triton picks register and shared layouts), except a 2:4 metadata layout
    on a global tensor: it says the tensor's bytes are stored permuted, which would change E's meaning."""
    layouts = args["layout_map"]
    for buf, layout in layouts.items() if isinstance(layouts, dict) else ():
        if isinstance(layout, MetadataLayout) and isinstance(buf, ir.Buffer) and buf.scope == ir.GLOBAL:
            raise b.error(
                f"a metadata layout on the global tensor '{buf.name}' (E stored in CUTLASS's interleaved order) "
                "is not supported: T.gemm_sp reads E in row-major order",
                node,
                hint="make E with tilelang.utils.sparse.compress (row-major metadata) and drop this annotation",
            )


@rule("annotate_pass_configs", "annotate_compile_flags")
def bind_function_attr(b: BinderLike, node, args, name):
    """Kept on the function (PrimFunc.attrs, TileLang's attribute names): pass configs reach the
    kernel's options (TL_ENABLE_FAST_MATH); compile flags are for nvcc, which is not used here."""
    value = next(iter(args.values()))
    if name == "annotate_pass_configs":
        if not isinstance(value, dict):
            raise b.error("T.annotate_pass_configs takes a dict {PassConfigKey: value}", node)
        b.func_attrs.setdefault("tilelang_pass_configs", {}).update(value)
    else:
        flags = [value] if isinstance(value, str) else list(value)
        b.func_attrs.setdefault("tilelang_compile_flags", []).extend(flags)


@rule("use_swizzle")
def bind_use_swizzle(b: BinderLike, node, args):
    panel, order, enable = args["panel_size"], args["order"], args["enable"]
    if b.kernel is None or not enable or len(b.kernel.grid) < 2:
        return None
    if not isinstance(panel, int) or panel <= 0 or order not in ("row", "column"):
        raise b.error("T.use_swizzle takes a positive int panel_size and order 'row' or 'column'", node)
    b.kernel.swizzle = (panel, order)
    return None


@rule("sync_threads")
def bind_sync(b: BinderLike, node, args):
    b.emit(ir.Barrier(b.loc(node)))


@rule("loop_break", "break_loop", "continue_loop")
def bind_loop_exit(b: BinderLike, node, args, name):
    b.loop_exit(ir.Continue if name == "continue_loop" else ir.Break, node)


@rule("print")
def bind_print(b: BinderLike, node, args):
    obj = args["obj"]
    b.emit(ir.Print(b.loc(node), None if obj is None else as_expr(obj) if not isinstance(obj, ir.Buffer) else obj,
                    args["msg"]))  # fmt: skip


@rule("device_assert")
def bind_device_assert(b: BinderLike, node, args):
    msg = args["msg"]
    if not isinstance(msg, str):
        raise b.error("T.device_assert's message must be a string", node)
    cond = as_expr(args["condition"], b.loc(node))
    b.emit(ir.DeviceAssert(b.loc(node), ir.Cast(cond, BOOL) if cond.dtype != BOOL else cond, msg))


def _thread_var(b: BinderLike, dim: int, node):
    if b.kernel is None:
        raise b.error("thread bindings exist only inside T.Kernel", node)
    extents = b.kernel.thread_extents
    if not isinstance(dim, int) or not 0 <= dim < 3:
        raise b.error(f"thread binding dim must be 0, 1 or 2, got {dim!r}", node)
    if dim >= len(extents):
        return 0  # threadIdx.y/z of a kernel with fewer thread dims
    if not b.kernel.thread_vars:
        b.kernel.thread_vars.extend(ir.Var(n, INT32, "thread") for n in ("tx", "ty", "tz")[: len(extents)])
    return ir.VarRef(b.kernel.thread_vars[dim])


@rule("get_thread_binding")
def bind_thread_binding(b: BinderLike, node, args):
    return _thread_var(b, args["dim"], node)


@rule("get_thread_bindings")
def bind_thread_bindings(b: BinderLike, node, args):
    return [_thread_var(b, d, node) for d in range(3)]


_THREAD_AXES = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}
_BLOCK_AXES = {"blockIdx.x": 0, "blockIdx.y": 1, "blockIdx.z": 2}


@rule("thread_binding")
def bind_tir_thread_binding(b: BinderLike, node, args):
    """TIR's ``T.thread_binding(0, n, thread="threadIdx.x")``: the thread index itself, so the
    range must be the kernel's whole extent along that axis."""
    start, stop, thread = args["start"], args["stop"], args["thread"]
    if stop is None:
        start, stop = 0, start
    if b.kernel is None:
        raise b.error("T.thread_binding exists only inside T.Kernel", node)
    if thread in _BLOCK_AXES and start == 0 and _BLOCK_AXES[thread] < len(b.kernel.block_vars):
        return ir.VarRef(b.kernel.block_vars[_BLOCK_AXES[thread]])
    if thread not in _THREAD_AXES:
        raise b.error(f"T.thread_binding binds threadIdx.x/y/z (or a blockIdx at 0), got thread={thread!r}", node)
    dim = _THREAD_AXES[thread]
    extents = b.kernel.thread_extents
    extent = extents[dim] if dim < len(extents) else 1
    if not isinstance(start, int) or not isinstance(stop, int) or stop - start != extent:
        raise b.error(
            f"T.thread_binding({start}, {stop}, thread={thread!r}) must span the kernel's {extent} threads "
            f"along {thread} (tile2triton binds whole thread axes)",
            node,
        )
    var = _thread_var(b, dim, node)
    return var if start == 0 else ir.BinOp("+", as_expr(var), as_expr(start), INT32)


class CommReducer:
    """``T.comm_reducer(combiner, identity)``, known by its operation."""

    def __init__(self, op: str):
        self.op = op


class _Probe:
    """Stands for the combiner's arguments: records which operation the combiner applies."""

    def __init__(self, log: list):
        self.log = log

    def _record(op):  # noqa: N805
        def method(self, other):
            self.log.append(op)
            return self if op not in ("max", "min") else False

        return method

    __add__ = __radd__ = _record("sum")
    __mul__ = __rmul__ = _record("prod")
    __and__ = __rand__ = _record("and")
    __or__ = __ror__ = _record("or")
    __xor__ = __rxor__ = _record("xor")
    __gt__ = _record("max")  # builtins.max(x, y) asks y > x
    __lt__ = _record("min")


_COMBINER_OPS = {ast.Add: "sum", ast.Mult: "prod", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}


@rule("comm_reducer")
def bind_comm_reducer(b: BinderLike, node, args):
    combiner, op = node.args[0] if node.args else None, None
    if isinstance(combiner, ast.Lambda) and len(combiner.args.args) == 2:
        params = [a.arg for a in combiner.args.args]
        body = combiner.body
        names = [getattr(x, "id", None) for x in (getattr(body, "left", None), getattr(body, "right", None))]
        if isinstance(body, ast.BinOp) and sorted(names) == sorted(params):
            op = _COMBINER_OPS.get(type(body.op))
        elif isinstance(body, ast.Call) and sorted(getattr(a, "id", None) for a in body.args) == sorted(params):
            fn = b.expr(body.func)
            tag = getattr(fn, "__t2t__", None) or {max: "max", min: "min"}.get(fn)
            op = tag if tag in ("max", "min") else None
    elif callable(args["combiner"]):
        log: list = []
        try:
            args["combiner"](_Probe(log), _Probe(log))
        except Exception:  # noqa: BLE001  (a combiner the probes cannot follow: refused below)
            log = []
        op = log[0] if len(log) == 1 else None
    if op is None:
        raise b.error(
            "T.comm_reducer: tile2triton knows combiners x + y, x * y, x & y, x | y, x ^ y, T.max and T.min", node
        )
    return CommReducer(op)


@rule("tvm_thread_allreduce")
def bind_thread_allreduce(b: BinderLike, node, args):
    reducer = getattr(b, "reduce_scope", None)
    if reducer is None:
        raise b.error('T.tvm_thread_allreduce stands in a T.attr(T.comm_reducer(...), "reduce_scope", ...)', node)
    parts = list(args["freduce_args"])
    count = parts[0].value if hasattr(parts[0], "value") and not isinstance(parts[0], ir.Expr) else parts[0]
    if count != 1 or len(parts) < 5:
        raise b.error("T.tvm_thread_allreduce(1, value, True, dest, *threads): one value at a time", node)
    value, cond, dst, threads = parts[1], parts[2], parts[3], parts[4:]
    if cond is not True:
        raise b.error("T.tvm_thread_allreduce's condition must be True (every thread takes part)", node)
    if not isinstance(dst, ir.Load) or dst.buffer.scope == ir.GLOBAL:
        raise b.error("T.tvm_thread_allreduce writes an element of a local buffer (dest[0])", node)
    b.emit(ir.ThreadAllReduce(b.loc(node), reducer.op, as_expr(value, b.loc(node)), dst,
                              tuple(as_expr(t) for t in threads)))  # fmt: skip
    return None


@rule("any_of", "all_of")
def bind_any_all(b: BinderLike, node, args, name):
    """``T.any_of(buf)`` / ``T.all_of(buf[i, j, :])``: whether any (all) of the elements is true,
    as TileLang defines it (a whole buffer, or a region that spans only its last dim).  Bound as a
    flag and a loop that folds the elements into it, ahead of the expression that reads it."""
    operand = args["buffer"]
    if isinstance(operand, ir.Buffer):
        if operand.ndim != 1 and not all(d == 1 for d in operand.shape[:-1]):
            raise b.error(f"T.{name} of a whole buffer takes a 1-D buffer", node)
        operand = whole(operand)
    if not isinstance(operand, ir.Region):
        raise b.error(f"T.{name} takes a buffer or a buffer region (buf[i, :])", node)
    if any(static(e) != 1 for e in operand.extents[:-1]):
        raise b.error(f"T.{name} of a region spans only its last dim (as in TileLang)", node)
    loc = b.loc(node)
    any_of = name == "any_of"
    flag = ir.Buffer(b.fresh_name(name), ir.VAR, (1,), INT32, loc)
    b.emit(ir.Alloc(loc, flag, const_int(0 if any_of else 1)))
    var = ir.Var(b.fresh_name("i"), INT32, "loop")
    *lead, last = operand.starts
    element = ir.Load(operand.buffer, (*lead, ir.BinOp("+", as_expr(last), ir.VarRef(var), INT32)), loc)
    true = ir.Compare("!=", element, ir.Const(0, element.dtype, weak=True), BOOL)
    old = ir.Load(flag, (const_int(0),), loc)
    new = ir.Select(true, const_int(1), old, INT32) if any_of else ir.Select(true, old, const_int(0), INT32)
    body = [ir.Store(loc, flag, (const_int(0),), new)]
    b.emit(ir.For(loc, var, const_int(0), as_expr(operand.extents[-1]), const_int(1), "serial", body, None))
    return ir.Compare("!=", ir.Load(flag, (const_int(0),), loc), const_int(0), BOOL)


@rule("evaluate")
def bind_evaluate(b: BinderLike, node, args):
    return None  # the expression was bound (and emitted what it does) as the argument


@rule("get_block_binding")
def bind_block_binding(b: BinderLike, node, args):
    return ir.VarRef(b.kernel.block_vars[args["dim"]])


# --- element-wise intrinsics
def _math_rule(name):
    def bind(b: BinderLike, node, args):
        (x,) = args.values()
        x = as_expr(x, b.loc(node))
        if name.startswith("__") and not (x.dtype.is_float and x.dtype.bits >= 16) and not is_weak(x):
            # the fast-math intrinsics (T.__exp, ...) take float16/bfloat16/float32/float64 only, as in TileLang
            raise b.error(f"T.{name} only supports floating-point inputs, but got {x.dtype}", node)
        if name in _PREDICATES:
            dtype = BOOL
        elif name in ("abs", "floor", "ceil", "round", "nearbyint", "trunc") and not x.dtype.is_float:
            dtype = x.dtype
        else:
            dtype = x.dtype if x.dtype.is_float and not is_weak(x) else FLOAT32
        if name in ("floor", "ceil", "round", "nearbyint", "trunc") and not x.dtype.is_float:
            return x
        return ir.Call(name.lstrip("_"), (x,), dtype)

    return bind


for _name in UNARY_MATH:
    RULES[_name] = _math_rule(_name)


def _binary_call(name):
    def bind(b: BinderLike, node, args):
        x, y = (as_expr(v, b.loc(node)) for v in args.values())
        dtype = binary_dtype("+", x, y)
        if name in ("pow", "atan2", "fmod") and not dtype.is_float:
            dtype = FLOAT32
        return ir.Call(name, (x, y), dtype)

    return bind


for _name in ("max", "min", "pow", "atan2", "fmod"):
    RULES[_name] = _binary_call(_name)

for _name, _op in (("floordiv", "//"), ("floormod", "%"), ("bitwise_and", "&"), ("bitwise_or", "|"),
                   ("bitwise_xor", "^"), ("shift_left", "<<"), ("shift_right", ">>")):  # fmt: skip

    def _op_rule(b, node, args, _op=_op):
        x, y = (as_expr(args[k], b.loc(node)) for k in ("a", "b"))
        return ir.BinOp(_op, x, y, binary_dtype(_op, x, y))

    RULES[_name] = _op_rule


@rule("truncdiv", "truncmod")
def bind_trunc(b: BinderLike, node, args, name):
    x, y = as_expr(args["a"]), as_expr(args["b"])
    return ir.Call(name, (x, y), binary_dtype("+", x, y))


@rule("bitwise_not")
def bind_bitwise_not(b: BinderLike, node, args):
    x = as_expr(args["x"])
    return ir.UnaryOp("~", x, x.dtype)


@rule("ceildiv")
def bind_ceildiv(b: BinderLike, node, args):
    x, y = as_expr(args["a"]), as_expr(args["b"])
    dtype = binary_dtype("+", x, y)
    return ir.BinOp("//", ir.BinOp("-", ir.BinOp("+", x, y, dtype), const_int(1), dtype), y, dtype)


@rule("if_then_else")
def bind_if_then_else(b: BinderLike, node, args):
    cond = args["cond"]
    if is_python_value(cond):
        return args["true_value"] if cond else args["false_value"]
    return b.select(cond, args["true_value"], args["false_value"])


@rule("clamp")
def bind_clamp(b: BinderLike, node, args):
    x, lo, hi = (as_expr(args[k]) for k in ("dst", "min_val", "max_val"))
    dtype = binary_dtype("+", x, lo)
    return ir.Call("min", (ir.Call("max", (x, lo), dtype), hi), dtype)


@rule("cast")
def bind_cast(b: BinderLike, node, args):
    from ..language.tir.ir import check_cast_options, unsupported_cast_option

    if isinstance(args["value"], packed.Vector) or packed.vector_dtype(args["dtype"]) is not None:
        return vectors.cast(b, args["value"], args["dtype"], node)  # lane by lane
    dtype = b.dtype_arg(args["dtype"], node)
    try:
        check_cast_options(args["round"], args["sat"], args["rbits"])
    except ValueError as exc:
        raise b.error(str(exc), node) from None
    why = unsupported_cast_option(args["round"], args["sat"], dtype.name)
    if why is not None:
        raise b.error(why, node)
    return ir.Cast(as_expr(args["value"], b.loc(node)), dtype)


@rule("Cast")
def bind_tvm_cast(b: BinderLike, node, args):
    if isinstance(args["value"], packed.Vector) or packed.vector_dtype(args["dtype"]) is not None:
        return vectors.cast(b, args["value"], args["dtype"], node)  # lane by lane
    return ir.Cast(as_expr(args["value"], b.loc(node)), b.dtype_arg(args["dtype"], node))


@rule("reinterpret")
def bind_reinterpret(b: BinderLike, node, args):
    if isinstance(args["value"], packed.Vector) or packed.vector_dtype(args["dtype"]) is not None:
        return packed.reinterpret(b, args["value"], args["dtype"], node)
    return ir.Call("bitcast", (as_expr(args["value"]),), b.dtype_arg(args["dtype"], node))


@rule("ldg32", "ldg64", "ldg128", "ldg256", "lds32", "lds64", "lds128")
def bind_packed_load(b: BinderLike, node, args, name):
    """``T.ldgN`` / ``T.ldsN``: a plain load of the elements the N bits cover (frontend/packed.py)."""
    return packed.load(b, args["src"], int(name[3:]), args.get("pred"), f"T.{name}", node)


@rule("stg32", "stg64", "stg128", "stg256", "sts32", "sts64", "sts128")
def bind_packed_store(b: BinderLike, node, args, name):
    """``T.stgN`` / ``T.stsN``: a plain store of the elements the N bits cover (frontend/packed.py)."""
    packed.store(b, args["dst"], args["value"], int(name[3:]), args.get("pred"), f"T.{name}", node)


@rule("__ldg")
def bind_ldg(b: BinderLike, node, args):
    """``T.__ldg(x[i])`` / ``T.__ldg(x, i)``: a read-only-cache hint; the load itself."""
    src, index = args["load_or_buf"], args["index"]
    if isinstance(src, ir.Load) and index is None:
        return src
    if isinstance(src, ir.Buffer) and index is not None:
        index = index[0] if isinstance(index, (list, tuple)) and len(index) == 1 else index
        if src.ndim != 1 or isinstance(index, (list, tuple)):
            raise b.error("T.__ldg(buffer, index) takes a 1-D buffer and one index", node)
        return ir.Load(src, (as_expr(index),))
    raise b.error("T.__ldg takes x[i], or a buffer and an index", node)


@rule("inline_asm")
def bind_inline_asm(b: BinderLike, node, args):
    asm, constraints = args["asm"], args["constraints"]
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise b.error("T.inline_asm needs the assembly and its constraints as compile-time strings", node)
    operands = tuple(as_expr(a, b.loc(node)) for a in args["args"])
    if not operands:
        raise b.error("T.inline_asm needs at least one argument (it is element-wise over them)", node)
    return ir.InlineAsm(asm, constraints, operands, b.dtype_arg(args["dtype"], node), bool(args["is_pure"]),
                        int(args["pack"]), b.loc(node))  # fmt: skip


def _ptx_rule(name, dtype):
    def bind(b: BinderLike, node, args):
        return ir.Call(name, tuple(as_expr(v, b.loc(node)) for v in args.values()), dtype)

    return bind


for _name in ("ptx_ex2", "ptx_tanh", "ptx_rcp", "ptx_rsqrt", "fast_rcp"):
    RULES[_name] = _ptx_rule("ptx_rcp" if _name == "fast_rcp" else _name, FLOAT32)
for _name in ("ptx_laneid", "ptx_warpid", "ptx_smid"):
    RULES[_name] = _ptx_rule(_name, INT32)
for _name in ("ptx_clock64", "ptx_globaltimer"):
    RULES[_name] = _ptx_rule(_name, DTYPES["int64"])


# ------------------------------------------------------------------ warp-level primitives
# Threads are grouped by TileLang's linear thread index, 32 to a warp (codegen/warp.py lowers the
# collectives over the lanes of the thread view).
WARP_SIZE = 32


def _linear_thread(b: BinderLike, node) -> ir.Expr:
    """``tx + ty * X + tz * X * Y``: the thread's index in the block, as TileLang linearises it."""
    _thread_var(b, 0, node)
    index, stride = None, 1
    for var, extent in zip(b.kernel.thread_vars, b.kernel.thread_extents):
        term = ir.VarRef(var) if stride == 1 else ir.BinOp("*", ir.VarRef(var), const_int(stride), INT32)
        index = term if index is None else ir.BinOp("+", index, term, INT32)
        stride *= static(extent)
    return index


def _warp_size(b: BinderLike, value, node, what: str = "warp_size") -> ir.Expr:
    size = WARP_SIZE if value is None else value
    if is_python_value(size) and not (isinstance(size, int) and size > 0):
        raise b.error(f"{what} must be a positive int, got {size!r}", node)
    return as_expr(size, b.loc(node))


@rule("get_lane_idx", "get_warp_idx")
def bind_lane_warp_idx(b: BinderLike, node, args, name):
    op = "%" if name == "get_lane_idx" else "//"
    return ir.BinOp(op, _linear_thread(b, node), _warp_size(b, args["warp_size"], node), INT32)


@rule("get_warp_group_idx")
def bind_warp_group_idx(b: BinderLike, node, args):
    if args["warps_per_group"] is not None and args["warp_size"] is None:
        raise b.error("T.get_warp_group_idx expects `warp_size` when specifying `warps_per_group`", node)
    size = _warp_size(b, args["warp_size"], node)
    per_group = _warp_size(b, 4 if args["warps_per_group"] is None else args["warps_per_group"], node,
                           "warps_per_group")  # fmt: skip
    return ir.BinOp("//", _linear_thread(b, node), ir.BinOp("*", size, per_group, INT32), INT32)


@rule("shuffle_elect")
def bind_shuffle_elect(b: BinderLike, node, args):
    extent = args["thread_extent"]
    if not isinstance(extent, int) or extent < 0:
        raise b.error(f"T.shuffle_elect takes a compile-time thread count >= 0, got {extent!r}", node)
    index = _linear_thread(b, node)
    if extent == 0:  # one thread of the whole block
        return ir.Compare("==", index, const_int(0), BOOL)
    return ir.Compare("==", ir.BinOp("%", index, const_int(extent), INT32), const_int(0), BOOL)


@rule("sync_warp")
def bind_sync_warp(b: BinderLike, node, args):
    b.emit(ir.Barrier(b.loc(node)))  # a block barrier orders at least what the warp's does


def _warp_operand(b: BinderLike, value, node, name: str) -> ir.Expr:
    if isinstance(value, ir.Buffer):
        raise b.error(f"T.{name} takes a value (an element such as buf[0]), not a buffer", node)
    return as_expr(value, b.loc(node))


def _warp_op(b: BinderLike, node, op: str, args: tuple, dtype: DType, group: int = WARP_SIZE, mask=None):
    _thread_var(b, 0, node)  # the collective runs over the lanes of the thread view
    if mask is not None:
        mask = as_expr(mask, b.loc(node))
        if isinstance(mask, ir.Const) and isinstance(mask.value, int) and mask.value & 0xFFFFFFFF == 0xFFFFFFFF:
            mask = None  # the full warp
    return ir.WarpOp(op, args, dtype, group, mask)


@rule("warp_reduce_sum", "warp_reduce_max", "warp_reduce_min", "warp_reduce_bitand", "warp_reduce_bitor")
def bind_warp_reduce(b: BinderLike, node, args, name):
    value = _warp_operand(b, args["value"], node, name)
    op = name[len("warp_reduce_") :]
    if op in ("bitand", "bitor") and value.dtype.is_float:
        raise b.error(f"T.{name} needs an integer value, got {value.dtype.name}", node)
    return _warp_op(b, node, op, (value,), value.dtype)


@rule("shfl_sync", "shfl_xor", "shfl_down", "shfl_up")
def bind_shuffle(b: BinderLike, node, args, name):
    value = _warp_operand(b, args["value"], node, name)
    lane = args["srcLane"] if name == "shfl_sync" else args["delta"]
    width = args["width"]
    if not (isinstance(width, int) and 1 <= width <= WARP_SIZE and width & (width - 1) == 0):
        raise b.error(f"T.{name}: width must be a compile-time power of two from 1 to 32, got {width!r}", node)
    if not as_expr(lane).dtype.is_int:
        raise b.error(f"T.{name}: the lane {'index' if name == 'shfl_sync' else 'delta'} must be an integer", node)
    return _warp_op(b, node, name, (value, as_expr(lane, b.loc(node)), const_int(width)), value.dtype,
                    mask=args["mask"])  # fmt: skip


def _predicate(b: BinderLike, value, node, name: str) -> ir.Expr:
    pred = _warp_operand(b, value, node, name)
    if pred.dtype.is_float:
        raise b.error(f"T.{name} requires an integer or boolean predicate, but got {pred.dtype.name}", node)
    return pred


_VOTES = {  # name -> (op, result dtype, group)
    "any_sync": ("any", INT32, WARP_SIZE),
    "all_sync": ("all", INT32, WARP_SIZE),
    "ballot_sync": ("ballot", DTYPES["uint64"], WARP_SIZE),
    "ballot": ("ballot", DTYPES["uint64"], WARP_SIZE),
    "syncthreads_count": ("count", INT32, 0),
    "syncthreads_and": ("all", INT32, 0),
    "syncthreads_or": ("any", INT32, 0),
}


@rule(*_VOTES)
def bind_vote(b: BinderLike, node, args, name):
    op, dtype, group = _VOTES[name]
    pred = _predicate(b, args["predicate"], node, name)
    return _warp_op(b, node, op, (pred,), dtype, group, args.get("mask"))


@rule("activemask")
def bind_activemask(b: BinderLike, node, args):
    return _warp_op(b, node, "ballot", (const_int(1),), DTYPES["uint64"])


@rule("match_any_sync", "match_all_sync")
def bind_match(b: BinderLike, node, args, name):
    value = _warp_operand(b, args["value"], node, name)
    mask = as_expr(args["mask"], b.loc(node))
    op = "match_any" if name == "match_any_sync" else "match_all"
    return _warp_op(b, node, op, (value, ir.Cast(mask, DTYPES["uint32"])), DTYPES["uint32"], mask=mask)


@rule("__ffs")
def bind_ffs(b: BinderLike, node, args):
    value = as_expr(args["value"], b.loc(node))
    if not value.dtype.is_int:
        raise b.error(f"T.__ffs takes an integer, got {value.dtype.name}", node)
    return ir.Call("ffs", (value,), INT32)


@rule("__fns")
def bind_fns(b: BinderLike, node, args):
    operands = tuple(as_expr(args[k], b.loc(node)) for k in ("mask", "base", "offset"))
    return ir.Call("fns", operands, DTYPES["uint32"])


@rule("infinity", "max_value", "min_value")
def bind_typed_constant(b: BinderLike, node, args):
    raise b.error("the dtype argument must be a compile-time dtype", node)


@rule("Kernel", "ClusterKernel", "Parallel", "serial", "unroll", "Pipelined", "vectorized", "grid")
def bind_misplaced_construct(b: BinderLike, node, args):
    raise b.error("this construct belongs in a 'with' or 'for' statement", node)


@rule("alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", "alloc_reducer", "alloc_global")
def bind_misplaced_alloc(b: BinderLike, node, args):
    raise b.error("allocate buffers with 'name = T.alloc_...(...)'", node)


@rule("const")
def bind_const(b: BinderLike, node, args):
    if not b.eager:
        raise b.error(
            "T.const is for eager-style @tilelang.jit kernels (no inner @T.prim_func)", node,
            "in a @T.prim_func use a factory argument, or T.dynamic for a run-time size")  # fmt: skip
    return b.declare_const(args["name"], args["dtype"], node)


@rule("empty")
def bind_empty(b: BinderLike, node, args):
    if not b.eager:
        raise b.error("T.empty is for eager-style @tilelang.jit kernels (no inner @T.prim_func)", node,
                      "in a @T.prim_func declare outputs as parameters and use out_idx")  # fmt: skip
    raise b.error("assign T.empty to a name: 'B = T.empty(shape, dtype)', then 'return B'", node)
