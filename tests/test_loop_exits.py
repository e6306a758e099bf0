"""``break`` and ``continue`` in sequential loops (T.serial, T.unroll, range, while), lowered to
loop-carried flags (codegen/exits.py): at block level, in the thread view under per-thread
conditions, in nested loops; per-thread while conditions; thread-view variables every thread holds
alike (passes/uniform.py); and the forms that cannot be supported (one error at the user's line)."""

import pytest
import torch
from t2t_util import assert_close, assert_equal, poison
from test_fuzz_regressions import compile_for_hopper

import tile2triton as tilelang
import tile2triton.language as T
from tile2triton import TileLangCompileError
from tile2triton.oracle import reference

THIS_FILE = "test_loop_exits.py"


def _code(kernel) -> str:
    src = kernel.get_kernel_source(interpret=False)
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


# ----------------------------------------------------------------------------- block level
@tilelang.jit
def tiles_until_over(M, N, BLOCK, limit):
    """Per row: add up column tiles (shared copy + reduction) until the running sum passes
    ``limit``; skip tiles whose sum is negative (continue)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Total: T.Tensor((M,), T.float32), Used: T.Tensor((M,), T.int32)):
        with T.Kernel(M, threads=64) as bx:
            A_s = T.alloc_shared((1, BLOCK), T.float32)
            part = T.alloc_fragment((1,), T.float32)
            total = T.alloc_var(T.float32)
            used = T.alloc_var(T.int32)
            total = 0.0
            used = 0
            for k in T.serial(T.ceildiv(N, BLOCK)):
                T.copy(A[bx, k * BLOCK], A_s)
                T.reduce_sum(A_s, part, dim=1)
                if part[0] < 0:
                    continue
                total += part[0]
                used += 1
                if total > limit:
                    break
            Total[bx] = total
            Used[bx] = used

    return main


def _tiles_until_over_ref(A, BLOCK, limit):
    totals, useds, broke = [], [], 0
    for row in A.double():
        total, used = 0.0, 0
        for k in range(0, row.numel(), BLOCK):
            part = float(row[k : k + BLOCK].sum())
            if part < 0:
                continue
            total += part
            used += 1
            if total > limit:
                broke += 1
                break
        totals.append(total)
        useds.append(used)
    return torch.tensor(totals, dtype=torch.float64), torch.tensor(useds, dtype=torch.int32), broke


def test_break_and_continue_at_block_level(dev):
    M, N, BLOCK, limit = 37, 300, 32, 25.0  # 10 tiles, the last one partial
    kernel = tiles_until_over(M, N, BLOCK, limit)
    A = torch.randn(M, N, device=dev) + 0.1
    total, used = poison((M,), device=dev), poison((M,), torch.int32, device=dev)
    kernel(A, total, used)
    ref_total, ref_used, broke = _tiles_until_over_ref(A.cpu(), BLOCK, limit)
    assert 0 < broke < M  # some rows break early, some run every tile
    assert_close(total, ref_total, atol=1e-4, rtol=1e-5)
    assert_equal(used, ref_used)
    code = _code(kernel)
    assert "break" not in code and "continue" not in code  # Triton has neither
    assert "k_running = True" in code and "if k_running:" in code


@tilelang.jit
def first_over_while(M, N, thr):
    """A while loop over a row's elements with a break: the first index above ``thr`` (N if none)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), First: T.Tensor((M,), T.int32)):
        with T.Kernel(M, threads=32) as bx:
            j = T.alloc_var(T.int32)
            j = 0
            while j < N:
                if A[bx, j] > thr:
                    break
                j += 1
            First[bx] = j

    return main


def _first_over_ref(A, thr):
    over = A > thr
    first = torch.where(over.any(1), over.int().argmax(1), torch.full((A.shape[0],), A.shape[1]))
    return first.to(torch.int32)


def test_break_in_while_loop(dev):
    M, N, thr = 45, 71, 1.8
    A = torch.randn(M, N, device=dev)
    first = poison((M,), torch.int32, device=dev)
    first_over_while(M, N, thr)(A, first)
    ref = _first_over_ref(A.cpu(), thr)
    assert 0 < int((ref == N).sum()) < M
    assert_equal(first, ref)


