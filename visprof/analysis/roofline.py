"""Roofline placement of every op kind and category, and the model's time by bound.

Plain functions over an ``Attribution`` (the recorded kernels joined to ops) and a GPU spec
row. ``attach(result, attribution)`` is what result building calls; ``summarize`` does the work.

Method (docs/hardware-sensitivity.md):

* Ops with identical (category, sub-category, aten op, FLOPs, bytes, tensor-core precision)
  form a group; its time is the kernels of all its ops.
* Inside an op, layout transforms (cuDNN's NCHW<->NHWC kernels) and copies are *helper*
  time: memory traffic the op's own tensors do not show. It counts as memory-bound.
* The rest of a group's time is bound by whichever of its roofline times is larger on the
  running GPU: FLOPs / tensor peak (ops with a tensor-core precision) or FLOPs / FP32 peak
  (others), against bytes / memory bandwidth. Ops with neither FLOPs nor bytes known are
  ``unknown`` (recordings made before bytes were counted; kernels without an op).
* Shares: kernel time split by bound, scaled to the timing pass's GPU busy time, plus its
  idle time as launch/host bound; all over the latency. Without a timing pass: fractions
  of kernel time, and no launch share.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Iterable, Mapping

import numpy as np

from visprof.native.records import KIND_MEMCPY, KIND_MEMSET
from visprof.result import ProfileResult, RooflineGroup, RooflinePoint, RooflineSummary, Timing

if TYPE_CHECKING:
    from visprof.analysis.gpus import GpuSpec, GpuTable
    from visprof.attribution.attribute import Attribution
    from visprof.native.records import OpRecord

BOUNDS = ("tensor", "memory", "compute", "unknown")
# A latency's shares: the bounds of its kernels' time, and "launch" for the time the GPU idles.
# CSVs carry a column for each, whatever the rows hold (the columns had varied with the models).
LATENCY_SHARES = (*BOUNDS, "launch")
BOUND_LABELS = {"tensor": "tensor-core", "memory": "memory-bandwidth", "compute": "other-compute",
                "unknown": "unknown", "launch": "launch/host"}
# Kernels an op runs besides its main work that only move data: cuDNN's layout transforms
# around NCHW convolutions (on the H200, ResNet-50 NCHW bf16 spends 1.05 of its 2.9 ms of
# convolution time in them: tests/data/resnet50.trace.json.gz), tensor format conversions,
# and copies/sets that the category table leaves with the op.
HELPER_KERNEL = re.compile(r"nchwToNhwc|nhwcToNchw|nchwToNchwc|nchwcToNchw|convertTensor|transpose_readWrite", re.IGNORECASE)
NS_PER_MS = 1e6


def _kernel_label(name: str) -> str:
    """A short, stable label for a kernel without an op (a Triton or cuDNN kernel name)."""
    return "[kernel] " + (name if len(name) <= 60 else name[:57] + "...")


def legacy_tensor_core(precision: str, op: "OpRecord", subcategory: str | None) -> str | None:
    """For recordings made before ops carried bytes and tensor-core use: an op with FLOPs
    is taken to run on tensor cores at the result's precision, except depthwise convolution."""
    if op.flops <= 0 or subcategory == "depthwise":
        return None
    return {"bf16": "bf16", "fp16": "fp16", "tf32": "tf32"}.get(precision)


