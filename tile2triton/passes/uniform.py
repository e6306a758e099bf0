"""Which thread-private scalars of a thread-view kernel hold the same value in every thread.

In the thread view (``tx = T.get_thread_binding()``) a ``T.alloc_var`` is private to each thread and
lowers to one value per thread.  Kernels often keep block-wide values in them (a count read back
from shared memory, a bound from a global tensor) and then use them where TileLang needs the whole
block to agree: a loop bound, a ``break`` before a ``T.sync_threads()``.  Such a variable is
*uniform*: every write to it stores a value that does not depend on the thread, and happens where
every thread of the block gets (no ``if`` on a per-thread value around it, no loop that some threads
leave earlier).  Codegen keeps a uniform variable as one scalar for the block."""

from __future__ import annotations

from .. import ir

PRIVATE = (ir.LOCAL, ir.VAR)


def uniform_buffers(kernel: ir.Kernel) -> frozenset:
    """The one-element ``T.alloc_var`` / ``T.alloc_local`` buffers of ``kernel``'s own body (not of a
    ``T.Parallel`` body) whose value is the same in every thread."""
    return _Uniformity(kernel).result()


def per_thread_fragments(kernel: ir.Kernel) -> frozenset:
    """``T.alloc_fragment`` buffers that TileLang keeps per thread in a thread-view kernel: only read
    and written element by element outside ``T.Parallel`` and tile operations, and written there with
    a value that differs between threads (``frag[i] = Idx[tx // 8]``).  TileLang then gives each
    thread its own registers; as one block-wide tile the threads' writes would collide.  Codegen
    keeps them like ``T.alloc_local`` arrays: one value per thread."""
    analysis = _Uniformity(kernel, fragments=True)
    analysis.result()
    return frozenset(analysis.private_fragments)


class _Uniformity:
    def __init__(self, kernel: ir.Kernel, fragments: bool = False):
        self.kernel = kernel
        self.varying_vars: set = set(kernel.thread_vars)
        self.varying_bufs: set = set()
        self.candidates: set = set()
        # fragments that may be per thread (element accesses outside T.Parallel only), and those that are
        self.element_fragments = _element_only_fragments(kernel) if fragments or kernel.thread_vars else set()
        self.private_fragments: set = set()

    def result(self) -> frozenset:
        # the facts only grow (a value once per-thread stays so): repeat until nothing changes
        while True:
            before = (len(self.varying_vars), len(self.varying_bufs), len(self.private_fragments))
            self.block(self.kernel.body, varying=False, top=True)
            if (len(self.varying_vars), len(self.varying_bufs), len(self.private_fragments)) == before:
                return frozenset(self.candidates - self.varying_bufs)

    # ------------------------------------------------------------------ expressions
    def varies(self, e) -> bool:
        if e is None or isinstance(e, (int, float, bool)):
            return False
        for sub in ir.iter_expr_tree(e):
            if isinstance(sub, ir.VarRef) and sub.var in self.varying_vars:
                return True
            if isinstance(sub, ir.Load) and sub.buffer.scope in PRIVATE and sub.buffer not in self.candidates:
                return True  # a private buffer of a T.Parallel body, or one with several elements
            if isinstance(sub, ir.Load) and (sub.buffer in self.varying_bufs or sub.buffer in self.private_fragments):
                return True
            if isinstance(sub, ir.InlineAsm):
                return True
            if isinstance(sub, ir.Call) and sub.fn.startswith("ptx_") and not sub.args:
                return True  # T.ptx_laneid / warpid / clock64 ...: read per thread
        return False

    def written(self, buf, varying: bool) -> None:
        if varying and buf is not None and buf.scope in PRIVATE:
            self.varying_bufs.add(buf)

    # ------------------------------------------------------------------ statements
    def block(self, stmts, varying: bool, top: bool = False) -> None:
        for s in stmts:
            self.stmt(s, varying, top)

    def stmt(self, s, varying: bool, top: bool) -> None:
        if isinstance(s, ir.Alloc):
            buf = s.buffer
            if buf.scope in PRIVATE and top and buf.alias_of is None and all(d == 1 for d in buf.shape):
                self.candidates.add(buf)
            self.written(buf, varying or self.varies(s.init))
        elif isinstance(s, ir.Let):
            if varying or self.varies(s.value):
                self.varying_vars.add(s.var)
        elif isinstance(s, ir.Store):
            differs = varying or any(self.varies(e) for e in (*s.indices, s.value))
            self.written(s.buffer, differs)
            if differs and top and s.buffer in self.element_fragments:
                self.private_fragments.add(s.buffer)
        elif isinstance(s, ir.For):
            bounds = any(self.varies(e) for e in (s.start, s.stop, s.step))
            if bounds:
                self.varying_vars.add(s.var)
            self.block(s.body, varying or bounds or self.varying_exit(s.body), top)
        elif isinstance(s, ir.While):
            self.block(s.body, varying or self.varies(s.cond) or self.varying_exit(s.body), top)
        elif isinstance(s, ir.If):
            inner = varying or self.varies(s.cond)
            self.block(s.then_body, inner, top)
            self.block(s.else_body, inner, top)
        elif isinstance(s, ir.Parallel):
            self.varying_vars.update(s.vars)
            self.block(s.body, True, False)
        elif isinstance(s, ir.Atomic):
            if s.result is not None:
                self.varying_vars.add(s.result)  # every thread gets another previous value
            self.written(_dst_buffer(s.dst), True)
        elif isinstance(s, (ir.Copy, ir.Fill, ir.Reduce, ir.Scan, ir.Gemm, ir.ThreadAllReduce)):
            for dst in (getattr(s, "dst", None), getattr(s, "c", None)):
                self.written(_dst_buffer(dst), True)

    def varying_exit(self, body) -> bool:
        """Whether some thread may leave the loop (break/continue) while others go on."""
        for s in body:
            if isinstance(s, ir.If) and ir.loop_exits([s]):
                if self.varies(s.cond) or self.varying_exit(s.then_body) or self.varying_exit(s.else_body):
                    return True
        return False


def _dst_buffer(dst):
    if isinstance(dst, ir.Region):
        return dst.buffer
    if isinstance(dst, ir.Load):
        return dst.buffer
    return None


def _element_only_fragments(kernel: ir.Kernel) -> set:
    """The fragments of ``kernel`` used only by element loads and stores outside ``T.Parallel``."""
    fragments = {s.buffer for s in ir.walk(kernel.body) if isinstance(s, ir.Alloc) and s.buffer.scope == ir.FRAGMENT}
    tiled: set = set()

    def scan(stmts, in_parallel: bool) -> None:
        for s in stmts:
            if isinstance(s, ir.Parallel):
                for inner in ir.walk(s.body):
                    tiled.update(ld.buffer for ld in ir.loads_in(inner))
                    if isinstance(inner, ir.Store):
                        tiled.add(inner.buffer)
                    tiled.update(ir.operand_buffers(inner))
                continue
            if not isinstance(s, (ir.Store, ir.Let, ir.Alloc, ir.For, ir.If, ir.While)):
                tiled.update(ir.operand_buffers(s))  # a tile op (copy, fill, gemm, reduce, atomic, ...)
            for attr in ("body", "then_body", "else_body"):
                if getattr(s, attr, None):
                    scan(getattr(s, attr), in_parallel)

    scan(kernel.body, False)
    return {f for f in fragments if f not in tiled and f.alias_of is None}