@tilelang.jit
def count_before_over_nested(M, N, thr):
    """Nested loops: the break leaves only the inner loop; the outer one goes on."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Count: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=1):
            count = T.alloc_var(T.int32)
            count = 0
            for i in T.serial(M):
                for j in range(N):
                    if A[i, j] > thr:
                        break
                    count += 1
            Count[0] = count

    return main


def test_break_leaves_only_the_inner_loop(dev):
    M, N, thr = 23, 41, 1.5
    A = torch.randn(M, N, device=dev)
    count = poison((1,), torch.int32, device=dev)
    count_before_over_nested(M, N, thr)(A, count)
    ref = _first_over_ref(A.cpu(), thr).sum().reshape(1)
    assert_equal(count, ref)


@tilelang.jit
def unrolled_break(M, thr):
    @T.prim_func
    def main(A: T.Tensor((M, 7), T.float32), First: T.Tensor((M,), T.int32)):
        with T.Kernel(M, threads=1) as bx:
            first = T.alloc_var(T.int32)
            first = 7
            for j in T.unroll(7):
                if A[bx, j] > thr:
                    first = j
                    break
            First[bx] = first

    return main


def test_break_in_unrolled_loop(dev):
    M, thr = 29, 1.0
    A = torch.randn(M, 7, device=dev)
    first = poison((M,), torch.int32, device=dev)
    unrolled_break(M, thr)(A, first)
    assert_equal(first, _first_over_ref(A.cpu(), thr))


@tilelang.jit
def odd_sum_until_negative_tir_spelling(M, N):
    """TileLang's T.loop_break() and TIR's T.continue_loop(): the same as break / continue."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.int32), Out: T.Tensor((M,), T.int32)):
        with T.Kernel(M, threads=1) as bx:
            total = T.alloc_var(T.int32)
            total = 0
            for j in T.serial(N):
                if A[bx, j] < 0:
                    T.loop_break()
                if A[bx, j] % 2 == 0:
                    T.continue_loop()
                total += A[bx, j]
            Out[bx] = total

    return main


def test_loop_break_and_continue_loop_calls(dev):
    M, N = 31, 19
    A = torch.randint(-4, 60, (M, N), dtype=torch.int32, device=dev)
    out = poison((M,), torch.int32, device=dev)
    odd_sum_until_negative_tir_spelling(M, N)(A, out)
    ref = []
    for row in A.cpu().tolist():
        total = 0
        for v in row:
            if v < 0:
                break
            if v % 2 == 0:
                continue
            total += v
        ref.append(total)
    assert_equal(out, torch.tensor(ref, dtype=torch.int32))


# ----------------------------------------------------------------------------- thread view
@tilelang.jit
def per_thread_scan(M, N, thr, threads):
    """Each thread scans its own row: per-thread break and continue (lane flags)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), S: T.Tensor((M,), T.float32), P: T.Tensor((M,), T.int32)):
        with T.Kernel(T.ceildiv(M, threads), threads=threads) as bx:
            tx = T.get_thread_binding()
            row = bx * threads + tx
            acc = T.alloc_var(T.float32)
            pos = T.alloc_var(T.int32)
            acc = 0.0
            pos = N
            if row < M:
                for j in T.serial(N):
                    if A[row, j] > thr:
                        pos = j
                        break
                    if A[row, j] < -thr:
                        continue
                    acc += A[row, j]
                S[row] = acc
                P[row] = pos

    return main


def test_per_thread_break_and_continue_in_thread_view(dev):
    M, N, thr, threads = 45, 29, 1.6, 32
    A = torch.randn(M, N, device=dev)
    s, p = poison((M,), device=dev), poison((M,), torch.int32, device=dev)
    kernel = per_thread_scan(M, N, thr, threads)
    kernel(A, s, p)
    ref_s, ref_p = [], []
    for row in A.cpu().double():
        acc, pos = 0.0, N
        for j in range(N):
            if row[j] > thr:
                pos = j
                break
            if row[j] < -thr:
                continue
            acc += float(row[j])
        ref_s.append(acc)
        ref_p.append(pos)
    assert_close(s, torch.tensor(ref_s, dtype=torch.float64), atol=1e-4, rtol=1e-5)
    assert_equal(p, torch.tensor(ref_p, dtype=torch.int32))
    assert "j_running = tl.full([32], True, tl.int1)" in _code(kernel)  # one flag per thread


@tilelang.jit
def first_nonnegative(M, N, threads):
    """A per-thread continue, then a break every thread still in the iteration takes."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), Out: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, threads), threads=threads) as bx:
            tx = T.get_thread_binding()
            row = bx * threads + tx
            first = T.alloc_var(T.float32)
            first = 0.0
            for j in T.serial(N):
                if A[row, j] < 0:
                    continue
                first = A[row, j]
                break
            if row < M:
                Out[row] = first

    return main


