"""``tilelang.backend.target``: TileLang's target detection and validation, for tile2triton's targets.

``determine_target("auto")`` is the target of the enclosing ``with tvm.target.Target(...)``, else the
first registered detector's: ``"cuda"`` where torch sees a CUDA (or ROCm: ``"hip"``) device, else
``"cpu"``, tile2triton's target for CPU tensors (Triton's interpreter; TileLang would raise there).
A target given explicitly (a string, a ``{"kind": ..., "arch": ...}`` dict or a ``Target``) is
checked as TileLang checks it and handed back, or as a ``Target`` with ``return_object=True``;
``tilelang.compile(func, target=...)`` takes each of these forms."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from ..tvm.target import Target

TargetConfig = dict[str, object]
TargetInput = str | Mapping[str, object] | Target
TargetLike = str | TargetConfig | Target
TargetDetector = Callable[[], TargetInput | None]
TargetNormalizer = Callable[[TargetLike], TargetInput | None]


@dataclass(frozen=True, slots=True)
class TargetDetectorSpec:
    name: str
    detect: TargetDetector


@dataclass(frozen=True, slots=True)
class TargetNormalizerSpec:
    name: str
    normalize: TargetNormalizer


_TARGET_DETECTORS: dict[str, TargetDetectorSpec] = {}
_TARGET_NORMALIZERS: dict[str, TargetNormalizerSpec] = {}


def register_target_detector(name: str, detect: TargetDetector, *, override: bool = False) -> TargetDetectorSpec:
    if name in _TARGET_DETECTORS and not override:
        raise ValueError(f"Target detector {name!r} is already registered")
    spec = _TARGET_DETECTORS[name] = TargetDetectorSpec(name=name, detect=detect)
    return spec


def register_target_normalizer(
    name: str, normalize: TargetNormalizer, *, override: bool = False
) -> TargetNormalizerSpec:
    if name in _TARGET_NORMALIZERS and not override:
        raise ValueError(f"Target normalizer {name!r} is already registered")
    spec = _TARGET_NORMALIZERS[name] = TargetNormalizerSpec(name=name, normalize=normalize)
    return spec


def list_target_detectors() -> tuple[str, ...]:
    return tuple(_TARGET_DETECTORS)


def _normalize_registered_target(target: TargetLike) -> TargetInput | None:
    for spec in _TARGET_NORMALIZERS.values():
        normalized = spec.normalize(target)
        if normalized is not None:
            return normalized
    return None


def auto_detect_target() -> TargetInput:
    errors: list[str] = []
    for spec in _TARGET_DETECTORS.values():
        try:
            detected = spec.detect()
        except Exception as err:  # a detector that fails is skipped, as in TileLang
            errors.append(f"{spec.name}: {err}")
            continue
        if detected is not None:
            return detected
    details = f" Tried: {', '.join(errors)}." if errors else ""
    raise ValueError(f"No registered target detector found an available target.{details}")


def _validate_manual_target(target: TargetLike) -> TargetInput:
    normalized = _normalize_registered_target(target)
    if normalized is not None:
        return normalized
    if isinstance(target, Target):
        return target
    if isinstance(target, dict):
        try:
            Target(target)
        except Exception as err:
            raise AssertionError(f"Target {target} is not supported. Pass a valid target config dict.") from err
        return target
    if isinstance(target, str) and target.strip():
        try:
            Target(target.strip())
        except Exception as err:
            raise AssertionError(
                f"Target {target} is not supported. Pass target options as a dict when the target needs attributes."
            ) from err
        return target.strip()
    raise AssertionError(f"Target {target} is not supported")


def determine_target(
    target: TargetLike | Literal["auto"] = "auto", return_object: bool = False
) -> str | Mapping[str, object] | Target:
    """The target to compile for (TileLang's function of this name)."""
    if target == "auto":
        current = Target.current(allow_none=True)
        chosen = current if current is not None else auto_detect_target()
    else:
        chosen = _validate_manual_target(target)
    normalized = _normalize_registered_target(chosen)
    if normalized is not None:
        chosen = normalized
    if return_object and not isinstance(chosen, Target):
        return Target(chosen)
    return chosen


def _detect_torch_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "hip" if getattr(torch.version, "hip", None) else "cuda"
    return "cpu"  # Triton's interpreter runs CPU tensors


register_target_detector("torch", _detect_torch_device)
