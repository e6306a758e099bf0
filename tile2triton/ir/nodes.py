"""TileIR: the typed program tile2triton lowers.  Every node keeps the user's source location.

Expressions are small immutable trees; statements hold lists of statements.  Buffers are
identified by object identity (two buffers may share a name in different scopes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..language.dtypes import DType


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int = 0
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


UNKNOWN_LOC = Loc("<unknown>", 0)


# ----------------------------------------------------------------------------- buffers, vars
GLOBAL, SHARED, FRAGMENT, LOCAL, VAR = "global", "shared", "fragment", "local", "var"


@dataclass(eq=False)
class Buffer:
    name: str
    scope: str
    shape: tuple  # ints, or Expr for dynamic global dims
    dtype: DType
    loc: Loc = UNKNOWN_LOC
    strides: tuple | None = None  # global buffers: ints or Expr
    alias_of: Buffer | None = None  # ``T.Tensor(shape, dtype, A.data)``: a view of A's memory
    address: Expr | None = None  # ``T.make_tensor``: memory at a raw address (see ``MakeTensor``)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.scope}, {self.shape}, {self.dtype.name})"

    @property
    def root(self) -> Buffer:
        """The parameter whose memory this buffer is (itself unless it is a view)."""
        return self.alias_of.root if self.alias_of is not None else self


@dataclass(eq=False)
class Var:
    """A scalar name: block index, loop variable, let-bound value, size or scalar parameter."""

    name: str
    dtype: DType
    kind: str  # "block", "thread", "loop", "lane", "let", "size", "param"

    def __repr__(self) -> str:
        return f"Var({self.name})"


# ----------------------------------------------------------------------------- expressions
class Expr:
    dtype: DType


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: object
    dtype: DType
    weak: bool = False  # a bare Python literal: adopts the other operand's dtype


@dataclass(frozen=True, eq=False)
class VarRef(Expr):
    var: Var

    @property
    def dtype(self) -> DType:
        return self.var.dtype


@dataclass(frozen=True, eq=False)
class Load(Expr):
    buffer: Buffer
    indices: tuple
    loc: Loc = UNKNOWN_LOC

    @property
    def dtype(self) -> DType:
        return self.buffer.dtype


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    op: str  # + - * / // % ** & | ^ << >> and or
    lhs: Expr
    rhs: Expr
    dtype: DType


@dataclass(frozen=True, eq=False)
class Compare(Expr):
    op: str  # < <= > >= == !=
    lhs: Expr
    rhs: Expr
    dtype: DType


@dataclass(frozen=True, eq=False)
class UnaryOp(Expr):
    op: str  # - not ~
    operand: Expr
    dtype: DType


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """An element-wise intrinsic (exp, max, floor, ...)."""

    fn: str
    args: tuple
    dtype: DType


@dataclass(frozen=True, eq=False)
class InlineAsm(Expr):
    """``T.inline_asm``: element-wise inline PTX."""

    asm: str
    constraints: str
    args: tuple
    dtype: DType
    is_pure: bool
    pack: int
    loc: Loc = UNKNOWN_LOC


@dataclass(frozen=True, eq=False)
class WarpOp(Expr):
    """A collective over a group of threads (``T.warp_reduce_*``, votes, shuffles, matches; a
    warp of 32 threads, or the whole block for ``T.syncthreads_count/and/or``): each thread's
    value depends on the operands of the other threads of its group (codegen/warp.py).  Threads
    are grouped by TileLang's linear thread index, ``tx + ty * X + tz * X * Y``."""

    op: str  # a key of codegen/warp.py's WARP_LOWERINGS
    args: tuple  # the operands (value, then the source lane / delta / base ... the op takes)
    dtype: DType
    group: int = 32  # threads per group (a warp); 0: the whole block
    mask: Expr | None = None  # the lanes taking part (a 32-bit lane mask); None: every lane


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    value: Expr
    dtype: DType


@dataclass(frozen=True, eq=False)
class Select(Expr):
    cond: Expr
    true_value: Expr
    false_value: Expr
    dtype: DType


# ----------------------------------------------------------------------------- tile operands
@dataclass(frozen=True, eq=False)
class Region:
    """``buffer[starts : starts + extents]`` as a tile-op operand (extents are static ints or Expr)."""

    buffer: Buffer
    starts: tuple
    extents: tuple

    def is_whole(self) -> bool:
        return all(isinstance(s, Const) and s.value == 0 for s in self.starts) and tuple(self.extents) == tuple(
            self.buffer.shape
        )


# ----------------------------------------------------------------------------- statements
@dataclass(eq=False)
class Stmt:
    loc: Loc


@dataclass(eq=False)
class Alloc(Stmt):
    buffer: Buffer
    init: Expr | None = None  # alloc_var's initial value


@dataclass(eq=False)
class Let(Stmt):
    """``name = value``: binds (or, for a name bound before, rebinds) a scalar."""

    var: Var
    value: Expr