def test_unconditional_break_after_per_thread_continue(dev):
    M, N, threads = 50, 6, 32
    A = torch.randn(M, N, device=dev) - 1.0  # a third of the rows have no element >= 0
    out = poison((M,), device=dev)
    first_nonnegative(M, N, threads)(A, out)
    a = A.cpu()
    has = (a >= 0).any(1)
    ref = torch.where(has, a.gather(1, (a >= 0).int().argmax(1, keepdim=True)).squeeze(1), torch.zeros(M))
    assert 0 < int((~has).sum()) < M
    assert_equal(out, ref)


@tilelang.jit
def collatz_steps(M, limit, threads):
    """A while loop whose condition differs per thread, with a per-thread break."""

    @T.prim_func
    def main(A: T.Tensor((M,), T.int32), Steps: T.Tensor((M,), T.int32)):
        with T.Kernel(T.ceildiv(M, threads), threads=threads) as bx:
            tx = T.get_thread_binding()
            i = bx * threads + tx
            x = T.alloc_var(T.int32)
            n = T.alloc_var(T.int32)
            n = 0
            x = A[i]
            while x != 1:
                if x % 2 == 0:
                    x = x // 2
                else:
                    x = 3 * x + 1
                n += 1
                if n >= limit:
                    break
            if i < M:
                Steps[i] = n

    return main


def test_per_thread_while_condition_and_break(dev):
    M, limit, threads = 77, 25, 48  # 48 threads: padded to 64 lanes, which must not keep the loop going
    A = torch.randint(1, 90, (M,), dtype=torch.int32, device=dev)
    steps = poison((M,), torch.int32, device=dev)
    collatz_steps(M, limit, threads)(A, steps)
    ref = []
    for a in A.cpu().tolist():
        x, n = a, 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            n += 1
            if n >= limit:
                break
        ref.append(n)
    ref = torch.tensor(ref, dtype=torch.int32)
    assert 0 < int((ref == limit).sum()) < M
    assert_equal(steps, ref)


@tilelang.jit
def histogram_rounds(N, threads, need):
    """topk_selector's shape: a variable every thread holds alike (read back from shared memory)
    decides a break; after it, T.fill and T.sync_threads act for the whole block."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.int32), Rounds: T.Tensor((1,), T.int32), Seen: T.Tensor((1,), T.int32)):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            hist = T.alloc_shared((4,), T.int32)
            left = T.alloc_var(T.int32)
            seen = T.alloc_var(T.int32)
            rounds = T.alloc_var(T.int32)
            left = need
            seen = 0
            rounds = 0
            for r in T.serial(8):
                if left <= 0:
                    break
                T.sync_threads()
                T.fill(hist, 0)
                T.sync_threads()
                for s in T.serial(T.ceildiv(N, threads)):
                    i = s * threads + tx
                    if i < N and A[i] % 8 == r:
                        T.atomic_add(hist[0], 1)
                T.sync_threads()
                seen = hist[0]
                left = left - seen
                rounds += 1
            if tx == 0:
                Rounds[0] = rounds
                Seen[0] = seen

    return main


def test_block_uniform_break_before_tile_ops_in_thread_view(dev):
    N, threads, need = 300, 64, 95
    A = torch.randint(0, 1000, (N,), dtype=torch.int32, device=dev)
    rounds, seen = poison((1,), torch.int32, device=dev), poison((1,), torch.int32, device=dev)
    kernel = histogram_rounds(N, threads, need)
    kernel(A, rounds, seen)
    counts = [int((A.cpu() % 8 == r).sum()) for r in range(8)]
    left, ref_rounds, ref_seen = need, 0, 0
    for r in range(8):
        if left <= 0:
            break
        ref_seen = counts[r]
        left -= ref_seen
        ref_rounds += 1
    assert 0 < ref_rounds < 8
    assert_equal(rounds, torch.tensor([ref_rounds], dtype=torch.int32))
    assert_equal(seen, torch.tensor([ref_seen], dtype=torch.int32))
    code = _code(kernel)
    assert "r_running = True" in code  # a scalar flag: the whole block leaves together
    assert "left = tl.full([], 95, tl.int32)" in code  # one value for the block, not one per thread


# ----------------------------------------------------------------------------- what cannot be
def _compile_error(prim_func, match):
    with pytest.raises(TileLangCompileError, match=match) as info:
        tilelang.compile(prim_func).get_kernel_source()
    assert THIS_FILE in str(info.value)  # names the user's file and line
    return info.value


def test_break_in_parallel_is_an_error():
    @T.prim_func
    def kernel(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                if A[i] > 0:
                    break
                A[i] = 0.0

    _compile_error(kernel, r"'break' cannot leave a T.Parallel loop")


def test_continue_in_pipelined_is_an_error():
    @T.prim_func
    def kernel(A: T.Tensor((100, 32), T.float32), B: T.Tensor((32,), T.float32)):
        with T.Kernel(1, threads=32):
            acc = T.alloc_fragment((32,), T.float32)
            T.clear(acc)
            for k in T.Pipelined(100, num_stages=2):
                if k % 3 == 0:
                    continue
                for j in T.Parallel(32):
                    acc[j] += A[k, j]
            T.copy(acc, B)

    _compile_error(kernel, r"'continue' cannot leave a T.Pipelined loop")


def test_tile_op_after_per_thread_break_is_an_error():
    @T.prim_func
    def kernel(A: T.Tensor((64, 16), T.float32)):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            S = T.alloc_shared((16,), T.float32)
            for j in T.serial(16):
                if A[tx, j] > 0:
                    break
                T.fill(S, 0.0)  # would run for the threads still in the loop only

    error = _compile_error(kernel, r"T.fill of a block-level buffer cannot follow a per-thread 'break'")
    assert "T.fill(S, 0.0)" in str(error)  # at the tile operation's line


# ----------------------------------------------------------------------------- GPU type rules
@pytest.mark.parametrize(
    "build",
    [
        lambda: tiles_until_over(37, 300, 32, 25.0),
        lambda: per_thread_scan(45, 29, 1.6, 32),
        lambda: collatz_steps(77, 25, 48),
        lambda: histogram_rounds(300, 64, 95),
        lambda: first_nonnegative(50, 6, 32),
    ],
    ids=["block-level", "per-thread", "per-thread-while", "uniform-thread-view", "break-after-continue"],
)
def test_flags_keep_their_types_on_the_gpu(build, tmp_path):
    """The flags are loop-carried: Triton (3.6 too) checks their types only when it compiles."""
    compile_for_hopper(build(), tmp_path)


@tilelang.jit
def byte_of_bits(N, threads):
    """A uint32 shifted by an int32 amount, cast to int32 and carried by a loop (topk_selector's
    radix passes): TVM computes uint32 >> int32 in int32; the Triton value must be int32 too."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), Out: T.Tensor((N,), T.int32)):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            tx = T.get_thread_binding()
            i = bx * threads + tx
            byte = T.alloc_var(T.int32)
            total = T.alloc_var(T.int32)
            byte = 0
            total = 0
            for r in T.serial(4):
                byte = T.cast((T.reinterpret(A[i], T.uint32) >> (24 - r * 8)) & 0xFF, T.int32)
                total = total * 3 + byte
            if i < N:
                Out[i] = total

    return main


