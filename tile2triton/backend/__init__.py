"""``tilelang.backend``: the target functions TileLang's scripts and tests import from it
(``from tilelang.backend.target import determine_target``).  The rest of TileLang's backend package
(pass pipelines, device and host codegens, execution backends) is its compiler; tile2triton
generates Triton instead and provides none of it."""

from . import target
from .target import (
    auto_detect_target,
    determine_target,
    list_target_detectors,
    register_target_detector,
    register_target_normalizer,
)

__all__ = [
    "auto_detect_target",
    "determine_target",
    "list_target_detectors",
    "register_target_detector",
    "register_target_normalizer",
    "target",
]
