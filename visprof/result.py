"""The profile result: one versioned, JSON-serializable schema (docs/result-schema.md).

Reports, the results store and cross-GPU comparisons read only this, never live profiler
state. Times are milliseconds per iteration unless a field's name says otherwise; bytes are
bytes; shares are fractions in [0, 1].

Compatibility: readers accept any ``visprof.profile/1`` document and ignore keys they do not
know, so fields can be added within version 1. Renaming or removing a field, or changing
its unit, needs ``visprof.profile/2``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Union

SCHEMA = "visprof.profile/1"


def _visprof_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("visprof")
    except metadata.PackageNotFoundError:  # running from a source tree
        from visprof import __version__

        return __version__


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class ModelInfo:
    name: str
    source: str = "module"  # "timm" | "module"
    param_count: int | None = None
    input_shape: list[int] = field(default_factory=list)  # one batch, e.g. [64, 3, 224, 224]
    batch_size: int | None = None
    img_size: int | None = None


@dataclass
class RunConfig:
    precision: str = "fp32"  # "fp32" | "tf32" | "bf16" | "fp16"
    channels_last: bool = False
    compile: bool = False
    device: str = "cpu"  # "cuda:0" | "cpu"
    warmup: int = 0
    iterations: int | str = "auto"  # as requested; Timing.iterations says how many ran
    passes: list[str] = field(default_factory=list)  # of "timing", "attributed", "memory"
    # The latency regime (docs/measuring.md): how each forward was run.
    grad_mode: str = "no_grad"  # "no_grad" | "inference_mode"
    autocast: str = "per-forward"  # "per-forward" | "whole-loop" | "model-cast" | "off" (fp32/tf32)


@dataclass
class LatencyStats:
    """Latency of one iteration (one batch), in milliseconds."""

    median: float
    mean: float
    p10: float
    p90: float
    min: float
    max: float
    std: float

    @classmethod
    def from_samples(cls, samples_ms: list[float]) -> "LatencyStats":
        if not samples_ms:
            raise ValueError("no latency samples")
        xs = sorted(float(x) for x in samples_ms)
        mean = sum(xs) / len(xs)
        return cls(
            median=_quantile(xs, 0.5),
            mean=mean,
            p10=_quantile(xs, 0.1),
            p90=_quantile(xs, 0.9),
            min=xs[0],
            max=xs[-1],
            std=math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)),
        )


def _quantile(sorted_xs: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (NumPy's default method)."""
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


@dataclass
class Timing:
    """The clean timing pass: no hooks, no tracing."""

    latency_ms: LatencyStats
    samples_per_s: float
    iterations: int
    busy_ms: float | None = None  # GPU busy (union of kernel intervals) per iteration
    idle_ms: float | None = None  # "host/launch-bound": latency median - busy_ms
    max_memory_allocated_bytes: int | None = None
    max_memory_reserved_bytes: int | None = None


@dataclass
class CategoryRow:
    """GPU time (or host time, for CPU results) of one (category, sub-category) per iteration."""

    category: str
    subcategory: str | None
    time_ms: float
    share: float  # of all attributed-pass activity time (kernels + memcpy + memset)
    kernel_count: float  # per iteration
    flops: float  # per iteration, from the ops classified into this row
    tflops: float | None  # flops / time; None when either is 0
    live_bytes_at_peak: int | None = None  # None without a memory pass
    transient_peak_bytes: int | None = None
    bytes: float = 0.0  # per iteration: what this row's ops read and write (OpRecord.bytes)
    gbps: float | None = None  # achieved GB/s = bytes / time; None when either is 0


@dataclass
class ModuleRow:
    path: str
    cls: str
    time_ms: float  # inclusive: kernels of the module's ops and of its descendants'
    self_time_ms: float  # kernels of ops that ran directly in this module
    share: float  # time_ms / all activity time
    kernel_count: float  # inclusive, per iteration


@dataclass
class NamedTime:
    """A kernel or op name with its time per iteration (for the 'other'/unattributed lists)."""

    name: str
    time_ms: float
    count: float  # kernels per iteration