def op_groups(attr: "Attribution", precision: str = "") -> list[RooflineGroup]:
    """The trace's ops (and rows without an op) grouped by kind; per-iteration counts and times.

    Groups with no time and no FLOPs (views, ops that launched nothing) are left out.
    ``precision`` is only used for recordings without per-op costs (``legacy_tensor_core``).
    """
    trace = attr.trace
    legacy = bool(trace.ops) and not any(op.bytes or op.tensor_core for op in trace.ops)
    it = trace.iterations
    k = trace.kernels
    dur = np.maximum(k["end_ns"].astype(np.int64) - k["start_ns"].astype(np.int64), 0).astype(np.float64)
    names = trace.kernel_names
    is_transfer = np.isin(k["kind"], (KIND_MEMCPY, KIND_MEMSET))
    helper_name = np.array([bool(HELPER_KERNEL.search(n)) for n in names], dtype=bool)
    is_helper = is_transfer | (helper_name[k["name_id"]] if len(names) else np.zeros(len(k), bool))

    n_ops = len(trace.ops)
    # A row counts with its op unless it was classified apart from it (a memcpy/memset goes to
    # memory whichever op issued it): then it is a group of its own, as in the category table.
    has_op = attr.op_index >= 0
    has_op[has_op] = attr.kernel_class[has_op] == attr.op_class[attr.op_index[has_op]]
    rows_op = attr.op_index[has_op]
    op_time = np.bincount(rows_op, weights=dur[has_op], minlength=n_ops)
    op_helper = np.bincount(rows_op, weights=(dur * is_helper)[has_op], minlength=n_ops)
    op_kernels = np.bincount(rows_op, minlength=n_ops)

    acc: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])  # count, kernels, time, helper
    for i, op in enumerate(trace.ops):
        c = attr.op_classification(i)
        tc = legacy_tensor_core(precision, op, c.subcategory) if legacy else op.tensor_core
        key = (c.category, c.subcategory, op.name, float(op.flops), float(op.bytes), float(op.param_bytes), tc)
        entry = acc[key]
        entry[0] += 1
        entry[1] += op_kernels[i]
        entry[2] += op_time[i]
        entry[3] += op_helper[i]
    # Rows without an op: one group per (classification, kernel name or copy kind, bytes).
    for row in np.flatnonzero(~has_op):
        c = attr.classification(int(row))
        kind = int(k["kind"][row])
        label = "[memcpy]" if kind == KIND_MEMCPY else "[memset]" if kind == KIND_MEMSET else _kernel_label(names[int(k["name_id"][row])])
        key = (c.category, c.subcategory, label, 0.0, float(k["bytes"][row]), 0.0, None)
        entry = acc[key]
        entry[0] += 1
        entry[1] += 1
        entry[2] += dur[row]
        entry[3] += dur[row] if is_transfer[row] else 0.0

    groups = []
    for (cat, sub, op, flops, nbytes, param, tc), (count, kernels, time_ns, helper_ns) in acc.items():
        if time_ns <= 0 and flops <= 0:
            continue
        groups.append(RooflineGroup(category=cat, subcategory=sub, op=op, count=count / it, kernel_count=float(kernels) / it,
                                    time_ms=float(time_ns) / it / NS_PER_MS, helper_ms=float(helper_ns) / it / NS_PER_MS,
                                    flops=flops, bytes=nbytes, param_bytes=param, tensor_core=tc))
    groups.sort(key=lambda g: (-g.time_ms, g.category, g.op))
    return groups


# --- bounds ------------------------------------------------------------------------------------
def compute_peak(spec: "GpuSpec", tensor_core: str | None) -> tuple[float, str]:
    """(TFLOP/s, "tensor" or "compute") an op's FLOPs run at: the tensor peak of its
    precision where the GPU has one, else the FP32 peak."""
    peak = spec.tensor_peak(tensor_core) if tensor_core else None
    return (peak, "tensor") if peak else (spec.fp32_tflops, "compute")


def roofline_rates(spec: "GpuSpec", tensor_core: str | None) -> tuple[float, float, str]:
    """(FLOPs per ms, bytes per ms, compute kind) of ``spec``'s roof for ops of ``tensor_core``
    precision: ``roofline_ms``'s divisors, for a caller that divides by them many times."""
    peak, kind = compute_peak(spec, tensor_core)
    return peak * 1e9, spec.memory_bandwidth_gbs * 1e6, kind


def roofline_ms(spec: "GpuSpec", flops: float, nbytes: float, tensor_core: str | None) -> tuple[float, float, str]:
    """(compute-bound ms, memory-bound ms, compute kind) of one op on ``spec``."""
    flops_per_ms, bytes_per_ms, kind = roofline_rates(spec, tensor_core)
    return flops / flops_per_ms, nbytes / bytes_per_ms, kind