@dataclass(eq=False)
class MakeTensor(Stmt):
    """``T.make_tensor``: where the kernel turns ``buffer.address`` (a ``T.ptr`` parameter or an
    int64 address) into the typed pointer that ``buffer``'s accesses use."""

    buffer: Buffer


@dataclass(eq=False)
class Store(Stmt):
    buffer: Buffer
    indices: tuple
    value: Expr


@dataclass(eq=False)
class For(Stmt):
    var: Var
    start: Expr
    stop: Expr
    step: Expr
    kind: str  # serial, unroll, pipelined, vectorized
    body: list
    num_stages: int | None = None


@dataclass(eq=False)
class Parallel(Stmt):
    vars: list
    extents: list  # static ints
    body: list


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: list


@dataclass(eq=False)
class Break(Stmt):
    """``break``: leaves the innermost sequential loop (``T.serial`` / ``T.unroll`` / ``range`` / ``while``);
    in a lane space (the thread view, a ``T.Parallel`` body) each lane leaves on its own."""


@dataclass(eq=False)
class Continue(Stmt):
    """``continue``: ends this iteration of the innermost sequential loop (per lane, like ``Break``)."""


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then_body: list
    else_body: list


@dataclass(eq=False)
class Copy(Stmt):
    src: object  # Region, or Expr for a scalar copy
    dst: object
    disable_tma: bool = False  # T.copy(..., disable_tma=True): plain loads, never a tensor descriptor (TMA)


@dataclass(eq=False)
class GuardedCopy(Stmt):
    """``copy`` (global tile into a register buffer) issued ahead of the ``if cond`` that held it
    (codegen/speculate.py): its loads are masked by ``cond``.  Where ``cond`` is false the
    destination holds zeros, and nothing reads it there."""

    copy: Copy
    cond: Expr


@dataclass(eq=False)
class Fill(Stmt):
    dst: Region
    value: Expr


@dataclass(eq=False)
class Gemm(Stmt):
    a: Region
    b: Region
    c: Region
    trans_a: bool
    trans_b: bool
    clear_accum: Expr  # Const(False) unless given


@dataclass(eq=False)
class Reduce(Stmt):
    kind: str  # sum, max, min, abssum, absmax
    src: Region
    dst: Region
    dim: int
    clear: bool
    nan_propagate: bool = False  # max/min/absmax: a NaN in a row makes the row's result NaN


@dataclass(eq=False)
class Scan(Stmt):
    """An inclusive scan along ``dim``: ``T.cumsum`` (op "sum") or ``T.cummax`` (op "max")."""

    src: Region
    dst: Region
    dim: int
    reverse: bool
    op: str  # "sum" or "max"


@dataclass(eq=False)
class Atomic(Stmt):
    kind: str  # add, max, min, or, xchg (T.atomic_store), load (T.atomic_load: value is None)
    dst: object  # Region (tile form) or Load (element form)
    value: object  # Region or Expr
    result: Var | None = None  # element form: bound to the previous value (return_prev=True)
    # TileLang's memory order ("relaxed", ..., "seq_cst"); None: Triton's strongest (acq_rel)
    order: str | None = None


@dataclass(eq=False)
class ThreadAllReduce(Stmt):
    """``T.tvm_thread_allreduce`` in a ``T.attr(T.comm_reducer(...), "reduce_scope", ...)``: in every
    thread, ``dst`` (an element of a per-thread buffer) gets ``op`` over ``value`` of the threads
    that differ from it only in ``threads`` (thread variables)."""

    op: str  # sum, prod, max, min, and, or, xor
    value: Expr
    dst: Load
    threads: tuple


@dataclass(eq=False)
class Barrier(Stmt):
    """T.sync_threads(), or one a pass places; ``why``: its reason, a comment in the generated source."""

    why: str = ""


@dataclass(eq=False)
class GridBarrier(Stmt):
    """``T.sync_grid()`` (scope "grid"), ``T.cluster_wait()`` / ``T.cluster_sync()`` (scope "cluster"):
    a barrier among blocks.  ``passes/grid_split.py`` splits the kernel there into consecutive launches
    (or, for a cluster barrier no global value can cross, makes it a block barrier); none reaches codegen."""

    scope: str = "grid"


@dataclass(eq=False)
class Print(Stmt):
    value: Expr | None
    msg: str


@dataclass(eq=False)
class DeviceAssert(Stmt):
    """T.device_assert(cond, msg): a run-time check of every lane's ``cond``."""

    cond: Expr
    msg: str


@dataclass(eq=False)
class SafeValues(Stmt):
    """Where a ``T.sblock`` scope starts or ends: from here on (to the next ``SafeValues`` of the
    same body), out-of-bounds global loads read these values (``T.annotate_safe_value``).  The map
    is the union of ``layers`` in order, the kernel's first, each inner block's overriding; they are
    filled while the block's body binds, so it is read when lowering."""

    layers: tuple  # of dict: global Buffer -> value

    def values(self) -> dict:
        merged: dict = {}
        for layer in self.layers:
            merged.update(layer)
        return merged