@dataclass
class AttributionSummary:
    """Totals of the attributed pass, per iteration, for the self-checks and the report."""

    kernel_ms: float  # sum of kernel durations (kind KERNEL, or CPU_OP on the CPU path)
    memcpy_ms: float
    memset_ms: float
    activity_ms: float  # kernel + memcpy + memset: the denominator of every share
    busy_ms: dict[str, float]  # per device id: union of kernel intervals
    span_ms: float  # first kernel start to last kernel end, whole recording (not per iteration)
    coverage: float  # attributed share of activity time ("other" counts as attributed)
    unattributed_ms: float
    unattributed_kernels: list[NamedTime] = field(default_factory=list)  # largest first
    other_ops: list[NamedTime] = field(default_factory=list)  # ops no rule matched, largest first
    kernel_count: float = 0.0  # activity rows per iteration
    iterations: int = 1
    # Casts of parameters (autocast re-casting weights every forward), per iteration.
    weight_cast_ms: float = 0.0
    weight_cast_count: float = 0.0


@dataclass
class MemorySummary:
    peak_bytes: int  # allocated: bytes held by tensors at the peak of one forward
    # keys are "category" or "category/subcategory"
    by_category_at_peak: dict[str, int] = field(default_factory=dict)
    transient_peak_by_category: dict[str, int] = field(default_factory=dict)
    alloc_count: int = 0
    # reserved: bytes the CUDA caching allocator held from the driver (decides whether a
    # model fits a GPU), at its own peak, split by the category of the op that reserved them
    reserved_peak_bytes: int | None = None
    reserved_by_category_at_peak: dict[str, int] = field(default_factory=dict)
    method: str = ""  # "caching-allocator trace" | "pluggable allocator"


@dataclass
class Check:
    """A self-check. ``tolerance`` is relative to ``reference`` unless ``detail`` says otherwise."""

    name: str
    value: float | None
    reference: float | None
    tolerance: float
    passed: bool
    unit: str = ""
    detail: str = ""

    @classmethod
    def within(cls, name: str, value: float | None, reference: float | None, tolerance: float, unit: str = "", detail: str = "") -> "Check":
        """Passes when |value - reference| <= tolerance * |reference|; fails when either is missing."""
        passed = (
            value is not None
            and reference is not None
            and abs(value - reference) <= tolerance * abs(reference)
        )
        return cls(name, value, reference, tolerance, bool(passed), unit, detail)


@dataclass
class PassInfo:
    wall_s: float
    iterations: int


# --- roofline (visprof.analysis.roofline; docs/result-schema.md#roofline) ---------------------
@dataclass
class RooflineGroup:
    """Ops of one kind: same category, aten op, FLOPs, bytes and tensor-core precision.

    A network's repeated blocks collapse into one group each (twelve identical ViT blocks
    give one qkv group with count 12), so the list stays short, and it is all a predictor
    needs: what each kind of op computes and moves, and how long it took here."""

    category: str
    subcategory: str | None
    op: str  # aten op, or "[kernel] name" / "[memcpy]" / "[memset]" for rows without an op
    count: float  # ops per iteration
    kernel_count: float  # kernels (and copies) per iteration
    time_ms: float  # all their kernels, per iteration
    helper_ms: float  # of time_ms: layout transforms and copies inside them (NCHW<->NHWC), memory-bound
    flops: float  # per op
    bytes: float  # per op: inputs read once + outputs written once
    param_bytes: float  # per op: the part of `bytes` that is weights (does not grow with the batch)
    tensor_core: str | None  # tensor-core precision of its FLOPs, or None
    bound: str | None = None  # "tensor" | "compute" | "memory" | "unknown" on the running GPU; None without ceilings
    efficiency: float | None = None  # roofline time / measured time of its main kernels (helper_ms excluded)


@dataclass
class RooflinePoint:
    """A category placed against the ceilings."""

    category: str
    time_ms: float
    flops: float  # per iteration
    bytes: float  # per iteration
    intensity: float | None  # FLOP per byte; None without bytes
    tflops: float | None  # achieved
    gbps: float | None  # achieved
    attainable_tflops: float | None  # the roof at this intensity: min(peak, intensity x bandwidth)
    bound: str | None  # where most of its time is bound
    bound_ms: dict[str, float] = field(default_factory=dict)  # its time by bound