def classify(group: RooflineGroup, spec: "GpuSpec") -> tuple[str, float | None]:
    """(bound, efficiency) of a group's main kernels on ``spec``."""
    if group.flops <= 0 and group.bytes <= 0:
        return "unknown", None
    compute_ms, memory_ms, kind = roofline_ms(spec, group.flops, group.bytes, group.tensor_core)
    bound = kind if compute_ms >= memory_ms else "memory"
    main_ms = group.time_ms - group.helper_ms
    roof = max(compute_ms, memory_ms) * group.count
    return bound, (roof / main_ms if main_ms > 0 else None)


def group_bound_ms(group: RooflineGroup) -> dict[str, float]:
    """A classified group's time by bound: helper time is memory-bound."""
    out = {group.bound or "unknown": group.time_ms - group.helper_ms}
    if group.helper_ms:
        out["memory"] = out.get("memory", 0.0) + group.helper_ms
    return out


def category_points(groups: Iterable[RooflineGroup], spec: "GpuSpec | None", order: Iterable[str] = ()) -> list[RooflinePoint]:
    """One point per category: its FLOPs, bytes, time and achieved rates, against the roof."""
    by_cat: dict[str, list[RooflineGroup]] = defaultdict(list)
    for g in groups:
        by_cat[g.category].append(g)
    rank = {c: i for i, c in enumerate(order)}
    points = []
    for cat in sorted(by_cat, key=lambda c: (rank.get(c, len(rank)), c)):
        members = by_cat[cat]
        time_ms = sum(g.time_ms for g in members)
        flops = sum(g.flops * g.count for g in members)
        nbytes = sum(g.bytes * g.count for g in members)
        bound_ms: dict[str, float] = defaultdict(float)
        if spec is not None:
            for g in members:
                for bound, ms in group_bound_ms(g).items():
                    bound_ms[bound] += ms
        intensity = flops / nbytes if nbytes > 0 else None
        attainable = None
        if spec is not None and flops > 0:
            tensor_flops = sum(g.flops * g.count for g in members if g.tensor_core and spec.tensor_peak(g.tensor_core))
            # The peak of whichever kind of math most of its FLOPs are.
            precision = max((g for g in members if g.tensor_core), key=lambda g: g.flops * g.count, default=None)
            peak = compute_peak(spec, precision.tensor_core if precision and tensor_flops * 2 >= flops else None)[0]
            attainable = min(peak, intensity * spec.memory_bandwidth_gbs / 1e3) if intensity is not None else peak
        points.append(RooflinePoint(
            category=cat, time_ms=time_ms, flops=flops, bytes=nbytes, intensity=intensity,
            tflops=flops / time_ms / 1e9 if time_ms > 0 and flops > 0 else None,
            gbps=nbytes / time_ms / 1e6 if time_ms > 0 and nbytes > 0 else None,
            attainable_tflops=attainable,
            bound=max(bound_ms, key=bound_ms.get) if bound_ms else None,
            bound_ms=dict(bound_ms)))
    return points


def bound_shares(bound_ms: Mapping[str, float], timing: Timing | None) -> tuple[dict[str, float], str]:
    """(shares, basis): kernel time by bound as shares of the latency, with idle as launch."""
    kernel_ms = sum(bound_ms.values())
    if kernel_ms <= 0:
        return {}, ""
    if timing is not None and timing.busy_ms is not None and timing.idle_ms is not None:
        total = timing.busy_ms + timing.idle_ms
        if total > 0:
            scale = timing.busy_ms / kernel_ms  # kernel time -> busy time (overlapping kernels count once)
            shares = {b: ms * scale / total for b, ms in bound_ms.items()}
            shares["launch"] = timing.idle_ms / total
            return shares, "latency"
    return {b: ms / kernel_ms for b, ms in bound_ms.items()}, "kernel time"


