"""The fuzzer's grammar: expressions, conditions, loops and tiles (``Builder``), and one generator
per program family (``FAMILY_FNS``); ``fuzz.py`` composes them into programs and checks them."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

TILES = [1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32]
GEMM_TILES = [8, 16, 24, 32, 48, 64]  # a dim < 16 takes the multiply-and-reduce path


@dataclass
class Param:
    name: str
    shape: tuple  # size names ("M") or ints
    dtype: str
    role: str  # "in": random input; "inout": random, written in place; "out": allocated output
    lo: float = -2.0
    hi: float = 2.0


def _lit(v: float) -> str:
    return repr(float(v))


def float_expr(rng: random.Random, leaves: list, depth: int = 0) -> str:
    """A float expression over ``leaves`` whose magnitude stays of order 1 to 10."""
    if depth >= 2 or rng.random() < 0.3:
        if rng.random() < 0.15:
            return _lit(rng.choice([0.5, -1.25, 2.0, 3.0, -0.75]))
        return rng.choice(leaves)
    a, b = float_expr(rng, leaves, depth + 1), float_expr(rng, leaves, depth + 1)
    form = rng.choice(["+", "-", "*", "max", "min", "abs", "exp", "sigmoid", "tanh", "div", "sqrt", "neg",
                       "select", "ifexp", "smooth", "log", "pow"])  # fmt: skip
    if form in ("+", "-", "*"):
        return f"({a} {form} {b})"
    if form in ("max", "min"):
        return f"T.{form}({a}, {b})"
    if form == "abs":
        return f"T.abs({a})"
    if form == "exp":
        return f"T.exp(T.min({a}, 2.0))"
    if form in ("sigmoid", "tanh"):
        return f"T.{form}({a})"
    if form == "div":
        return f"({a} / (T.abs({b}) + 1.0))"
    if form == "sqrt":
        return f"T.sqrt(T.abs({a}) + 0.25)"
    if form == "neg":
        return f"(-{a})"
    if form == "smooth":  # smooth functions only: a rounding step (floor, round) would turn ulps into units
        return f"T.{rng.choice(['sin', 'cos', 'erf'])}({a})"
    if form == "log":
        return f"T.{rng.choice(['log', 'log2'])}(T.abs({a}) + 0.5)"
    if form == "pow":
        return f"T.pow(T.abs({a}) + 0.5, {rng.choice(['0.5', '2.0', '1.5'])})"
    c = float_expr(rng, leaves, depth + 1)
    cmp = rng.choice([">", "<", ">=", "<="])
    if form == "select":
        return f"T.if_then_else({a} {cmp} {b}, {c}, {a})"
    return f"({c} if {a} {cmp} {b} else {b})"


def int_expr(rng: random.Random, leaves: list, depth: int = 0) -> str:
    """An int32 expression (no overflow for leaves in [-100, 100])."""
    if depth >= 2 or rng.random() < 0.3:
        if rng.random() < 0.2:
            return str(rng.randint(-9, 9))
        return rng.choice(leaves)
    a, b = int_expr(rng, leaves, depth + 1), int_expr(rng, leaves, depth + 1)
    form = rng.choice(["+", "-", "*", "//", "%", "&", "|", "^", ">>", "max", "min", "select", "floordiv"])
    if form in ("//", "%"):
        return f"({a} {form} {rng.choice([2, 3, 5, 7, -2, -3, -5])})"
    if form == "floordiv":
        return f"T.floordiv({a}, (T.abs({b}) + 1))"
    if form == ">>":
        return f"({a} >> {rng.randint(0, 3)})"
    if form == "*":
        return f"({a} * {rng.randint(-4, 4)})"
    if form in ("max", "min"):
        return f"T.{form}({a}, {b})"
    if form == "select":
        return f"T.if_then_else({a} < {b}, {a}, {b})"
    return f"({a} {form} {b})"


def lane_cond(rng: random.Random, lanes: list, blocks: list) -> str:
    """An affine comparison of lane (and block) values, or a parity test of a lane value."""
    form = rng.random()
    if form < 0.25:
        v = rng.choice(lanes)
        return f"{v} % {rng.choice([2, 3])} == {rng.randint(0, 1)}"
    terms = [f"{rng.choice([1, 2, -1])} * {v}" for v in rng.sample(lanes, k=rng.randint(1, len(lanes)))]
    lhs = " + ".join(terms)
    rhs = str(rng.randint(-3, 6))
    if blocks and rng.random() < 0.5:
        rhs = f"{rng.choice(blocks)} + {rhs}"
    return f"{lhs} {rng.choice(['<', '<=', '>', '>=', '!='])} {rhs}"


# ====================================================================== program builder
def indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else line for line in text.splitlines())


class Builder:
    """Collects the parameters, sizes and kernels of one program."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.params: list[Param] = []
        self.sizes: dict[str, int] = {}
        self.kernels: list[str] = []
        self.kinds: list[str] = []
        self.tol_dtype = "float32"
        self.tags: set[str] = set()
        self.last: Param | None = None  # the previous kernel's float (M, N) result, for chaining

    def size(self, name: str, lo: int, hi: int) -> str:
        if name not in self.sizes:
            self.sizes[name] = self.rng.randint(lo, hi)
        return name

    def param(self, hint: str, shape: tuple, dtype: str, role: str = "in", lo: float = -2.0, hi: float = 2.0) -> str:
        name = hint
        k = 1
        while any(p.name == name for p in self.params):
            k += 1
            name = f"{hint}{k}"
        self.params.append(Param(name, tuple(shape), dtype, role, lo, hi))
        return name

    def input_mn(self, dtype: str) -> str:
        """An (M, N) input of ``dtype``: the previous kernel's result when it fits (chaining)."""
        if self.last is not None and self.last.dtype == dtype and self.last.shape == ("M", "N"):
            name, self.last = self.last.name, None
            return name
        return self.param("A", ("M", "N"), dtype)

    def result(self, hint: str, shape: tuple, dtype: str, full: bool = True) -> str:
        """The kernel's result; the program's last one is its output when the kernel writes all of it
        (``full``), else (and for the earlier ones) a tensor written in place."""
        name = self.param(hint, shape, dtype, role="result" if full else "partial")
        self.last = self.params[-1] if shape == ("M", "N") and dtype.startswith(("float", "bfloat")) else None
        return name

    def kind(self, *kinds: str) -> None:
        for k in kinds:
            if k not in self.kinds:
                self.kinds.append(k)

    def computes_in(self, dtype: str) -> None:
        order = ["float32", "float16", "bfloat16"]
        if dtype in order and order.index(dtype) > order.index(self.tol_dtype):
            self.tol_dtype = dtype

    def loop(self, var: str, extent: str, allow_pipelined: bool = True) -> str:
        """``for var in <serial | range | T.Pipelined>(extent):``."""
        choice = self.rng.choice(["serial", "range", "Pipelined"] if allow_pipelined else ["serial", "range"])
        if self.rng.random() < 0.2:  # the (start, stop) form
            extent = f"0, {extent}"
        if choice == "Pipelined":
            self.kind("pipelined")
            return f"for {var} in T.Pipelined({extent}, num_stages={self.rng.randint(0, 3)}):\n"
        if choice == "range":
            return f"for {var} in range({extent}):\n"
        return f"for {var} in T.serial({extent}):\n"