@dataclass(eq=False)
class Kernel(Stmt):
    name: str
    grid: list  # Expr per axis
    threads: int
    block_vars: list
    body: list
    thread_vars: list = field(default_factory=list)  # thread view: [tx, ty, tz][:len(thread_extents)], once used
    thread_extents: tuple = ()  # threads per dim (x, y, z); ``threads`` is their product
    swizzle: tuple | None = None  # T.use_swizzle(panel, order): block rasterization (a bijection)
    safe_values: dict = field(default_factory=dict)  # T.annotate_safe_value: global Buffer -> what its OOB loads read
    # warp-specialized: the threads of its non-producer sections (frontend/warp_sections.py)
    compute_threads: int | None = None
    # one chain of thread-range sections without barriers: its widest section's threads (the same)
    section_threads: int | None = None


@dataclass(eq=False)
class PrimFunc:
    name: str
    params: list  # Buffer (global) or Var (scalar / size)
    kernels: list  # Kernel, in launch order
    out_idx: list  # indices into params of outputs allocated by the runtime
    sizes: list  # Var of dynamic sizes, bound from tensor shapes at call time
    loc: Loc = UNKNOWN_LOC
    constants: dict = field(default_factory=dict)  # name -> int/float bound at compile time
    attrs: dict = field(default_factory=dict)  # T.annotate_pass_configs / annotate_compile_flags values
    workspaces: list = field(default_factory=list)  # indices into params of T.alloc_global buffers


def walk(stmts):
    """Yield every statement, depth first, in program order."""
    for s in stmts:
        yield s
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                yield from walk(child)


def has_gemm(stmts) -> bool:
    """Whether a ``Gemm`` is among ``stmts`` or nested in them."""
    return any(isinstance(s, Gemm) for s in walk(stmts))


def loop_exits(body) -> set:
    """The ``Break`` / ``Continue`` types that leave the loop whose body is ``body`` (those of loops
    nested in it leave those loops)."""
    found = set()
    for s in body:
        if isinstance(s, (Break, Continue)):
            found.add(type(s))
        elif isinstance(s, If):
            found |= loop_exits(s.then_body) | loop_exits(s.else_body)
    return found


def child_exprs(e):
    """The direct sub-expressions of an expression."""
    if isinstance(e, Load):
        return e.indices
    if isinstance(e, (BinOp, Compare)):
        return (e.lhs, e.rhs)
    if isinstance(e, (UnaryOp,)):
        return (e.operand,)
    if isinstance(e, Cast):
        return (e.value,)
    if isinstance(e, (Call, InlineAsm)):
        return e.args
    if isinstance(e, WarpOp):
        return e.args if e.mask is None else (*e.args, e.mask)
    if isinstance(e, Select):
        return (e.cond, e.true_value, e.false_value)
    return ()


def iter_expr_tree(e):
    yield e
    for c in child_exprs(e):
        yield from iter_expr_tree(c)


def region_exprs(r):
    if isinstance(r, Region):
        return list(r.starts) + [x for x in r.extents if isinstance(x, Expr)]
    if isinstance(r, Expr):
        return [r]
    return []


def stmt_exprs(s):
    """Expressions a statement evaluates itself (not those of nested statements)."""
    if isinstance(s, Let):
        return [s.value]
    if isinstance(s, Store):
        return list(s.indices) + [s.value]
    if isinstance(s, Alloc):
        return [s.init] if s.init is not None else []
    if isinstance(s, MakeTensor):
        return [s.buffer.address]
    if isinstance(s, For):
        return [s.start, s.stop, s.step]
    if isinstance(s, (If, While)):
        return [s.cond]
    if isinstance(s, Copy):
        return region_exprs(s.src) + region_exprs(s.dst)
    if isinstance(s, Fill):
        return region_exprs(s.dst) + [s.value]
    if isinstance(s, Gemm):
        return region_exprs(s.a) + region_exprs(s.b) + region_exprs(s.c) + [s.clear_accum]
    if isinstance(s, (Reduce, Scan)):
        return region_exprs(s.src) + region_exprs(s.dst)
    if isinstance(s, Atomic):
        return region_exprs(s.dst) + region_exprs(s.value)
    if isinstance(s, Print):
        return [s.value] if isinstance(s.value, Expr) else []
    if isinstance(s, DeviceAssert):
        return [s.cond]
    if isinstance(s, ThreadAllReduce):
        return [s.value, s.dst, *s.threads]
    if isinstance(s, Kernel):
        return list(s.grid)
    return []


def operand_buffers(s) -> set:
    """Buffers a statement names as operands (regions or whole buffers), not through element loads."""
    out = set()
    for value in vars(s).values():
        for v in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(v, Region):
                out.add(v.buffer)
            elif isinstance(v, Buffer):
                out.add(v)
    return out


def loads_in(s):
    """Every Load a statement's own expressions perform."""
    for e in stmt_exprs(s):
        for sub in iter_expr_tree(e):
            if isinstance(sub, Load):
                yield sub
