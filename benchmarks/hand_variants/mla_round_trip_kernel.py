"""The kernel of mla_round_trip.py (its docstring says what MODE 1 changes)."""

import triton
import triton.language as tl


@triton.jit
def _bar(x):
    # a CTA barrier Triton's pipeliner does not see (an inline-asm op in the loop's last stage)
    return tl.inline_asm_elementwise(
        "bar.sync 0;\n mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=False, pack=1
    )


@triton.jit
def _ld_f32(ptr):
    return tl.inline_asm_elementwise("ld.global.f32 $0, [$1];", "=r,l", [ptr], dtype=tl.float32, is_pure=False, pack=1)


@triton.jit
def _ld_bf16(ptr):
    return tl.inline_asm_elementwise("ld.global.b16 $0, [$1];", "=h,l", [ptr], dtype=tl.bfloat16, is_pure=False, pack=1)


@triton.jit
def mla_rt(Q, KV, Indices, q_start_index_s, Output, Pbuf, seq_len, seq_len_kv, TOPK: tl.constexpr, MODE: tl.constexpr):
    s_i = tl.program_id(0)
    max_kv_i = tl.load(q_start_index_s) + s_i
    h = tl.arange(0, 64)
    c256 = tl.arange(0, 256)
    c64 = tl.arange(0, 64)
    q_row = Q + s_i * 36864 + h[:, None] * 576
    Q0 = tl.load(q_row + c256[None, :])
    Q1 = tl.load(q_row + 256 + c256[None, :])
    Q2 = tl.load(q_row + 512 + c64[None, :])
    sumexp = tl.zeros([64], tl.float32)
    m_i = tl.full([64], -1073741824, tl.float32)
    acc_o_l = tl.zeros([64, 256], tl.float32)
    acc_o_r = tl.zeros([64, 256], tl.float32)
    area = (Pbuf + s_i.to(tl.int64) * (2 * 16640)).to(tl.pointer_type(tl.float32), bitcast=True)
    for it in tl.range(0, TOPK // 64, num_stages=2):
        idx = tl.load(Indices + s_i * TOPK + it * 64 + c64)
        keep = (idx <= max_kv_i) & (idx < seq_len_kv) & (idx >= 0)
        mask_s = tl.broadcast_to(tl.where(idx <= max_kv_i, 0, -float("inf"))[None, :], (64, 64))
        kv_row = KV + idx[:, None] * 576
        K0 = tl.load(kv_row + c256[None, :], mask=keep[:, None], other=0)
        K1 = tl.load(kv_row + 256 + c256[None, :], mask=keep[:, None], other=0)
        K2 = tl.load(kv_row + 512 + c64[None, :], mask=keep[:, None], other=0)
        if MODE == 0:
            acc_s = tl.dot(Q0, tl.trans(K0), mask_s)
            acc_s = tl.dot(Q1, tl.trans(K1), acc_s)
            acc_s = tl.dot(Q2, tl.trans(K2), acc_s)
        else:
            opaque = tl.broadcast_to(tl.where(idx < -1, 1.0, 0.0)[None, :], (64, 64))  # zeros Triton cannot fold
            acc_s = (
                tl.dot(Q0, tl.trans(K0), mask_s) + tl.dot(Q1, tl.trans(K1), opaque) + tl.dot(Q2, tl.trans(K2), opaque)
            )
        m_i_prev = m_i
        m_i = tl.maximum(m_i, tl.max(acc_s, axis=1))
        alpha = tl.exp2((m_i_prev - m_i) * 0.06011229333333333)
        acc_s = tl.exp2(acc_s * 0.06011229333333333 - m_i[:, None] * 0.06011229333333333)
        sumexp = sumexp * alpha + tl.sum(acc_s, axis=1)
        if MODE == 0:
            P = acc_s.to(tl.bfloat16)
            alpha_o = alpha
        else:
            slot = area + (it % 2) * 4160
            p_ptr = slot.to(tl.pointer_type(tl.bfloat16), bitcast=True) + h[:, None] * 64 + c64[None, :]
            a_ptr = slot + 4096 + h
            tl.store(p_ptr, acc_s.to(tl.bfloat16))
            tl.store(a_ptr, alpha)
            token = _bar(tl.full([1], 0, tl.int32))
            P = _ld_bf16(p_ptr + tl.max(token, axis=0))
            alpha_o = _ld_f32(a_ptr + tl.max(token, axis=0))
        acc_o_l = acc_o_l * alpha_o[:, None]
        acc_o_l = tl.dot(P, K0, acc_o_l)
        acc_o_r = acc_o_r * alpha_o[:, None]
        acc_o_r = tl.dot(P, K1, acc_o_r)
    o_row = Output + s_i * 32768 + h[:, None] * 512
    tl.store(o_row + c256[None, :], (acc_o_l / sumexp[:, None]).to(tl.bfloat16))
    tl.store(o_row + 256 + c256[None, :], (acc_o_r / sumexp[:, None]).to(tl.bfloat16))