# ---------------------------------------------------------------------- families
def fam_elementwise(b: Builder) -> None:
    rng = b.rng
    b.kind("elementwise")
    dtype = rng.choice(["float32", "float16", "bfloat16", "int32"])
    b.computes_in(dtype)
    b.size("M", 1, 70)
    b.size("N", 1, 70)
    bm, bn = rng.choice(TILES), rng.choice(TILES)
    while -(-b.sizes["M"] // bm) * -(-b.sizes["N"] // bn) > 24:
        bm, bn = bm * 2, bn * 2
    lo, hi = (-100, 101) if dtype == "int32" else (-2.0, 2.0)
    A = b.input_mn(dtype) if dtype != "int32" else b.param("A", ("M", "N"), dtype, lo=lo, hi=hi)
    B = b.param("B", ("M", "N"), dtype, lo=lo, hi=hi)
    out_dtype = dtype if dtype == "int32" else rng.choice([dtype, "float32"])
    branch = rng.choice(["plain", "lane_if", "lane_if_else", "block_if_else"])
    C = b.result("C", ("M", "N"), out_dtype, full=branch != "lane_if")
    grid = rng.choice(["2d", "1d"])
    if grid == "1d":
        head = f"with T.Kernel(T.ceildiv(N, {bn}) * T.ceildiv(M, {bm}), threads=128) as bid:\n"
        head += f"    bx = bid % T.ceildiv(N, {bn})\n    by = bid // T.ceildiv(N, {bn})\n"
    else:
        head = f"with T.Kernel(T.ceildiv(N, {bn}), T.ceildiv(M, {bm}), threads=128) as (bx, by):\n"
    stage = rng.choice(["none", "shared", "fragment_out", "both"])
    body = ""
    if stage in ("shared", "both"):
        body += f'As = T.alloc_shared(({bm}, {bn}), "{dtype}")\nT.copy({A}[by * {bm}, bx * {bn}], As)\n'
        a = "As[i, j]"
    else:
        a = f"{A}[y, x]"
    if stage in ("fragment_out", "both"):
        body += f'Cf = T.alloc_fragment(({bm}, {bn}), "{out_dtype}")\n'
    leaves = ["a", "b"]
    private = rng.random() < 0.2  # a buffer private to each iteration
    if private:
        leaves = ["a", "t[1]"]
    if dtype == "int32":
        expr, expr2 = int_expr(rng, leaves + ["y", "x"]), int_expr(rng, leaves + ["i", "j"])
    else:
        expr, expr2 = float_expr(rng, leaves), float_expr(rng, leaves)
        if rng.random() < 0.5:
            expr = f'({expr} + T.cast(y - x, "{dtype}") * 0.125)'
    cast = (lambda e: e) if out_dtype == dtype else (lambda e: f'T.cast({e}, "{out_dtype}")')
    # the second operand through a permuted or gathered index (always inside the tensor)
    b_idx = rng.choice(
        ["y, x", "y, x", "M - 1 - y, x", "y, N - 1 - x", "(y * 7 + 3) % M, x // 2", "y // 2, (x + 5) % N"]
    )
    inner = "a = " + a + f"\nb = {B}[{b_idx}]\n"
    if private:
        inner += f't = T.alloc_local((2,), "{dtype}")\nt[0] = a\nt[1] = b - t[0]\n'
    target = "Cf[i, j]" if stage in ("fragment_out", "both") else f"{C}[y, x]"
    if branch == "plain":
        inner += f"{target} = {cast(expr)}\n"
    else:
        if branch == "block_if_else":
            cond = f"{rng.choice(['bx', 'by'])} % 2 == {rng.randint(0, 1)}"
            b.tags.add("block_cond_in_parallel")
        else:
            cond = lane_cond(rng, ["i", "j"], ["bx", "by"])
        inner += f"if {cond}:\n    {target} = {cast(expr)}\n"
        if branch != "lane_if" or target.startswith("Cf"):
            inner += f"else:\n    {target} = {cast(expr2)}\n"
    loop = f"for i, j in T.Parallel({bm}, {bn}):\n    y = by * {bm} + i\n    x = bx * {bn} + j\n"
    if target.startswith("Cf"):
        # reads outside the tensors are guarded; the tile keeps a defined value there
        zero = "0" if dtype == "int32" else "0.0"
        loop += "    if y < M and x < N:\n" + indent(inner, 8) + f"\n    else:\n        Cf[i, j] = {cast(zero)}\n"
        body += loop + f"T.copy(Cf, {C}[by * {bm}, bx * {bn}])\n"
    else:
        body += loop + "    if y < M and x < N:\n" + indent(inner, 8) + "\n"
    b.kernels.append(head + indent(body, 4))


def _thread_view_tiles(b: Builder) -> None:
    """Tile ops (copy, scan, reduction, T.Parallel) on shared memory in a thread-view kernel, read
    back element by element by the threads."""
    rng = b.rng
    threads = rng.choice([32, 64, 128])
    b.size("M", 1, 40)
    b.size("N", 1, 40)
    N = b.sizes["N"]
    bm = rng.choice(TILES[1:])
    while -(-b.sizes["M"] // bm) > 10:
        bm *= 2
    A = b.input_mn("float32")
    C = b.result("C", ("M", "N"), "float32")
    body = f'tx = T.get_thread_binding()\nS = T.alloc_shared(({bm}, {N}), "float32")\nT.copy({A}[bx * {bm}, 0], S)\n'
    op = rng.choice(["cumsum", "cummax", "reduce", "parallel"])
    if op in ("cumsum", "cummax"):
        b.kind("scan")
        if N == 1:
            b.tags.add("scan_unit_dim")
        body += f"T.{op}(S, dim={rng.choice([0, 1])})\n"
    elif op == "reduce":
        b.kind("reduction")
        body += f'R = T.alloc_shared(({bm},), "float32")\nT.reduce_{rng.choice(["max", "sum", "min"])}(S, R, dim=1)\n'
        body += f"for i, j in T.Parallel({bm}, {N}):\n    S[i, j] = S[i, j] - R[i] * 0.25\n"
    else:
        body += f"for i, j in T.Parallel({bm}, {N}):\n    S[i, j] = {float_expr(rng, ['S[i, j]'])}\n"
    body += "T.sync_threads()\n"
    body += f"for k in T.serial({-(-bm * N // threads)}):\n    e = k * {threads} + tx\n"
    body += f"    if e < {bm * N} and bx * {bm} + e // {N} < M:\n"
    body += f'        {C}[bx * {bm} + e // {N}, e % {N}] = S[e // {N}, e % {N}] * 2.0 + T.cast(tx % 4, "float32")\n'
    head = f"with T.Kernel(T.ceildiv(M, {bm}), threads={threads}) as bx:\n"
    b.kernels.append(head + indent(body, 4))


def _thread_view_2d(b: Builder) -> None:
    """threads=(tx, ty): a 2-D shared tile written per thread and read transposed/reflected."""
    rng = b.rng
    tx_n, ty_n = rng.choice([(32, 4), (16, 8), (32, 2), (8, 8)])
    b.size("M", 1, 40)
    b.size("N", 1, 70)
    A = b.input_mn("float32")
    C = b.result("C", ("M", "N"), "float32")
    body = "tx = T.get_thread_binding(0)\nty = T.get_thread_binding(1)\n"
    body += f'S = T.alloc_shared(({ty_n}, {tx_n}), "float32")\n'
    body += f"y = by * {ty_n} + ty\nx = bx * {tx_n} + tx\nS[ty, tx] = {_lit(rng.choice([0.0, -1.0]))}\n"
    body += f"if y < M and x < N:\n    S[ty, tx] = {float_expr(rng, [f'{A}[y, x]'])}\nT.sync_threads()\n"
    other = rng.choice(
        [f"S[{ty_n - 1} - ty, {tx_n - 1} - tx]", f"S[ty, (tx + 1) % {tx_n}]", f"S[(ty + 1) % {ty_n}, tx]"]
    )
    body += f"if y < M and x < N:\n    {C}[y, x] = {other} + S[ty, tx] * 0.5\n"
    head = f"with T.Kernel(T.ceildiv(N, {tx_n}), T.ceildiv(M, {ty_n}), threads=({tx_n}, {ty_n})) as (bx, by):\n"
    b.kernels.append(head + indent(body, 4))


def _p2(n: int) -> int:
    """The power of two a register tile's extent is padded to."""
    return 1 << max(n - 1, 0).bit_length()


def fam_copy(b: Builder) -> None:
    """Data movement: slices and start-index regions between global, shared and fragment tiles."""
    rng = b.rng
    b.kind("copy")
    dtype = rng.choice(["float32", "float16", "bfloat16"])
    b.computes_in(dtype)
    b.size("M", 1, 60)
    b.size("N", 1, 60)
    bm, bn = rng.choice(TILES), rng.choice(TILES)
    while -(-b.sizes["M"] // bm) * -(-b.sizes["N"] // bn) > 24:
        bm, bn = bm * 2, bn * 2
    A = b.input_mn(dtype)
    out = rng.choice([dtype, "float32"])
    C = b.result("C", ("M", "N"), out)
    pad_m, pad_n = rng.randint(0, 3), rng.randint(0, 3)
    s1, s2 = rng.choice(["shared", "fragment"]), rng.choice(["shared", "fragment"])
    body = ""
    if rng.random() < 0.3:
        body += f"T.use_swizzle(panel_size={rng.choice([2, 4])})\n"
    body += f'X = T.alloc_{s1}(({bm + pad_m}, {bn + pad_n}), "{dtype}")\n'
    if s1 == "fragment" and _p2(bm + pad_m) * _p2(bn + pad_n) * _p2(bm) * _p2(bn) > 2**20:
        b.tags.add("onehot_numel")
    body += f'Y = T.alloc_{s2}(({bm}, {bn}), "{out}")\n'
    fill = rng.choice(["T.clear(X)", "T.fill(X, 0.75)", f"T.fill(X[0:{pad_m + 1}, :], -2.0)"])
    body += fill + "\n"
    # global -> X at an offset (a slice or a start index), then X -> Y with the cast, then Y -> global
    src = rng.choice([f"{A}[by * {bm}, bx * {bn}]", f"{A}[by * {bm} : by * {bm} + {bm}, bx * {bn} : bx * {bn} + {bn}]"])
    body += f"T.copy({src}, X[{pad_m} : {pad_m + bm}, {pad_n} : {pad_n + bn}])\n"
    how = rng.choice(["copy", "loops", "parallel"])
    if how == "copy":
        body += f"T.copy(X[{pad_m} : {pad_m + bm}, {pad_n} : {pad_n + bn}], Y)\n"
    elif how == "loops":
        outer = rng.choice([f"T.unroll({bm})", f"T.serial({bm})", f"range({bm})"])
        inner = rng.choice([f"T.vectorized({bn})", f"T.serial({bn})", f"range(0, {bn}, 1)"])
        body += f"for i in {outer}:\n    for j in {inner}:\n        Y[i, j] = X[i + {pad_m}, j + {pad_n}]\n"
        if "fragment" in (s1, s2):  # TileLang: each thread reaches only its own fragment elements
            b.tags.add("fragment_serial_access")
    else:
        x = f"X[i + {pad_m}, j + {pad_n}]"
        body += f"for i, j in T.Parallel({bm}, {bn}):\n    Y[i, j] = {x} * 0.5 + {float_expr(rng, [x])}\n"
    if rng.random() < 0.3:  # a strided loop over rows, with a step
        step = rng.choice([2, 3])
        body += f"for r in range(0, {bm}, {step}):\n    for j in T.Parallel({bn}):\n        Y[r, j] = Y[r, j] * 2\n"
    # a third of the copies pass Y through reads and writes at digit fields of the lane variables
    # (codegen/registers.split_read / split_write), drawn from a generator of their own, so earlier
    # seeds keep their programs
    digits = random.Random(repr(rng.getstate()))
    result = "Y"
    if digits.random() < 0.3:
        b.kind("digits")
        stage, result = _digit_stage(digits, "Y", bm, bn, out)
        body += stage
    body += f"T.copy({result}, {C}[by * {bm}, bx * {bn}])\n"
    head = f"with T.Kernel(T.ceildiv(N, {bn}), T.ceildiv(M, {bm}), threads=128) as (bx, by):\n"
    b.kernels.append(head + indent(body, 4))


def _digit_stage(rng: random.Random, src: str, bm: int, bn: int, dtype: str) -> tuple[str, str]:
    """Statements reading the (bm, bn) tile ``src`` at digit fields of the lane variables (``src[i, j // 2]``,
    ``src[i % 4, j]``), or staging it in a 3-D buffer at ``[i // c, j, i % c]`` or a flat one at
    ``[k // bn, k % bn]`` and reading it back, into a new fragment; the code and that fragment's name.
    Every index stays inside the tile (none passes the lane's own row or column)."""
    c = rng.choice([2, 4])
    form = rng.choice(["read", "staged", "flat"])
    code = f'Z = T.alloc_fragment(({bm}, {bn}), "{dtype}")\n'
    if form == "staged" and bm % c == 0:
        scope = rng.choice(["shared", "fragment"])
        code += f'W = T.alloc_{scope}(({bm // c}, {bn}, {c}), "{dtype}")\n'
        code += f"for i, j in T.Parallel({bm}, {bn}):\n    W[i // {c}, j, i % {c}] = {src}[i, j]\n"
        back = rng.choice(
            [
                f"W[i // {c}, j, i % {c}]",
                f"W[i >> {c.bit_length() - 1}, j, i & {c - 1}]",
                f"W[i // {c}, j, i % {c} // 2 * 2]",
            ]
        )
        code += f"for i, j in T.Parallel({bm}, {bn}):\n    Z[i, j] = {back} * 2 - {src}[i, j]\n"
    elif form == "flat" and bm * bn <= 1024:
        code += f'F = T.alloc_fragment(({bm * bn},), "{dtype}")\n'
        code += f"for k in T.Parallel({bm * bn}):\n    F[k] = {src}[k // {bn}, k % {bn}]\n"
        code += f"for i, j in T.Parallel({bm}, {bn}):\n    Z[i, j] = F[i * {bn} + j] + F[(i * {bn} + j) // 2]\n"
    else:
        index = rng.choice([f"i, j // {c}", f"i // {c}, j", f"i % {c}, j", f"i, j // {2 * c} * 2 + j % 2", "i, j >> 1"])
        code += f"for i, j in T.Parallel({bm}, {bn}):\n    Z[i, j] = {src}[{index}] - {src}[i, j] * 0.5\n"
    return code, "Z"


def fam_serial_loop(b: Builder) -> None:
    """Serial loops tile2triton may vectorize: data-moving loops (a tile axis), ``X[i] += f(k)`` (a
    sum), next to loops with a carried dependence (which must stay loops) and ``alloc_var`` sums."""
    rng = b.rng
    b.kind("serial_loop")
    b.size("M", 1, 40)
    b.size("N", 1, 40)
    N = b.sizes["N"]
    bm = rng.choice(TILES)
    while -(-b.sizes["M"] // bm) > 10:
        bm *= 2
    A = b.input_mn("float32")
    form = rng.choice(["move", "sum_outer", "sum_inner", "carried", "var_sum"])
    loop = rng.choice(["T.serial({n})", "range({n})", "T.unroll({n})"]) if form != "carried" else "T.serial(1, {n})"
    f = float_expr(rng, ["v"])
    row = f"bx * {bm} + i"
    if form == "move":
        C = b.result("C", ("M", "N"), "float32")
        body = f"for i in T.serial({bm}):\n    for k in {loop.format(n='N')}:\n        if {row} < M:\n"
        body += f"            v = {A}[{row}, k]\n            {C}[{row}, k] = {f}\n"
    elif form in ("sum_outer", "sum_inner"):
        C = b.result("C", ("M",), "float32")
        if bm == 1:
            b.tags.add("one_lane_sum")
        body = f'R = T.alloc_fragment(({bm},), "float32")\nT.fill(R, {_lit(rng.choice([0.0, 0.5]))})\n'
        upd = f"if {row} < M:\n    v = {A}[{row}, k]\n    R[i] += {f}\n"
        if form == "sum_outer":
            body += f"for k in {loop.format(n='N')}:\n    for i in T.Parallel({bm}):\n" + indent(upd, 8) + "\n"
        else:
            body += f"for i in T.Parallel({bm}):\n    for k in {loop.format(n='N')}:\n" + indent(upd, 8) + "\n"
        body += f"T.copy(R, {C}[bx * {bm}])\n"
    elif form == "carried":
        C = b.result("C", ("M", "N"), "float32")
        body = f'F = T.alloc_fragment(({bm}, {N}), "float32")\nT.copy({A}[bx * {bm}, 0], F)\n'
        prev = rng.choice(["F[i, k - 1]", "T.max(F[i, k - 1], F[i, k])", "F[i, k - 1] * 0.5"])
        body += f"for k in {loop.format(n=N)}:\n    for i in T.Parallel({bm}):\n        F[i, k] = {prev} + F[i, k]\n"
        body += f"T.copy(F, {C}[bx * {bm}, 0])\n"
    else:
        C = b.result("C", ("M", "N"), "float32")
        if N & (N - 1) == 0:  # no padded lanes: the row guard is the store's whole mask
            b.tags.add("block_cond_in_parallel")
        body = f"for i in T.serial({bm}):\n    if {row} < M:\n"
        body += '        s = T.alloc_var("float32", 0.0)\n'
        body += f"        for k in {loop.format(n='N')}:\n            v = {A}[{row}, k]\n            s = s + {f}\n"
        body += f"        for j in T.Parallel({N}):\n            {C}[{row}, j] = {A}[{row}, j] - s * 0.125\n"
    head = f"with T.Kernel(T.ceildiv(M, {bm}), threads=128) as bx:\n"
    b.kernels.append(head + indent(body, 4))


def fam_reduction(b: Builder) -> None:
    rng = b.rng
    b.kind("reduction")
    dtype = rng.choice(["float32", "float16"])
    b.computes_in(dtype)
    kind = rng.choice(["sum", "max", "min", "absmax", "abssum"])
    dim = rng.choice([0, 1])
    b.size("M", 1, 60)
    b.size("N", 1, 60)
    bm, bn = rng.choice(TILES), rng.choice(TILES)
    keep, red = ("M", bm) if dim == 1 else ("N", bn)
    rlen = red
    mode = rng.choice(["loop", "single"]) if kind != "abssum" else "single"
    if mode == "single":  # one tile covers the whole reduced dim
        if dim == 1:
            bn = b.sizes["N"]
        else:
            bm = b.sizes["M"]
    ext = f"T.ceildiv(N, {bn})" if dim == 1 else f"T.ceildiv(M, {bm})"
    while -(-b.sizes[keep] // rlen) > 16:
        rlen *= 2
        if dim == 1:
            bm = rlen
        else:
            bn = rlen
    A = b.input_mn(dtype)
    C = b.result("C", (keep,), "float32")
    keepdim = dim == 1 and rng.random() < 0.25  # the result keeps the reduced dim as 1
    if keepdim:
        b.params[-1].shape = (keep, 1)
    scope = rng.choice(["fragment", "shared"])
    body = f'X = T.alloc_fragment(({bm}, {bn}), "{dtype}")\n'
    body += (
        f'R = T.alloc_{scope}(({rlen}, 1), "float32")\n' if keepdim else f'R = T.alloc_{scope}(({rlen},), "float32")\n'
    )
    body += f'Xf = T.alloc_{scope}(({bm}, {bn}), "float32")\n'
    if mode == "loop":
        body += f"T.fill(R, {_lit(rng.choice([0.0, 1.0, -1.0]))})\n"
    src = f"{A}[bid * {bm}, k * {bn}]" if dim == 1 else f"{A}[k * {bm}, bid * {bn}]"
    f = float_expr(rng, ["v"]) if rng.random() < 0.5 else "v"
    inner = f"T.copy({src}, X)\n"
    inner += f'for i, j in T.Parallel({bm}, {bn}):\n    v = T.cast(X[i, j], "float32")\n    Xf[i, j] = {f}\n'
    clear = "True" if mode == "single" else "False"
    # a third of the fragment sums / maxima / minima as updates in the T.Parallel itself (R[i] += Xf[i, j]:
    # passes/parallel_updates.py), drawn from a generator of their own, so earlier seeds keep their programs
    updates = random.Random(repr(rng.getstate()))
    if scope == "fragment" and kind in ("sum", "max", "min") and updates.random() < 0.3:
        kept = ("i" if dim == 1 else "j") + (", 0" if keepdim else "")
        if mode == "single":
            identity = {"sum": "0.0", "max": '-T.infinity("float32")', "min": 'T.infinity("float32")'}[kind]
            inner += f"T.fill(R, {identity})\n"
        update = f"R[{kept}] + Xf[i, j]" if kind == "sum" else f"T.{kind}(R[{kept}], Xf[i, j])"
        if updates.random() < 0.5 and kind != "sum":
            update = f"T.{kind}(Xf[i, j], R[{kept}])"
        inner += f"for i, j in T.Parallel({bm}, {bn}):\n    R[{kept}] = {update}\n"
    else:
        inner += f"T.reduce_{kind}(Xf, R, dim={dim}{'' if kind == 'abssum' else ', clear=' + clear})\n"
    body += b.loop("k", ext) + indent(inner, 4) + "\n"
    if keepdim:
        body += f"T.copy(R, {C}[bid * {rlen}, 0])\n"
    elif rng.random() < 0.5:
        body += f"T.copy(R, {C}[bid * {rlen}])\n"
    else:
        body += (
            f"for i in T.Parallel({rlen}):\n    if bid * {rlen} + i < {keep}:\n        {C}[bid * {rlen} + i] = R[i]\n"
        )
    head = f"with T.Kernel(T.ceildiv({keep}, {rlen}), threads=128) as bid:\n"
    b.kernels.append(head + indent(body, 4))


def fam_gemm(b: Builder) -> None:
    rng = b.rng
    b.kind("gemm")
    dtype = rng.choice(["float16", "float16", "bfloat16", "int8"])
    if dtype == "int8":
        b.kind("cast")
    b.computes_in(dtype)
    b.size("M", 1, 80)
    b.size("N", 1, 80)
    b.size("K", 1, 80)
    bm, bn, bk = (rng.choice(GEMM_TILES) for _ in range(3))
    while -(-b.sizes["N"] // bn) * -(-b.sizes["M"] // bm) > 12:
        bm, bn = min(bm * 2, 64), min(bn * 2, 64)
        if bm == bn == 64:
            break
    ta, tb = rng.random() < 0.5, rng.random() < 0.5
    if bk < 16 and dtype != "int8":
        b.tags.add("gemm_k_tile_below_mma_k")  # TileLang's 16-bit MMA steps K by 16
    acc = "int32" if dtype == "int8" else "float32"
    lo, hi = (-8, 9) if dtype == "int8" else (-1.0, 1.0)
    A = b.param("A", ("K", "M") if ta else ("M", "K"), dtype, lo=lo, hi=hi)
    Bn = b.param("B", ("N", "K") if tb else ("K", "N"), dtype, lo=lo, hi=hi)
    out = acc if dtype == "int8" else rng.choice([dtype, "float32"])
    C = b.result("C", ("M", "N"), out)
    head = f"with T.Kernel(T.ceildiv(N, {bn}), T.ceildiv(M, {bm}), threads=128) as (bx, by):\n"
    body = f'As = T.alloc_shared({(bk, bm) if ta else (bm, bk)}, "{dtype}")\n'
    body += f'Bs = T.alloc_shared({(bn, bk) if tb else (bk, bn)}, "{dtype}")\n'
    body += f'Cf = T.alloc_fragment(({bm}, {bn}), "{acc}")\n'
    init = rng.choice(["clear", "fill", "clear_accum", "parallel_bias"])
    zero = "0" if acc == "int32" else "0.0"
    if init == "clear":
        body += "T.clear(Cf)\n"
    elif init == "fill":
        body += f"T.fill(Cf, {'3' if acc == 'int32' else '0.5'})\n"
    elif init == "parallel_bias":
        body += f'for i, j in T.Parallel({bm}, {bn}):\n    Cf[i, j] = T.cast(by * {bm} + i - j, "{acc}")\n'
    a_idx = f"ko * {bk}, by * {bm}" if ta else f"by * {bm}, ko * {bk}"
    b_idx = f"bx * {bn}, ko * {bk}" if tb else f"ko * {bk}, bx * {bn}"
    inner = f"T.copy({A}[{a_idx}], As)\nT.copy({Bn}[{b_idx}], Bs)\n"
    if not ta and rng.random() < 0.3:  # A from registers, modified first
        body = body.replace("As = T.alloc_shared", "As = T.alloc_fragment")
        neg = "-As[i, j]" if dtype != "int8" else "As[i, j] // 2"
        inner += f"for i, j in T.Parallel({bm}, {bk}):\n    if (i + j) % 3 == 0:\n        As[i, j] = {neg}\n"

    extra = ", clear_accum=ko == 0" if init == "clear_accum" else ""
    inner += f"T.gemm(As, Bs, Cf, transpose_A={ta}, transpose_B={tb}{extra})\n"
    body += b.loop("ko", f"T.ceildiv(K, {bk})") + indent(inner, 4) + "\n"
    epilogue = rng.choice(["none", "relu", "scale", "row_guard"])
    if epilogue == "relu":
        body += f"for i, j in T.Parallel({bm}, {bn}):\n    Cf[i, j] = T.max(Cf[i, j], {zero})\n"
    elif epilogue == "scale":
        scale = "Cf[i, j] * 2 - 1" if acc == "int32" else "Cf[i, j] * 0.5 + 1.0"
        body += f"for i, j in T.Parallel({bm}, {bn}):\n    Cf[i, j] = {scale}\n"
    elif epilogue == "row_guard":
        body += f"for i, j in T.Parallel({bm}, {bn}):\n    if i > j:\n        Cf[i, j] = -Cf[i, j]\n"
    body += f"T.copy(Cf, {C}[by * {bm}, bx * {bn}])\n"
    b.kernels.append(head + indent(body, 4))


def fam_thread_view(b: Builder) -> None:
    rng = b.rng
    b.kind("thread_view")
    if rng.random() < 0.25:
        return _thread_view_2d(b)
    if rng.random() < 0.25:
        return _thread_view_tiles(b)
    threads = rng.choice([32, 64, 128, 96])
    b.size("M", 1, 6)
    b.size("N", 1, 300)
    dtype = rng.choice(["float32", "float32", "float16"])
    b.computes_in(dtype)
    A = b.input_mn(dtype)
    C = b.result("C", ("M", "N"), "float32")
    binding = rng.choice(["T.get_thread_binding(0)", "T.get_thread_binding()"])
    body = f"tx = {binding}\n"
    body += f'S = T.alloc_shared(({threads},), "float32")\n'
    local = rng.choice(["local", "var"])
    acc = "acc[0]" if local == "local" else "acc"
    body += 'acc = T.alloc_local((1,), "float32")\n' if local == "local" else 'acc = T.alloc_var("float32")\n'
    f = float_expr(rng, ["v"])
    gather = rng.random() < 0.5
    if gather:  # each thread walks the whole row: a loop whose lane condition splits
        body += f"{acc} = 0.0\n"
        body += f"for k in T.serial(T.ceildiv(N, {threads})):\n    col = k * {threads} + tx\n"
        body += f'    if col < N:\n        v = T.cast({A}[by, col], "float32")\n        {acc} = {acc} + {f}\n'
        b.kind("split_loop")
    else:
        body += f"col = bx * {threads} + tx\n{acc} = 0.0\n"
        body += f'if col < N:\n    v = T.cast({A}[by, col], "float32")\n    {acc} = {f}\n'
    body += f"S[tx] = {acc}\nT.sync_threads()\n"
    if rng.random() < 0.3:  # per-thread atomics into a few colliding slots
        b.kind("atomic")
        slots = rng.randint(1, 5)
        op = rng.choice(["add", "max", "min"])
        Acc = b.param("Acc", ("M", slots), "float32", role="inout")
        if op == "add":
            b.tags.add("float_atomic_add")
        guard = rng.choice(["", f"if tx % 3 != {rng.randint(0, 2)}:\n    "])
        body += f"{guard}T.atomic_{op}({Acc}[by, tx % {slots}], {acc})\n"
    exchange = rng.choice(["reverse", "rotate", "xor", "half", "tree"])
    if exchange == "tree" and threads & (threads - 1) == 0:
        steps = int(math.log2(threads))
        body += f"for step in T.serial({steps}):\n    stride = {threads // 2} >> step\n"
        body += "    if tx < stride:\n        S[tx] = S[tx] + S[tx + stride]\n    T.sync_threads()\n"
        got = "S[0]"
    else:
        other = {
            "reverse": f"S[{threads - 1} - tx]",
            "rotate": f"S[(tx + {rng.randint(1, threads - 1)}) % {threads}]",
            "xor": f"S[tx ^ {rng.choice([1, 2, 4, 16])}]",
            "half": "S[tx // 2]",
            "tree": f"S[{threads - 1} - tx]",
        }[exchange]
        got = other
    mix = rng.choice([f"{got}", f"{got} - {acc}", f"T.max({got}, {acc}) * 0.5"])
    if rng.random() < 0.4:  # a second exchange round through another shared buffer
        body += f'S2 = T.alloc_shared(({threads},), "float32")\nS2[tx] = {mix}\nT.sync_threads()\n'
        mix = f"S2[({threads} - tx) % {threads}] + S2[tx]"
    if gather:
        body += f"for k2 in T.serial(T.ceildiv(N, {threads})):\n    col2 = k2 * {threads} + tx\n"
        body += f'    if col2 < N:\n        {C}[by, col2] = {mix} + T.cast(k2, "float32")\n'
        head = f"with T.Kernel(1, M, threads={threads}) as (bx, by):\n"
    else:
        body += f"if col < N:\n    {C}[by, col] = {mix}\n"
        head = f"with T.Kernel(T.ceildiv(N, {threads}), M, threads={threads}) as (bx, by):\n"
    b.kernels.append(head + indent(body, 4))


def fam_atomic(b: Builder) -> None:
    rng = b.rng
    b.kind("atomic")
    op = rng.choice(["add", "max", "min"])
    dtype = rng.choice(["float32", "int32"])
    b.size("M", 1, 50)
    b.size("N", 1, 50)
    bm, bn = rng.choice(TILES), rng.choice(TILES)
    while -(-b.sizes["M"] // bm) * -(-b.sizes["N"] // bn) > 24:
        bm, bn = bm * 2, bn * 2
    lo, hi = (-50, 51) if dtype == "int32" else (-2.0, 2.0)
    A = b.input_mn(dtype) if dtype == "float32" else b.param("A", ("M", "N"), dtype, lo=lo, hi=hi)
    form = rng.choice(["element", "tile", "tile_scalar"])
    head = f"with T.Kernel(T.ceildiv(N, {bn}), T.ceildiv(M, {bm}), threads=128) as (bx, by):\n"
    if dtype == "float32" and op == "add":
        b.tags.add("float_atomic_add")  # the sum's order differs between runs: equal within tolerance
    if form == "element":
        rows = rng.randint(1, 3)
        Acc = b.param("Acc", (rows, "N"), dtype, role="inout", lo=lo, hi=hi)
        f = int_expr(rng, ["a"]) if dtype == "int32" else float_expr(rng, ["a"])
        body = f"for i, j in T.Parallel({bm}, {bn}):\n    y = by * {bm} + i\n    x = bx * {bn} + j\n"
        body += f"    if y < M and x < N:\n        a = {A}[y, x]\n"
        cond = lane_cond(rng, ["i", "j"], ["bx", "by"]) if rng.random() < 0.4 else None
        stmt = f"T.atomic_{op}(Acc[y % {rows}, x], {f})".replace("Acc[", f"{Acc}[")
        body += f"        if {cond}:\n            {stmt}\n" if cond else f"        {stmt}\n"
    else:
        Acc = b.param("Acc", (2 * bm, f"T.ceildiv(N, {bn}) * {bn}"), dtype, role="inout", lo=lo, hi=hi)
        b.params[-1].shape = (2 * bm, "NT")
        b.sizes["NT"] = -(-b.sizes["N"] // bn) * bn
        dst = f"{Acc}[(by % 2) * {bm}, bx * {bn}]"
        if rng.random() < 0.3:
            dst = f"{Acc}[(by % 2) * {bm} : (by % 2) * {bm} + {bm}, bx * {bn} : bx * {bn} + {bn}]"
        if form == "tile_scalar":
            body = f"T.atomic_{op}({dst}, {rng.choice(['1', '3', '-2']) if dtype == 'int32' else '1.5'})\n"
            if ":" not in dst:
                b.tags.add("block_element_atomic")  # TileLang: every thread of the block runs it
        elif rng.random() < 0.3:  # element atomics into a shared tile first (colliding rows), then the tile
            rows = rng.randint(1, 3)
            body = f'S = T.alloc_shared(({bm}, {bn}), "{dtype}")\nT.clear(S)\n'
            body += f"for i, j in T.Parallel({bm}, {bn}):\n    if by * {bm} + i < M and bx * {bn} + j < N:\n"
            body += f"        T.atomic_add(S[i % {rows}, j], {A}[by * {bm} + i, bx * {bn} + j])\n"
            body += f"T.atomic_{op}({dst}, S)\n"
        else:
            scope = rng.choice(["fragment", "shared"])
            body = f'F = T.alloc_{scope}(({bm}, {bn}), "{dtype}")\nT.copy({A}[by * {bm}, bx * {bn}], F)\n'
            if rng.random() < 0.5:
                g = int_expr(rng, ["F[i, j]"]) if dtype == "int32" else float_expr(rng, ["F[i, j]"])
                body += f"for i, j in T.Parallel({bm}, {bn}):\n    F[i, j] = {g}\n"
            body += f"T.atomic_{op}({dst}, F)\n"
    b.kernels.append(head + indent(body, 4))
    b.last = None


def fam_scan(b: Builder) -> None:
    rng = b.rng
    b.kind("scan")
    b.size("M", 1, 40)
    b.size("N", 1, 40)
    N = b.sizes["N"]
    bm = rng.choice(TILES)
    while -(-b.sizes["M"] // bm) > 12:
        bm *= 2
    op = rng.choice(["cumsum", "cummax"])
    dim = rng.choice([0, 1])
    reverse = rng.random() < 0.5
    scope = rng.choice(["fragment", "shared"])
    if 1 in (N, bm):
        b.tags.add("scan_unit_dim")
    A = b.input_mn("float32")
    C = b.result("C", ("M", "N"), "float32")
    body = f'F = T.alloc_{scope}(({bm}, {N}), "float32")\nT.copy({A}[bx * {bm}, 0], F)\n'
    if rng.random() < 0.4:
        body += f"for i, j in T.Parallel({bm}, {N}):\n    F[i, j] = {float_expr(rng, ['F[i, j]'])}\n"
    args = f"dim={dim}, reverse={reverse}" if rng.random() < 0.8 else f"dim={dim}"
    if rng.random() < 0.5:
        body += f'G = T.alloc_{scope}(({bm}, {N}), "float32")\nT.{op}(F, G, {args})\nT.copy(G, {C}[bx * {bm}, 0])\n'
        if scope == "fragment":
            b.tags.add("fragment_to_fragment_scan")
    else:
        body += f"T.{op}(F, {args})\nT.copy(F, {C}[bx * {bm}, 0])\n"
    head = f"with T.Kernel(T.ceildiv(M, {bm}), threads=128) as bx:\n"
    b.kernels.append(head + indent(body, 4))


def fam_control(b: Builder) -> None:
    rng = b.rng
    b.kind("control")
    b.size("M", 1, 60)
    b.size("N", 1, 40)
    N = b.sizes["N"]
    bm = rng.choice(TILES)
    while -(-b.sizes["M"] // bm) > 12:
        bm *= 2
    A = b.input_mn("float32")
    C = b.result("C", ("M", "N"), "float32")
    body = f'F = T.alloc_fragment(({bm}, {N}), "float32")\nT.copy({A}[bx * {bm}, 0], F)\n'
    body += 'it = T.alloc_var("int32", 0)\n'
    step = float_expr(rng, ["F[i, j]", "w"])
    update = f'for i, j in T.Parallel({bm}, {N}):\n    w = T.cast(it + i - j, "float32") * 0.25\n'
    update += f"    F[i, j] = T.tanh({step})\n"
    loop_form = rng.choice(["counter", "data", "branchy_for"])
    if loop_form == "counter":  # a block-dependent trip count
        limit = rng.choice(["bx % 3 + 1", "2", "(bx + 1) // 2", "3 - bx % 2"])
        body += f"while it < {limit}:\n" + indent(update, 4) + "\n    it = it + 1\n"
    elif loop_form == "data":  # a trip count read from the input (the same for the whole block)
        body += 'x = T.alloc_var("int32", 0)\n'
        body += f'x = T.cast(T.abs({A}[bx * {bm}, 0]) * 4.0, "int32")\n'
        body += "while x > 0:\n" + indent(update, 4) + "\n    x = x // 2\n    it = it + 1\n"
    else:  # if/else around tile ops inside a loop
        body += f'X = T.alloc_fragment(({bm}, {N}), "float32")\n'
        body += f"for k in T.serial({rng.randint(1, 4)}):\n    if k % 2 == bx % 2:\n"
        body += f"        T.copy({A}[bx * {bm}, 0], X)\n        for i, j in T.Parallel({bm}, {N}):\n"
        body += "            F[i, j] = F[i, j] * 0.5 + X[i, j]\n        it = it + 1\n    else:\n"
        body += indent(update, 8) + "\n"
    cond = rng.choice(["bx % 2 == 0", "it > 1", "bx < 2"])
    alt = float_expr(rng, ["F[i, j]"])
    body += f"if {cond}:\n    T.copy(F, {C}[bx * {bm}, 0])\nelse:\n"
    body += f"    for i, j in T.Parallel({bm}, {N}):\n        if bx * {bm} + i < M:\n"
    body += f"            if {lane_cond(rng, ['i', 'j'], ['bx'])}:\n                {C}[bx * {bm} + i, j] = {alt}\n"
    body += f"            else:\n                {C}[bx * {bm} + i, j] = -F[i, j]\n"
    head = f"with T.Kernel(T.ceildiv(M, {bm}), threads=128) as bx:\n"
    b.kernels.append(head + indent(body, 4))


def fam_split_loop(b: Builder) -> None:
    rng = b.rng
    b.kind("split_loop")
    b.size("M", 1, 60)
    b.size("N", 1, 60)
    bm, bn = rng.choice(TILES[2:]), rng.choice(TILES[2:])
    while -(-b.sizes["M"] // bm) > 8:
        bm *= 2
    while -(-b.sizes["N"] // bn) > 8:
        bn *= 2
    dtype = rng.choice(["float32", "float16"])
    b.computes_in(dtype)
    A = b.input_mn(dtype)
    C = b.result("C", ("M", bn), "float32")
    body = f'X = T.alloc_shared(({bm}, {bn}), "{dtype}")\nAcc = T.alloc_fragment(({bm}, {bn}), "float32")\n'
    body += "T.clear(Acc)\n"
    off = rng.randint(-3, 3)
    rel = rng.choice(["<=", "<", ">=", ">"])
    q = f"k * {bn} + j {rel} bx * {bm} + i + {off}"
    if rng.random() < 0.3:
        q = f"k * {bn} + j < N - bx * {bm} - i"
    v = 'T.cast(X[i, j], "float32")'
    f = float_expr(rng, ["v"])
    form = rng.choice(["if", "if_else", "select"])
    # half the selects become an attention mask of 0 / -inf (codegen/masks.py), with a window's second
    # bound or not; drawn from a generator of their own, so that earlier seeds keep their programs
    masks = random.Random(repr(rng.getstate()))
    if form == "select" and masks.random() < 0.5:
        form = "mask"
    inner = f"T.copy({A}[bx * {bm}, k * {bn}], X)\n"
    if form == "mask":
        if masks.random() < 0.4:
            join = masks.choice(["and", "or"])
            q = f"{q} {join} k * {bn} + j {masks.choice(['<', '>='])} bx * {bm} + i - {masks.randint(0, 9)}"
        zero = f'T.cast(0, "{dtype}")' if masks.random() < 0.5 else "0"
        neg_inf = f'-T.infinity("{dtype}")'
        pick = f"{zero}, {neg_inf}" if masks.random() < 0.7 else f"{neg_inf}, {zero}"
        inner += f'Mask = T.alloc_fragment(({bm}, {bn}), "{dtype}")\n'
        inner += f"for i, j in T.Parallel({bm}, {bn}):\n    Mask[i, j] = T.if_then_else({q}, {pick})\n"
    inner += f"for i, j in T.Parallel({bm}, {bn}):\n    v = {v}\n"
    if form == "mask":
        inner += f'    Acc[i, j] = Acc[i, j] + T.exp2(T.cast(Mask[i, j], "float32") + v) - {f}\n'
    elif form == "if":
        inner += f"    if {q}:\n        Acc[i, j] = Acc[i, j] + {f}\n"
    elif form == "if_else":
        inner += f"    if {q}:\n        Acc[i, j] = Acc[i, j] + {f}\n    else:\n        Acc[i, j] = Acc[i, j] * 0.5\n"
    else:
        inner += f"    Acc[i, j] = T.if_then_else({q}, Acc[i, j] + {f}, Acc[i, j] - v)\n"
    ext = f"T.ceildiv(N, {bn})" if rng.random() < 0.6 else f"T.min(T.ceildiv(N, {bn}), bx + 1)"
    body += b.loop("k", ext) + indent(inner, 4) + "\n"
    body += f"T.copy(Acc, {C}[bx * {bm}, 0])\n"
    head = f"with T.Kernel(T.ceildiv(M, {bm}), threads=128) as bx:\n"
    b.kernels.append(head + indent(body, 4))


def fam_cast(b: Builder) -> None:
    rng = b.rng
    b.kind("cast")
    b.size("M", 1, 50)
    b.size("N", 1, 50)
    bm, bn = rng.choice(TILES), rng.choice(TILES)
    while -(-b.sizes["M"] // bm) * -(-b.sizes["N"] // bn) > 24:
        bm, bn = bm * 2, bn * 2
    form = rng.choice(["int8_in", "to_int", "fp8"])
    head = f"with T.Kernel(T.ceildiv(N, {bn}), T.ceildiv(M, {bm}), threads=128) as (bx, by):\n"
    loop = (
        f"for i, j in T.Parallel({bm}, {bn}):\n    y = by * {bm} + i\n    x = bx * {bn} + j\n    if y < M and x < N:\n"
    )
    if form == "int8_in":
        A = b.param("A", ("M", "N"), "int8", lo=-128, hi=128)
        out = rng.choice(["int32", "float32"])
        C = b.result("C", ("M", "N"), out)
        e = int_expr(rng, ["a", "y", "x"])
        expr = e if out == "int32" else f'T.cast({e}, "float32") * 0.5'
        if rng.random() < 0.4:  # and back through int8 (wraps)
            expr = f'T.cast(T.cast(({e}) % 100, "int8"), "{out}")'
        body = loop + f'        a = T.cast({A}[y, x], "int32")\n        {C}[y, x] = {expr}\n'
    elif form == "to_int":
        A = b.input_mn("float32")
        it = rng.choice(["int8", "int32"])
        C = b.result("C", ("M", "N"), "int32")
        body = loop + f'        {C}[y, x] = T.cast(T.cast({A}[y, x] * 20.0, "{it}"), "int32") * 3 + y\n'
    else:
        f8 = rng.choice(["float8_e4m3fn", "float8_e5m2"])
        src = rng.choice(["float32", "float16"])
        b.computes_in(src)
        A = b.param("A", ("M", "N"), src, lo=-4.0, hi=4.0)
        C = b.result("C", ("M", "N"), "float32")
        stage = rng.random() < 0.5
        if stage:  # through an fp8 tile
            body = f'F = T.alloc_fragment(({bm}, {bn}), "{f8}")\nT.copy({A}[by * {bm}, bx * {bn}], F)\n'
            body += loop + f'        {C}[y, x] = T.cast(F[i, j], "float32") * 2.0\n'
        else:
            body = loop + f'        {C}[y, x] = T.cast(T.cast({A}[y, x], "{f8}"), "float32") - 1.0\n'
    b.kernels.append(head + indent(body, 4))
    b.last = None


FAMILY_FNS = {
    "elementwise": fam_elementwise, "copy": fam_copy, "serial_loop": fam_serial_loop, "reduction": fam_reduction, "gemm": fam_gemm, "thread_view": fam_thread_view,
    "atomic": fam_atomic, "scan": fam_scan, "control": fam_control, "split_loop": fam_split_loop, "cast": fam_cast,
}  # fmt: skip

# families that read only an (M, N) input and so can follow another kernel (chaining)
CHAINABLE = [
    "elementwise",
    "copy",
    "serial_loop",
    "reduction",
    "thread_view",
    "atomic",
    "scan",
    "control",
    "split_loop",
]
