"""``T`` device-side utilities: random numbers, packed loads/stores (``T.ldg*``/``T.stg*``, ``T.__ldg``),
device print and assert, inline PTX and the ``T.ptx_*`` reads.
"""

from __future__ import annotations

from ._primitive import _kernel_only


@_kernel_only("rng_init")
def rng_init(seed, seq=None, off=0, generator="curandStatePhilox4_32_10_t"):
    """Start the kernel's random stream: Philox keyed by ``seed`` and ``seq``, from counter ``off``."""


@_kernel_only("rng_rand")
def rng_rand():
    """The next uint32 of the stream started by ``T.rng_init`` (one per T.Parallel element)."""


@_kernel_only("rng_rand_float")
def rng_rand_float(bit=32, dist="uniform"):
    """The next float32/float64 of the stream: uniform in [0, 1) or standard normal."""


def _packed_load(name: str, bits: int, predicated: bool):
    if predicated:

        def fn(src, pred=None):
            pass

    else:

        def fn(src):
            pass

    fn.__name__ = name
    fn.__doc__ = f"The {bits} bits at ``src`` (x[i] or x[i:i+n]): a plain load of the elements they cover."
    return _kernel_only(name)(fn)


def _packed_store(name: str, bits: int, predicated: bool):
    if predicated:

        def fn(dst, value, pred=None):
            pass

    else:

        def fn(dst, value):
            pass

    fn.__name__ = name
    fn.__doc__ = f"Store the {bits} bits of ``value`` at ``dst``: a plain store of the elements they cover."
    return _kernel_only(name)(fn)


for _bits in (32, 64, 128, 256):
    globals()[f"ldg{_bits}"] = _packed_load(f"ldg{_bits}", _bits, True)
    globals()[f"stg{_bits}"] = _packed_store(f"stg{_bits}", _bits, True)
for _bits in (32, 64, 128):
    globals()[f"lds{_bits}"] = _packed_load(f"lds{_bits}", _bits, False)
    globals()[f"sts{_bits}"] = _packed_store(f"sts{_bits}", _bits, False)


@_kernel_only("__ldg")
def __ldg(load_or_buf, index=None):
    """``x[i]`` through the read-only data cache: a plain load (Triton picks the cache path)."""


@_kernel_only("print")
def print(obj=None, msg="", warp_group_id=0, warp_id=0):  # noqa: A001
    """Device print."""


@_kernel_only("device_assert")
def device_assert(condition, msg="", no_stack_info=False):
    """Check ``condition`` on the device (Triton checks it in debug mode: ``TRITON_DEBUG=1``)."""


# --- inline PTX: the escape hatch for what Triton cannot say portably (tile2triton extension) ------
@_kernel_only("inline_asm")
def inline_asm(asm, constraints, *args, dtype="float32", is_pure=True, pack=1):
    """Element-wise inline PTX, lowered to ``tl.inline_asm_elementwise(asm, constraints, args,
    dtype, is_pure, pack)``: ``$0`` is the result, ``$1...`` the arguments (``"=r,r"``: one 32-bit
    result, one 32-bit argument).  GPU only: under Triton's interpreter it is a compile error."""


@_kernel_only("ptx_ex2")
def ptx_ex2(x):
    """``ex2.approx.f32``: fast 2**x (max relative error ~2**-22). Interpreter: ``tl.exp2``."""


@_kernel_only("ptx_tanh")
def ptx_tanh(x):
    """``tanh.approx.f32``: fast tanh (max abs error ~2**-10.9). Interpreter: exact-enough fp32 tanh."""


@_kernel_only("ptx_rcp")
def ptx_rcp(x):
    """``rcp.approx.ftz.f32``: fast 1/x (denormals flushed). Interpreter: ``1.0 / x``."""


@_kernel_only("ptx_rsqrt")
def ptx_rsqrt(x):
    """``rsqrt.approx.ftz.f32``: fast 1/sqrt(x). Interpreter: ``tl.rsqrt``."""


@_kernel_only("ptx_laneid")
def ptx_laneid():
    """``%laneid`` of the hardware thread computing each element (int32).  Interpreter: the
    element's logical thread index modulo 32."""


@_kernel_only("ptx_warpid")
def ptx_warpid():
    """``%warpid`` of the hardware thread computing each element (int32; PTX documents it as
    volatile).  Interpreter: the element's logical thread index // 32."""


@_kernel_only("ptx_smid")
def ptx_smid():
    """``%smid``: the SM running this program (int32).  Interpreter: 0."""


@_kernel_only("ptx_clock64")
def ptx_clock64():
    """``%clock64``: the SM's cycle counter (int64).  Interpreter: 0."""


@_kernel_only("ptx_globaltimer")
def ptx_globaltimer():
    """``%globaltimer``: nanoseconds, a global clock (int64).  Interpreter: 0."""