def summarize(attr: "Attribution", spec: "GpuSpec | None", precision: str, timing: Timing | None = None) -> RooflineSummary:
    """The roofline section of a result. Without ``spec`` (a CPU result, a GPU with no row
    in the spec table) the groups are kept, unclassified, for later use."""
    groups = op_groups(attr, precision)
    summary = RooflineSummary(gpu=spec.id if spec else None, precision=precision, groups=groups)
    if spec is not None:
        bound_ms: dict[str, float] = defaultdict(float)
        for g in groups:
            g.bound, g.efficiency = classify(g, spec)
            for bound, ms in group_bound_ms(g).items():
                bound_ms[bound] += ms
        summary.bound_ms = {b: bound_ms[b] for b in BOUNDS if bound_ms.get(b)}
        summary.shares, summary.basis = bound_shares(summary.bound_ms, timing)
        # The tensor ceiling of the precision most tensor-core FLOPs ran at (conv in fp32 may use TF32).
        tc_flops: dict[str, float] = defaultdict(float)
        for g in groups:
            if g.tensor_core:
                tc_flops[g.tensor_core] += g.flops * g.count
        main = max(tc_flops, key=tc_flops.get) if tc_flops else precision
        tensor = spec.tensor_peak(main) or spec.tensor_peak(precision) or spec.tensor_peak("bf16")
        summary.ceilings = {"tensor_tflops": tensor or 0.0, "fp32_tflops": spec.fp32_tflops,
                            "bandwidth_gbs": spec.memory_bandwidth_gbs}
    summary.categories = category_points(groups, spec, attr.table.report_order())
    return summary


def attach(result: ProfileResult, attr: "Attribution", table: "GpuTable | None" = None) -> RooflineSummary:
    """Fills ``result.roofline`` from the attributed pass, against the row of the GPU the
    result ran on, and adds a warning where that row and NVML disagree (or no row exists)."""
    from visprof.analysis.gpus import device_warnings, gpu_table
    from visprof.base.errors import BadInputError

    spec = None
    if result.measurement == "gpu":
        if table is None:
            try:
                table = gpu_table()
            except BadInputError as exc:  # a bad $VISPROF_GPUS file must not cost the profile
                result.warnings.append(f"{exc}; using the built-in GPU table")
                table = _builtin_table()
        spec = table.for_device((result.gpu or {}).get("name"))
        result.warnings.extend(device_warnings(spec, result.gpu))
    result.roofline = summarize(attr, spec, result.config.precision, result.timing)
    return result.roofline


def _builtin_table() -> "GpuTable":
    from visprof.analysis.gpus import GpuTable

    return GpuTable.default()


# The ops autocast casts a weight with (_to_copy under no_grad, to.dtype under inference_mode), by
# the names stored groups keep: capture/op_capture.py's _CASTS are the same two, as torch ops.
CAST_OPS = ("aten.to.dtype", "aten._to_copy.default")
FP32_BYTES = 4


def weight_cast_copy_bytes(groups: Iterable[RooflineGroup], itemsize: int) -> float:
    """Bytes per iteration of the weight copies autocast makes: its casts of parameters (every byte
    they move is weights) from fp32 to ``itemsize``-byte elements, each counted once per call. Under
    no_grad autocast keeps such copies until its context exits; under inference_mode it keeps none."""
    return sum(g.count * g.bytes * itemsize / (FP32_BYTES + itemsize) for g in groups
               if g.op in CAST_OPS and g.bytes > 0 and g.param_bytes >= g.bytes)


def dominant_category(result: ProfileResult) -> str | None:
    """The category with the largest share of the result's time."""
    totals = result.category_totals()
    if not totals:
        return None
    return max(totals.values(), key=lambda r: r.time_ms).category


__all__ = ["BOUNDS", "BOUND_LABELS", "CAST_OPS", "HELPER_KERNEL", "attach", "bound_shares", "category_points", "classify",
           "compute_peak", "dominant_category", "group_bound_ms", "op_groups", "roofline_ms", "roofline_rates", "summarize",
           "weight_cast_copy_bytes"]