@dataclass
class RooflineSummary:
    """Where each op kind and category sits against the running GPU's ceilings, and the
    share of the model's time that is tensor-core, memory-bandwidth, other-compute and
    launch/host bound."""

    gpu: str | None  # id of the spec row (visprof/data/gpus.toml); None: no ceilings known
    precision: str
    ceilings: dict[str, float] = field(default_factory=dict)  # tensor_tflops, fp32_tflops, bandwidth_gbs
    bound_ms: dict[str, float] = field(default_factory=dict)  # kernel time per iteration by bound
    shares: dict[str, float] = field(default_factory=dict)  # tensor, memory, compute, unknown, launch
    basis: str = ""  # "latency" (busy time split by bound, plus idle) or "kernel time"
    categories: list[RooflinePoint] = field(default_factory=list)
    groups: list[RooflineGroup] = field(default_factory=list)


@dataclass
class ProfileResult:
    model: ModelInfo
    config: RunConfig
    measurement: str  # "gpu" (CUPTI kernel times) or "cpu" (host clock around each op)
    timing: Timing | None = None
    categories: list[CategoryRow] = field(default_factory=list)
    modules: list[ModuleRow] = field(default_factory=list)
    attribution: AttributionSummary | None = None
    memory: MemorySummary | None = None
    checks: list[Check] = field(default_factory=list)
    passes: dict[str, PassInfo] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    gpu: dict[str, Any] | None = None  # filled by visprof.hardware; stored as given
    warnings: list[str] = field(default_factory=list)
    roofline: RooflineSummary | None = None  # visprof.analysis.roofline; absent in older results
    schema: str = SCHEMA
    visprof_version: str = field(default_factory=_visprof_version)
    created_at: str = field(default_factory=_utc_now)  # ISO 8601, UTC

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def category_totals(self) -> dict[str, CategoryRow]:
        """Rows summed per category (sub-categories merged), in row order."""
        return category_totals(self.categories, self.memory)

    # --- serialization -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        # identification first, for people reading the JSON
        head = ("schema", "visprof_version", "created_at")
        return {**{k: data[k] for k in head}, **{k: v for k, v in data.items() if k not in head}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ProfileResult":
        schema = data.get("schema")
        if not isinstance(schema, str) or schema.rsplit("/", 1)[0] != SCHEMA.rsplit("/", 1)[0]:
            raise ValueError(f"not a visprof profile result (schema={schema!r})")
        if schema != SCHEMA:
            raise ValueError(f"unsupported result schema {schema!r}; this visprof reads {SCHEMA!r}")
        return _decode(cls, data)

    def to_json(self, path: str | Path | None = None, indent: int | None = 2) -> str:
        """The result as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    @classmethod
    def load(cls, path: str | Path) -> "ProfileResult":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def category_totals(rows: list[CategoryRow], memory: MemorySummary | None = None) -> dict[str, CategoryRow]:
    """Rows summed per category, in row order; category-level memory figures from ``memory``."""
    totals: dict[str, CategoryRow] = {}
    for row in rows:
        t = totals.get(row.category)
        if t is None:
            totals[row.category] = dataclasses.replace(row, subcategory=None)
            continue
        t.time_ms += row.time_ms
        t.share += row.share
        t.kernel_count += row.kernel_count
        t.flops += row.flops
        t.bytes += row.bytes
        t.live_bytes_at_peak = _add_optional(t.live_bytes_at_peak, row.live_bytes_at_peak)
        # transient peaks of sub-categories happen at different times: the max is a lower bound
        t.transient_peak_bytes = _max_optional(t.transient_peak_bytes, row.transient_peak_bytes)
    for cat, t in totals.items():
        t.tflops = t.flops / t.time_ms / 1e9 if t.time_ms > 0 and t.flops > 0 else None
        t.gbps = t.bytes / t.time_ms / 1e6 if t.time_ms > 0 and t.bytes > 0 else None
        if memory is not None:
            t.live_bytes_at_peak = memory.by_category_at_peak.get(cat, t.live_bytes_at_peak)
            t.transient_peak_bytes = memory.transient_peak_by_category.get(cat, t.transient_peak_bytes)
    return totals


def _add_optional(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


def _max_optional(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


# --- generic decoding: dataclass type hints drive from_dict -------------------------------
def _decode(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        # Unknown keys are ignored: newer minor writers may add fields within version 1.
        return tp(**{k: _decode(hints[k], v) for k, v in value.items() if k in names})
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            if arg is type(None):
                continue
            if dataclasses.is_dataclass(arg) and isinstance(value, dict):
                return _decode(arg, value)
        return value
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_decode(item, v) for v in value]
    if origin is dict:
        _, item = typing.get_args(tp)
        return {k: _decode(item, v) for k, v in value.items()}
    return value
