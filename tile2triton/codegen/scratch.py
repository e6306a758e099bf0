"""Shared memory's universal fallback: a shared buffer kept in a per-program scratch area of
global memory instead of a register tile (it serves every access the register path cannot).  On
CUDA the area can be on chip instead, a static ``.shared`` array (on_chip.py): the same views and
barriers, other accesses.

When: per shared buffer, where the register path would build a one-hot gather/scatter tile of more
than ``ONE_HOT_LIMIT`` elements or cannot express an access at all (the kernel is then lowered
again with that buffer in scratch: ``NeedsScratch``), and for every shared buffer with
``TILE2TRITON_SHARED_SCRATCH=1`` (testing, debugging).

How: the kernel takes one more, hidden, last argument (``scratch_ptr``, bytes); the runtime gives
it ``programs x scratch bytes per program`` (runtime/scratch.py) and each program offsets by its
linear program id.  Each buffer is a typed pointer into that slice, read and written like a
row-major global tensor (masked loads and stores: padded lanes and out-of-range indices touch
nothing).  Tile operations (gemm, reduce, ...) load the whole buffer as a tile and store results
back.

Barriers: Triton spreads a tile over hardware threads in its own layout, not TileLang's thread
mapping, so one TileLang thread's accesses to an element in two statements may run on two
hardware threads.  ``tl.debug_barrier()`` stands at every ``T.sync_threads()`` (rules.py), and
before a scratch access that could otherwise overtake an earlier one to the same buffer: a load
after a store, a store after a store, a store after another statement's load.  (Within one
statement the loads feed its store, which orders them.)  An atomic counts as a store, except after
atomics alone (``LoweringOptions.scratch_atomic_barriers``): atomics of one commutative kind on a
buffer since the last barrier need none between them, the final value being the same in every
order (``"reductions"``, the default: only where no previous value is used, since a lane whose two
atomics run on two hardware threads could otherwise see its own later update; ``"atomics"``: also
slot claims, ``pos = T.atomic_add(S[k], 1, return_prev=True)``; ``"keep"``: a barrier as for a
store).  A loop or branch body starts from what was pending before it plus every scratch access it
makes itself (the previous iteration).  A loop that stores and loads one scratch buffer (an atomic
does both) is not software-pipelined (``num_stages=1``).

Under ``TL_DISABLE_THREAD_STORAGE_SYNC`` (``LoweringOptions.user_syncs``) TileLang places no barrier
of its own: the program's ``T.sync_threads()`` order its threads' accesses to one another, and each
thread's own are in program order.  That holds here for accesses made where one lane is one
hardware thread (``values.lanes_are_threads``: the thread view of a 1-D block): they need no barrier
against one another, only against the other accesses (block-level tile operations, ``T.Parallel``),
whose elements Triton may place on other threads than TileLang does.  So each pending access is
recorded with its buffer and whether it was such a lane's own (a ``holder``).  A loop body starts
from a prediction of what its previous iteration left (``_reached``, from the IR); an access the
lowering then makes in a form the prediction did not hold (a loop widened into a tile axis,
local_loops.py) restarts the kernel's lowering with the model as without the pass config
(``LanesMisread``).

Atomics' scope: a shared buffer is seen by its block alone, so a relaxed atomic on its scratch copy
is ``scope="cta"`` (``LoweringOptions.scratch_cta_atomics``), as TileLang's shared-memory atomicAdd
is relaxed and block-local; Triton's default (acq_rel at GPU scope) puts ``MEMBAR.ALL.GPU`` before
each and an L1 invalidation after it (``atomic_order``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from .. import ir
from ..errors import TileLangCompileError
from ..language.dtypes import DTYPES
from . import e8m0, on_chip
from . import pyast as P
from .ptx import ptx_allowed
from .values import Lowerer, RegBuf, Tile, lanes_are_threads, load_other, next_pow2, prod

# Above this many elements (lanes x buffer positions) a one-hot gather/scatter tile is taken to cost
# more than a round trip through global memory: at 256 threads it is already 128 values per hardware
# thread for one intermediate (Triton refuses tensors over 2**20 elements; registers spill long
# before).  A judgement, not a GPU measurement.
ONE_HOT_LIMIT = 1 << 15
TRITON_MAX_NUMEL = 1 << 20  # Triton refuses larger tiles

UNKNOWN = None  # barrier state when nothing is known: anything may be pending


@dataclass
class ScratchState:
    """What the lowering of one kernel knows of its scratch buffers (``lw.scratch``)."""

    choice: set = field(default_factory=set)  # allocations the register path handed over (NeedsScratch)
    views: dict = field(default_factory=dict)  # shared ir.Buffer -> its global view
    roots: dict = field(default_factory=dict)  # global view -> the allocation whose memory it is
    base: str | None = None  # this program's slice (bytes); on chip, the static array's shared address
    param: str | None = None  # the hidden kernel argument
    bytes: int = 0  # per program
    tiles: dict = field(default_factory=dict)  # name of a whole-buffer tile -> ir.Buffer
    stored: set | None = field(default_factory=set)  # allocations stored since the last barrier
    loaded: dict | None = field(default_factory=dict)  # ... loaded (-> first statement serial)
    # ... updated by atomics (-> the set of (kind, previous value used?)); UNKNOWN with ``stored``
    atomics: dict | None = field(default_factory=dict)
    # the on-chip form (on_chip.py): the area is a static .shared array and each view has a 32-bit
    # shared address (name), not a pointer
    on_chip: bool = False
    addresses: dict = field(default_factory=dict)  # global view -> its shared address (bytes)
    # TL_DISABLE_THREAD_STORAGE_SYNC (module docstring): one lane's own accesses need no barrier
    # between them; ``predicted``: the holders each open loop or branch body was predicted to leave
    lanes_own: bool = False
    predicted: list = field(default_factory=list)
    # an element load or store at a computed position (a gather or scatter) inside a loop the kernel
    # emits (on_chip.wanted_after)
    loop_gathers: bool = False


class LanesMisread(Exception):
    """An access made in another form than its loop body's prediction held: the kernel's lowering
    restarts without ``lanes_own``."""


class NeedsScratch(Exception):
    """Lowering restarts with ``buffer`` in global scratch (raised by the register path)."""

    def __init__(self, buffer: ir.Buffer, reason: str):
        super().__init__(f"{buffer.scope} buffer '{buffer.name}' moves to global scratch: {reason}")
        self.buffer = buffer


def wanted(lw: Lowerer, buf: ir.Buffer) -> bool:
    """Is this shared allocation kept in scratch?  (A fragment only where lowering chose it: a
    one-hot access past Triton's tile limit (``check_one_hot``), or a ``T.reshape`` view with extents
    that are not powers of two.)"""
    if buf.scope == ir.FRAGMENT:
        return buf.root in lw.scratch.choice
    if buf.scope != ir.SHARED:
        return False
    if buf.alias_of is not None and buf.alias_of in lw.scratch.views:
        return True
    return lw.options.shared_scratch or buf.root in lw.scratch.choice


@contextlib.contextmanager
def register_path(lw: Lowerer, buf: ir.Buffer):
    """An access to a register-resident buffer: for a shared buffer, what the register path
    refuses moves the buffer to scratch instead of failing."""
    if buf.scope != ir.SHARED:
        yield
        return
    try:
        yield
    except TileLangCompileError as exc:
        raise NeedsScratch(buf.root, exc.message) from exc


def check_one_hot(lw: Lowerer, rb: RegBuf, positions: int) -> None:
    """A one-hot gather/scatter of ``positions`` buffer elements for every lane is about to be built.
    A shared buffer past ``ONE_HOT_LIMIT``, or a fragment past Triton's limit on a tile's size,
    moves to scratch instead (a fragment is a block-wide tile here, like a shared buffer)."""
    limit = {ir.SHARED: ONE_HOT_LIMIT, ir.FRAGMENT: TRITON_MAX_NUMEL}.get(rb.buffer.scope)
    if limit is None or lw.scope.lanes is None:
        return
    lanes = 1
    for p in lw.scope.lanes.padded:
        lanes *= p
    if lanes * positions > limit:
        raise NeedsScratch(rb.buffer.root, f"a one-hot access of {lanes} lanes x {positions} positions")


# ------------------------------------------------------------------------------ allocation
def alloc(lw: Lowerer, buf: ir.Buffer) -> None:
    """This program's slice of ``buf``: a typed pointer, named as the buffer (on chip: its shared
    address)."""
    st = lw.scratch
    if st.base is None:
        st.base = lw.names.fresh("scratch")
        st.param = None if st.on_chip else lw.names.fresh("scratch_ptr")
        if st.on_chip:  # the views with an address have no pointer
            lw.pointers.on_chip = st.addresses
    if st.on_chip and (not on_chip.serves(buf.dtype) or lw.storage_dtype(buf.dtype) != buf.dtype):
        raise on_chip.OffChip(f"a {buf.dtype.name} buffer")
    if buf.alias_of is not None:  # T.reshape: the same memory, another shape
        base = st.views[buf.alias_of]
        if st.on_chip:  # the same address, whatever the dtype
            st.views[buf] = _view(lw, buf, st.addresses[base], st.roots[base])
            return
        pointer = lw.pointers[base]
        if buf.dtype != base.dtype:  # T.view with another dtype: the same bytes, reinterpreted
            cast = P.call(P.attr(P.name(pointer), "to"), P.call("tl.pointer_type", P.dtype(buf.dtype)), bitcast=True)
            pointer = lw.assign(buf.name, cast)
        st.views[buf] = _view(lw, buf, pointer, st.roots[base])
        return
    offset = st.bytes
    size = prod(buf.shape) * max(1, buf.dtype.bits // 8)
    st.bytes = offset + (size + 15) // 16 * 16  # every buffer 16-byte aligned
    at = P.name(st.base) if offset == 0 else P.binop("+", P.name(st.base), P.const(offset))
    if not st.on_chip:
        at = P.call(P.attr(at, "to"), P.call("tl.pointer_type", P.dtype(buf.dtype)), bitcast=True)
    st.views[buf] = _view(lw, buf, lw.assign(buf.name, at), buf)


def _view(lw: Lowerer, buf: ir.Buffer, pointer: str, root: ir.Buffer) -> ir.Buffer:
    """``buf`` as a row-major global tensor at ``pointer`` (so global loads and stores serve it);
    ``roots`` records the allocation whose memory it is (barriers are placed per allocation).  On
    chip ``pointer`` is a shared address, and a lowering that asks for the view's pointer is one
    the on-chip form does not serve (``on_chip.PointerTable``)."""
    strides, running = [], 1
    for d in reversed(buf.shape):
        strides.append(running)
        running *= d
    view = ir.Buffer(buf.name, ir.GLOBAL, tuple(buf.shape), buf.dtype, buf.loc, tuple(reversed(strides)))
    lw.scratch.roots[view] = root
    if lw.scratch.on_chip:
        lw.scratch.addresses[view] = pointer
    else:
        lw.pointers[view] = pointer
    return view


def prologue(lw: Lowerer, kernel: ir.Kernel) -> list:
    """``scratch``: this program's slice (the program's linear id times the bytes per program); on
    chip, the shared address of a static array of the bytes one program needs."""
    if lw.scratch.on_chip:
        stmt = P.assign(lw.scratch.base, on_chip.declare(lw.scratch.bytes))
        stmt.t2t_origin = kernel.loc
        return [stmt]
    program = None
    scale = None
    for axis in range(len(kernel.grid)):
        pid = P.call("tl.program_id", axis)
        term = pid if scale is None else P.binop("*", pid, scale)
        program = term if program is None else P.binop("+", program, term)
        count = P.call("tl.num_programs", axis)
        scale = count if scale is None else P.binop("*", scale, count)
    program_name = lw.names.fresh("program")
    offset = P.binop("*", P.to(P.name(program_name), DTYPES["int64"]), P.const(lw.scratch.bytes))
    stmts = [
        P.assign(program_name, program),
        P.assign(lw.scratch.base, P.binop("+", P.name(lw.scratch.param), offset)),
    ]
    for s in stmts:
        s.t2t_origin = kernel.loc
    return stmts


# ------------------------------------------------------------------------------ element access
def load(lw: Lowerer, buf: ir.Buffer, indices) -> Tile:
    view = lw.scratch.views[buf]
    idx = [lw.ev(i) for i in indices]
    before_access(lw, view, store=False)
    _note_gather(lw, indices)
    return lw.global_load(view, idx, list(indices))


def store(lw: Lowerer, buf: ir.Buffer, indices, value: Tile) -> None:
    view = lw.scratch.views[buf]
    idx = [lw.ev(i) for i in indices]
    before_access(lw, view, store=True)
    _note_gather(lw, indices)
    lw.global_store(view, idx, list(indices), value)


def _note_gather(lw: Lowerer, indices) -> None:
    """``ScratchState.loop_gathers``: an element access inside an emitted loop at a position that is not
    affine in the lanes (``i ^ (1 << s)``, ``(i + 7) % n``, a loaded index): one element a lane, which
    global memory cannot vectorize either.  Only asked while it can still matter: in a loop, with the
    area in global memory and no gather seen yet (the interpreter and AMD never take the form)."""
    st = lw.scratch
    if not lw.scope.loop_depth or st.loop_gathers or st.on_chip or not ptx_allowed(lw.options):
        return
    if not all(_affine(lw, i, 0) for i in indices):
        st.loop_gathers = True


# variables with one value across a block's lanes: a uniform offset keeps an access affine
_UNIFORM_KINDS = frozenset({"block", "size", "param", "loop"})


def _let_value(lw: Lowerer, e: ir.Expr, depth: int) -> ir.Expr | None:
    if isinstance(e, ir.VarRef) and depth < 8:
        return lw.once_lets.get(e.var)
    return None


def _uniform(lw: Lowerer, e: ir.Expr, depth: int) -> bool:
    if isinstance(e, ir.Const):
        return True
    if isinstance(e, ir.VarRef):
        value = _let_value(lw, e, depth)
        return e.var.kind in _UNIFORM_KINDS if value is None else _uniform(lw, value, depth + 1)
    if isinstance(e, (ir.BinOp, ir.Compare)):
        return _uniform(lw, e.lhs, depth) and _uniform(lw, e.rhs, depth)
    if isinstance(e, (ir.Cast, ir.UnaryOp)):
        return _uniform(lw, e.value if isinstance(e, ir.Cast) else e.operand, depth)
    return False


def _affine(lw: Lowerer, e: ir.Expr, depth: int) -> bool:
    """``e`` is a sum of variables times block-uniform factors, plus a uniform offset."""
    if _uniform(lw, e, depth):
        return True
    if isinstance(e, ir.VarRef):
        value = _let_value(lw, e, depth)
        return value is None or _affine(lw, value, depth + 1)
    if isinstance(e, ir.Cast):
        return _affine(lw, e.value, depth)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        return _affine(lw, e.lhs, depth) and _affine(lw, e.rhs, depth)
    if isinstance(e, ir.BinOp) and e.op == "*":
        return (_uniform(lw, e.lhs, depth) and _affine(lw, e.rhs, depth)) or (
            _uniform(lw, e.rhs, depth) and _affine(lw, e.lhs, depth)
        )
    return False


def atomic_target(lw: Lowerer, buf: ir.Buffer, s: ir.Atomic | None = None) -> ir.Buffer:
    """The global view an atomic on shared ``buf`` updates (the buffer moves to scratch)."""
    if buf not in lw.scratch.views:
        raise NeedsScratch(buf.root, "an atomic on shared memory")
    view = lw.scratch.views[buf]
    before_access(lw, view, store=True, atomic=_atomic_key(s) if s is not None else None)
    return view


# atomics whose updates commute with one another (an exchange or a load does not)
_COMMUTING = frozenset({"add", "max", "min", "and", "or", "xor"})


def _atomic_key(s: ir.Atomic) -> tuple | None:
    """(kind, previous value used?) of an atomic that may follow atomics without a barrier."""
    return (s.kind, s.result is not None) if s.kind in _COMMUTING else None


def atomic_order(lw: Lowerer, s: ir.Atomic) -> dict:
    """``sem=``/``scope=`` of an atomic on a scratch-backed shared buffer: the source's order, and
    block scope where it is relaxed (the buffer is the block's alone); ``{}`` (Triton's acq_rel at
    GPU scope) without ``scratch_cta_atomics``."""
    if not lw.options.scratch_cta_atomics or s.kind == "load":
        return {}
    sem = {"relaxed": "relaxed", "consume": "acquire", "acquire": "acquire", "release": "release"}.get(s.order)
    if sem is None:
        return {}
    if sem == "relaxed":
        return {"sem": P.const(sem), "scope": P.const("cta")}
    return {"sem": P.const(sem)}


# ------------------------------------------------------------------------------ whole tiles
def tile(lw: Lowerer, buf: ir.Buffer) -> RegBuf:
    """``buf`` loaded whole as a padded register tile, for a tile operation; a tile operation that
    assigns it stores it back (``write_back``)."""
    view = lw.scratch.views[buf]
    shape = tuple(next_pow2(d) for d in buf.shape)
    if all(d == 1 for d in buf.shape):
        shape = ()
    offs, mask = _whole(lw, view, shape)
    before_access(lw, view, store=False)
    if view in lw.scratch.addresses:
        node = on_chip.load(lw, view, offs, mask)
    else:
        ptr = P.binop("+", P.name(lw.pointers[view]), offs) if offs is not None else P.name(lw.pointers[view])
        node = (
            P.call("tl.load", ptr, mask=mask, other=load_other(buf.dtype))
            if mask is not None
            else P.call("tl.load", ptr)
        )
    if e8m0.is_e8m0(buf.dtype):
        node = e8m0.decode(lw, node)
    elif lw.storage_dtype(buf.dtype) != buf.dtype:
        node = P.to(node, lw.storage_dtype(buf.dtype))
    name = lw.assign(f"{buf.name}_tile", node)
    lw.scratch.tiles[name] = buf
    return RegBuf(buf, name, shape)


def write_back(lw: Lowerer, name: str) -> None:
    buf = lw.scratch.tiles.get(name)
    if buf is None:
        return
    view = lw.scratch.views[buf]
    shape = tuple(next_pow2(d) for d in buf.shape) if not all(d == 1 for d in buf.shape) else ()
    offs, mask = _whole(lw, view, shape)
    before_access(lw, view, store=True)
    value = P.name(name)
    if view in lw.scratch.addresses:
        on_chip.store(lw, view, offs, mask, value)
        return
    ptr = P.binop("+", P.name(lw.pointers[view]), offs) if offs is not None else P.name(lw.pointers[view])
    if lw.options.interpret and buf.dtype.name == "bfloat16":
        lw.helpers.add("_round_to_bf16")
        value = P.call("_round_to_bf16", value)
    if e8m0.is_e8m0(buf.dtype):
        value = e8m0.encode(lw, value)
    kwargs = {"mask": mask} if mask is not None else {}
    lw.emit(P.expr_stmt(P.call("tl.store", ptr, value, **kwargs)))


def _whole(lw: Lowerer, view: ir.Buffer, shape: tuple):
    """Offsets and mask of every element of ``view``, laid out as a tile of ``shape``."""
    if not shape:
        return None, None
    rank = len(shape)
    offs, parts = None, []
    for d, (extent, padded) in enumerate(zip(view.shape, shape)):
        position = P.expand(P.call("tl.arange", 0, padded), d, rank)
        term = position if view.strides[d] == 1 else P.binop("*", position, P.const(view.strides[d]))
        offs = term if offs is None else P.binop("+", offs, term)
        if padded != extent:
            parts.append(P.binop("<", position, P.const(extent)))
    return lw.named(offs, "offs"), lw.named(P.and_all(parts), "mask")


# ------------------------------------------------------------------------------ barriers
def before_access(lw: Lowerer, view: ir.Buffer, store: bool, atomic: tuple | None = None) -> None:
    """Place a barrier if this access could overtake an earlier one to the same buffer; ``atomic``:
    the access is a commuting atomic (``_atomic_key``), which may follow atomics alone."""
    st = lw.scratch
    root = st.roots[view]
    own = _lanes_own(lw)
    if st.lanes_own and not own:
        _check_predicted(lw, root)
    holders = [(root, False)] if own else [(root, False), (root, True)]  # whom this access may overtake
    need = st.stored is UNKNOWN or any(h in st.stored for h in holders)
    if not need:
        need = any(h in st.atomics and not _atomics_commute(lw, st.atomics[h], atomic) for h in holders)
    if store and not need:  # a load by an earlier statement (the loads of this one feed the store)
        need = st.loaded is UNKNOWN or any(
            st.loaded.get(h, lw.statement_serial) != lw.statement_serial for h in holders
        )
    if need:
        barrier(lw)
    holder = (root, own)
    if atomic is not None:
        st.atomics.setdefault(holder, set()).add(atomic)
    elif store:
        st.stored.add(holder)
    elif st.loaded is not UNKNOWN:
        st.loaded.setdefault(holder, lw.statement_serial)


def _lanes_own(lw: Lowerer) -> bool:
    """Is this access its lane's own, one that needs no barrier against the lane's others?"""
    return lw.scratch.lanes_own and lanes_are_threads(lw)


def _check_predicted(lw: Lowerer, root: ir.Buffer) -> None:
    """An access that is no lane's own, in a body predicted to make none to its buffer: the
    body's first accesses were placed without a barrier against it (the lowering restarts without
    ``lanes_own``, where nothing is checked)."""
    for predicted in lw.scratch.predicted:
        if predicted is not None and (root, False) not in predicted:
            raise LanesMisread(root.name)


def _atomics_commute(lw: Lowerer, pending: set, atomic: tuple | None) -> bool:
    """May ``atomic`` follow the ``pending`` atomics on its buffer with no barrier between?"""
    level = lw.options.scratch_atomic_barriers
    if atomic is None or level == "keep":
        return False
    kinds = {kind for kind, _ in pending} | {atomic[0]}
    if len(kinds) != 1:
        return False
    return level == "atomics" or not any(used for _, used in pending | {atomic})


def barrier(lw: Lowerer, why: str = "") -> None:
    stmt = P.expr_stmt(P.call("tl.debug_barrier"))
    if why:
        stmt.t2t_note = why  # a comment above it (codegen/emit.py's printer)
    lw.emit(stmt)
    lw.scratch.stored, lw.scratch.loaded, lw.scratch.atomics = set(), {}, {}


@contextlib.contextmanager
def body(lw: Lowerer, stmts):
    """A loop or branch body: at its start, what was pending before it and whatever it accesses
    itself (the previous iteration) may be pending; after it, the same (it may not run at all)."""
    st = lw.scratch
    saved = st.stored, st.loaded, st.atomics
    reached = (UNKNOWN, UNKNOWN, UNKNOWN) if stmts is None else _reached(lw, stmts)
    merged = _merge(saved, *reached)
    st.stored, st.loaded, st.atomics = merged
    st.predicted.append(None if stmts is None else reached[0] | set(reached[1]) | set(reached[2]))
    try:
        yield
    finally:
        st.predicted.pop()
        st.stored, st.loaded, st.atomics = _merge(merged, set(), set(), {})


def _merge(state, stored, loaded, atomics):
    """``state`` (stores, loads, atomics) plus these (the loads as loads by an earlier statement)."""
    before_stored, before_loaded, before_atomics = state
    if stored is UNKNOWN or before_stored is UNKNOWN:
        return UNKNOWN, UNKNOWN, UNKNOWN  # anything may be pending: the next access waits
    out_stored = set(before_stored) | stored
    if loaded is UNKNOWN or before_loaded is UNKNOWN:
        out_loaded = UNKNOWN
    else:
        out_loaded = dict(before_loaded)
        for holder in loaded:
            out_loaded[holder] = -1
    out_atomics = {holder: set(keys) for holder, keys in before_atomics.items()}
    for holder, keys in atomics.items():
        out_atomics.setdefault(holder, set()).update(keys)
    return out_stored, out_loaded, out_atomics


def unsafe_to_pipeline(lw: Lowerer, stmts) -> bool:
    """Does a loop body load a scratch buffer it also stores (an atomic does both)?  Triton's
    software pipeliner would issue the next iteration's loads ahead of this iteration's stores and
    barriers."""
    stored, loaded, atomics = _reached(lw, stmts)
    written = {root for root, _ in stored | set(atomics)}
    read = {root for root, _ in loaded | set(atomics)}
    return bool(written & read)


def _reached(lw: Lowerer, stmts) -> tuple[set, set, dict]:
    """The holders (allocation, a lane's own?) of what ``stmts`` store, load and update by commuting
    atomics."""
    stored, loaded, atomics = set(), set(), {}
    for st, own in _walk_owned(stmts, _lanes_own(lw)):
        for b, access in _accesses(st):
            if not wanted(lw, b):
                continue
            holder = (b.root, own)
            if isinstance(access, tuple):
                atomics.setdefault(holder, set()).add(access)
            else:
                (stored if access else loaded).add(holder)
    return stored, loaded, atomics


# statements whose accesses are made by each lane itself where the lanes are threads (not tile
# operations, which act for the block, nor T.Parallel, whose lanes are its own)
_LANE_STATEMENTS = (ir.Let, ir.Store, ir.If, ir.For, ir.While, ir.DeviceAssert, ir.Print)


def _walk_owned(stmts, own: bool):
    """Every statement, depth first, and whether its accesses are predicted to be its lane's own."""
    for s in stmts:
        mine = own and (isinstance(s, _LANE_STATEMENTS) or (isinstance(s, ir.Atomic) and isinstance(s.dst, ir.Load)))
        yield s, mine
        for attr in ("body", "then_body", "else_body"):
            child = getattr(s, attr, None)
            if child:
                yield from _walk_owned(child, mine)


def _accesses(s: ir.Stmt):
    """(buffer, written?) for the buffers statement ``s`` itself reads or writes; an element atomic
    that commutes (``_atomic_key``) gives (buffer, its key) for its destination instead."""
    if isinstance(s, ir.Atomic) and isinstance(s.dst, ir.Load) and _atomic_key(s) is not None:
        yield s.dst.buffer, _atomic_key(s)
        for e in [*s.dst.indices, *ir.region_exprs(s.value)]:
            yield from ((sub.buffer, False) for sub in ir.iter_expr_tree(e) if isinstance(sub, ir.Load))
        return
    for load in ir.loads_in(s):
        yield load.buffer, False
    if isinstance(s, ir.Store):
        yield s.buffer, True
    written = {"dst", "c"}
    for attr in ("src", "dst", "a", "b", "c", "value"):
        part = getattr(s, attr, None)
        buf = part.buffer if isinstance(part, (ir.Region, ir.Load)) else part
        if isinstance(buf, ir.Buffer):
            yield buf, False
            if attr in written:
                yield buf, True
