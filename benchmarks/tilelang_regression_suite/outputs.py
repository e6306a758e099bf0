"""Whether the two implementations computed the same outputs for a case, from the samples the
children recorded (child.sample): the tensors each timed call returned, compared element by
element within a tolerance for their dtype."""

from __future__ import annotations

import torch

# (rtol, atol relative to the reference's RMS) per dtype: a few units in the last place of the
# output dtype, as two orders of accumulation differ
TOLERANCE = {
    "torch.float64": (1e-6, 1e-6),
    "torch.float32": (1e-3, 1e-3),
    "torch.float16": (1e-2, 1e-2),
    "torch.bfloat16": (2e-2, 2e-2),
    "torch.float8_e4m3fn": (0.13, 0.13),
    "torch.float8_e5m2": (0.26, 0.26),
}
MISMATCH_ALLOWED = 1e-3  # fraction of elements outside tolerance (atomics' order, ties)


def _flatten(s) -> list:
    if s is None:
        return []
    if isinstance(s, dict):
        return [s]
    return [t for part in s for t in _flatten(part)]


def compare_tensor(a: dict, b: dict) -> str | None:
    """None when sample ``a`` (TileLang's) matches ``b`` (tile2triton's), else what differs."""
    if a["shape"] != b["shape"] or a["dtype"] != b["dtype"]:
        return f"{a['dtype']}{a['shape']} vs {b['dtype']}{b['shape']}"
    x, y = a["values"], b["values"]
    nan_x, nan_y = torch.isnan(x), torch.isnan(y)
    if not torch.equal(nan_x, nan_y):
        return f"NaN at {int((nan_x ^ nan_y).sum())} of {x.numel()} sampled elements"
    x, y = x[~nan_x], y[~nan_y]
    if x.numel() == 0:
        return None
    rtol, atol = TOLERANCE.get(a["dtype"], (0.0, 0.0))  # integers, bool: exact
    scale = float(x.abs().square().mean().sqrt()) or 1.0
    off = (x - y).abs() > atol * scale + rtol * x.abs()
    if int(off.sum()) <= MISMATCH_ALLOWED * x.numel():
        return None
    worst = float((x - y).abs().max())
    return f"{int(off.sum())} of {x.numel()} sampled elements off (max abs diff {worst:.3g}, RMS {scale:.3g})"


def compare_case(tl: dict, t2: dict, tl_samples: list | None, t2_samples: list | None) -> str:
    """'agree', 'differ: ...', 'not exposed' (no timed call returned a tensor) or 'inputs differ'
    (the random generators stood elsewhere when the timed calls began: not comparable)."""
    if tl_samples is None or t2_samples is None or len(tl_samples) != len(t2_samples):
        return "not exposed"
    if [c.get("rng") for c in tl["bench"]] != [c.get("rng") for c in t2["bench"]]:
        return "inputs differ"
    seen = 0
    for k, (sa, sb) in enumerate(zip(tl_samples, t2_samples)):
        ta, tb = _flatten(sa), _flatten(sb)
        if not ta and not tb:
            continue
        if len(ta) != len(tb):
            return f"differ: call {k} returned {len(ta)} vs {len(tb)} tensors"
        for j, (a, b) in enumerate(zip(ta, tb)):
            why = compare_tensor(a, b)
            if why is not None:
                return f"differ: call {k} output {j}: {why}"
            seen += 1
    return "agree" if seen else "not exposed"
