"""A profile's time as the calibration's buckets (``visprof.analysis.calibrate``): shares of its
profiled time by category (``cat:``), sub-category (``sub:``), op type (``op:``, from the roofline
groups every profile keeps), kernel family (``kf:``, where recorded) and the idle time (``idle``).

The buckets nest: an op type or kernel family counts in its category and sub-category too
(``parent_buckets``), so a fitted correction adds to its parent's.
"""
from __future__ import annotations

import re
from collections import defaultdict

from visprof.attribution.op_types import GEMM_OPS, INTENSITY_CLASSES

__all__ = ["ATTENTION_CLASSES", "buckets_of", "group_op_type", "op_bucket", "parent_buckets", "splits_families"]

# Spellings of one op type across capture levels and versions: a profile of 2026-11 records
# ``aten.native_group_norm.default`` and ``aten.convolution.default`` where a newer one records
# ``aten.group_norm.default`` and ``aten.conv2d.default``; in-place and out-of-place ops run the
# same kernels. The convolution's kind is its sub-category, so the name drops it.
_CONVOLUTIONS = {"conv1d", "conv2d", "conv3d", "convolution", "cudnn_convolution"}
# An attention op's shape class, from its FLOPs per byte: a fused attention over N tokens of
# head width d does 4 N^2 d FLOPs per head on 8 N d bytes (q, k, v, out at 16 bits), N / 2
# FLOPs per byte. So below 32: windows of under 64 tokens (Swin's 49); 32-96: 64-192 tokens;
# above: global attention over more (ViT-B/16's 197). Bounds from the physics, not a fit; the
# quartiles over the store's attention groups are 24, 46 and 98 FLOPs per byte.
ATTENTION_CLASSES = ((32.0, "short"), (96.0, "mid"))


def group_op_type(op: str | None, flops: float, nbytes: float) -> str:
    """A roofline group's op as a stable type: ``aten.native_group_norm.default`` -> ``group_norm``,
    ``aten.relu_.default`` -> ``relu``, any convolution -> ``convolution``, a GEMM -> ``gemm [high
    intensity]`` (``visprof.attribution.op_types``' classes), an attention op with its sequence class
    (``ATTENTION_CLASSES``), a row without an op as it is."""
    if not op or not op.startswith("aten."):
        return op or "?"
    if GEMM_OPS.search(op):
        if not flops or not nbytes:
            return "gemm [intensity unknown]"
        label = next((cls for bound, cls in INTENSITY_CLASSES if flops / nbytes < bound), "high")
        return f"gemm [{label} intensity]"
    name = op[len("aten."):].split(".", 1)[0].strip("_")
    name = re.sub(r"^native_", "", name)
    if "attention" in name and flops and nbytes:
        label = next((cls for bound, cls in ATTENTION_CLASSES if flops / nbytes < bound), "long")
        return f"{name} [{label} sequence]"
    return "convolution" if name in _CONVOLUTIONS else name


def op_bucket(group) -> str:
    """The op-type bucket a roofline group's time counts in: ``op:CATEGORY/SUB/TYPE``."""
    return f"op:{group.category}/{group.subcategory or '-'}/{group_op_type(group.op, group.flops, group.bytes)}"


def buckets_of(result, split_families: bool = True) -> dict[str, float]:
    """A profile's time buckets as shares of its profiled time (kernel rows plus idle time).
    ``split_families``: count a kernel family's time by the category each of its kernels ran as,
    where the profile keeps that (``_family_parts``); False: all under the row's one label, as a fit
    of profiles without that split saw it (``Fleet.split_families``)."""
    rows = [r for r in result.categories if r.time_ms and r.time_ms > 0]
    idle = result.timing.idle_ms if result.timing and result.timing.idle_ms and result.timing.idle_ms > 0 else 0.0
    total = sum(r.time_ms for r in rows) + idle
    if total <= 0:
        return {}
    out: dict[str, float] = defaultdict(float)
    for r in rows:
        out[f"cat:{r.category}"] += r.time_ms / total
        if r.subcategory:
            out[f"sub:{r.category}/{r.subcategory}"] += r.time_ms / total
    if idle:
        out["idle"] = idle / total
    for g in (result.roofline.groups if result.roofline else []):
        if g.time_ms and g.time_ms > 0:
            out[op_bucket(g)] += g.time_ms / total
    for k in result.kernel_families or []:
        if k.time_ms and k.time_ms > 0:
            for label, ms in _family_parts(k, split_families):
                out[f"kf:{label}/{k.family}"] += ms / total
    return dict(out)


def _family_parts(row, split: bool = True) -> list[tuple[str, float]]:
    """A kernel-family row's time as (``CATEGORY/SUB``, ms) by the class each of its kernels was
    attributed to (``by_category``), so that a kernel many kinds of op launch counts as each of them
    (bench/results/split-family-buckets-2026-12-05/); all under the row's one label where the
    profile predates that split."""
    if split and row.by_category:
        return [(key if "/" in key else f"{key}/-", ms) for key, ms in row.by_category.items() if ms > 0]
    return [(f"{row.category}/{row.subcategory or '-'}", row.time_ms)]


def splits_families(result) -> bool:
    """Whether ``buckets_of`` splits any of this profile's kernel families (it keeps ``by_category``)."""
    return any(k.by_category for k in result.kernel_families or [])


def parent_buckets(feature: str) -> list[str]:
    """The coarser buckets a bucket's time also counts in: op types and kernel families sit under
    their category and sub-category."""
    if feature.startswith("sub:"):
        return [f"cat:{feature[4:].split('/')[0]}"]
    if feature.startswith(("kf:", "op:")):
        cat, sub, _ = feature[3:].split("/", 2)
        return [f"cat:{cat}"] + ([f"sub:{cat}/{sub}"] if sub != "-" else [])
    return []
