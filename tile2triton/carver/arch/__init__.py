"""``tilelang.carver.arch``: ``CUDA(target)`` describes the current GPU; ``driver`` queries it."""

from __future__ import annotations

from . import driver


class TileDevice:
    """A device description: name, SM count, shared memory, warp size, compute capability."""

    platform = "unknown"


class CUDA(TileDevice):
    platform = "CUDA"

    def __init__(self, target="cuda"):
        from ...tvm.target import Target

        self.target = target if isinstance(target, Target) else Target(target)
        self.name = driver.get_device_name()
        self.compute_max_core = driver.get_num_sms()
        self.smem_cap = driver.get_shared_memory_per_block()
        self.warp_size = 32
        self.reg_cap = driver.get_registers_per_block()
        props = driver.get_cuda_device_properties()
        major, minor = (8, 0) if props is None else (props.major, props.minor)
        self.compute_capability = f"{major}{minor}"
        self.sm_version = major * 10 + minor
        self.l2_cache_size_bytes = driver.get_persisting_l2_cache_max_size()
        self.bandwidth = [750, 12080]  # DRAM / L2 GB/s, TileLang's defaults
        self.transaction_size = [32, 128]
        self.max_smem_usage = 2 * self.smem_cap
        self.sm_partition = 4

    def __repr__(self) -> str:
        return f"CUDA({self.target})"


class CDNA(TileDevice):
    platform = "CDNA"

    def __init__(self, target="hip"):
        raise RuntimeError("tile2triton targets NVIDIA GPUs and Triton's interpreter, not AMD CDNA")


def get_arch(target="cuda") -> TileDevice:
    kind = str(getattr(getattr(target, "kind", None), "name", target)).split()[0]
    if kind == "cuda":
        return CUDA(target)
    if kind == "hip":
        return CDNA(target)
    raise ValueError(f"tile2triton's carver describes CUDA devices only, got target {target!r}")


def auto_infer_current_arch() -> TileDevice:
    return CUDA("cuda")


__all__ = ["CDNA", "CUDA", "TileDevice", "auto_infer_current_arch", "driver", "get_arch"]