def test_unsigned_shift_by_a_signed_amount_keeps_the_loop_type(dev, tmp_path):
    N, threads = 150, 64
    A = torch.randn(N, device=dev)
    out = poison((N,), torch.int32, device=dev)
    kernel = byte_of_bits(N, threads)
    kernel(A, out)
    bits = A.cpu().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    ref = torch.zeros(N, dtype=torch.int64)
    for r in range(4):
        ref = ref * 3 + ((bits >> (24 - r * 8)) & 0xFF)
    assert_equal(out, ref.to(torch.int32))
    compile_for_hopper(kernel, tmp_path)


# ----------------------------------------------------------------------------- reference executor
def test_reference_executor_runs_break_and_continue():
    """oracle/reference.py (the fuzzer's and tests' torch executor) takes break / continue and
    per-thread while conditions with the same meaning."""
    M, N = 45, 29
    A = torch.randn(M, N)
    s, p = poison((M,)), poison((M,), torch.int32)
    reference.run(per_thread_scan(M, N, 1.6, 32), A, s, p)
    s2, p2 = poison((M,)), poison((M,), torch.int32)
    per_thread_scan(M, N, 1.6, 32)(A, s2, p2)
    assert_close(s, s2.double(), atol=1e-4, rtol=1e-5)
    assert_equal(p, p2)

    X = torch.randint(1, 90, (77,), dtype=torch.int32)
    steps, steps2 = poison((77,), torch.int32), poison((77,), torch.int32)
    reference.run(collatz_steps(77, 25, 48), X, steps)
    collatz_steps(77, 25, 48)(X, steps2)
    assert_equal(steps, steps2)

    B = torch.randn(37, 300) + 0.1
    total, used = poison((37,)), poison((37,), torch.int32)
    reference.run(tiles_until_over(37, 300, 32, 25.0), B, total, used)
    ref_total, ref_used, _ = _tiles_until_over_ref(B, 32, 25.0)
    assert_close(total, ref_total, atol=1e-4, rtol=1e-5)
    assert_equal(used, ref_used)

    count = poison((1,), torch.int32)
    C = torch.randn(23, 41)
    reference.run(count_before_over_nested(23, 41, 1.5), C, count)
    assert_equal(count, _first_over_ref(C, 1.5).sum().reshape(1))
