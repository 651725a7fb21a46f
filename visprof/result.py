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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from visprof.base.options import UNKNOWN_REGIME, autocast_at
from visprof.base.inputs import describe_value
from visprof.base.json_documents import described
from visprof.base.typed_json import DataclassDecoder, DocumentError

SCHEMA = "visprof.profile/1"
# A result read from an Nsight Systems export (visprof nsys import): its `environment.source`,
# and its `config.passes` (no visprof pass ran; the recording stands in for the attributed one).
NSYS_IMPORT = "nsys import"

# Stable category ids, in report order: every result has a row for each (0 where nothing ran).
# The default category table (visprof/data/categories.toml) must declare exactly these.
CATEGORIES: tuple[str, ...] = (
    "attention",
    "convolution",
    "linear",
    "normalization",
    "activation",
    "pooling",
    "elementwise",
    "memory",
    "other",
)


def visprof_version() -> str:
    """The running visprof's version: the package's own ``__version__``, not an installation's metadata,
    which may describe another copy than the one imported (a source tree on PYTHONPATH over an older
    install). pyproject.toml states the same version; tests/structure/test_version.py keeps them one."""
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
    # Where img_size came from: "test" (the pretrained config's test size, timm benchmark.py's
    # default), "config" (the one size of a config without a test size, which benchmark.py feeds),
    # "train" (its training input_size), "requested", "built" (the size a module records
    # it was built for), "assumed"; None in older results.
    img_size_origin: str | None = None


@dataclass
class RunConfig:
    precision: str = "fp32"  # "fp32" | "tf32" | "bf16" | "fp16"
    channels_last: bool = False
    compile: bool = False
    device: str = "cpu"  # "cuda:0" | "cpu"
    warmup: int = 0
    iterations: int | str = "auto"  # as requested; Timing.iterations says how many ran
    passes: list[str] = field(default_factory=list)  # of "timing", "attributed", "memory"; or [NSYS_IMPORT]
    # The latency regime (docs/measuring.md): how each forward was run.
    grad_mode: str = "no_grad"  # "no_grad" | "inference_mode" | "unknown" (an nsys import without a run mark)
    autocast: str = "per-forward"  # "per-forward" | "whole-loop" | "model-cast" | "off" (fp32/tf32) | "unknown"

    def __post_init__(self) -> None:
        # fp32 and tf32 run no autocast: a result written before config.autocast was recorded
        # takes the default, which at those precisions read "autocast per forward"
        if self.autocast != UNKNOWN_REGIME:
            self.autocast = autocast_at(self.precision, self.autocast)


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
    reserved_bytes_at_peak: int | None = None  # segments this category's ops made the allocator reserve
    # Compiled models: ms per iteration of this row's kernels that also ran work of another
    # category fused into them (Inductor fusion), keyed "category" or "category/subcategory".
    fused: dict[str, float] = field(default_factory=dict)
    bytes: float = 0.0  # per iteration: what this row's ops read and write (OpRecord.bytes)
    gbps: float | None = None  # achieved GB/s = bytes / time; None when either is 0
    # Per iteration: the time of the compute kernels of ops with counted FLOPs (GEMMs,
    # convolutions, attention products), without ATen pointwise kernels such ops launch (a
    # convolution's bias add) and their memsets: the library work, which torch.compile calls as
    # eager does, without the pointwise and layout work Inductor fuses elsewhere.
    flop_time_ms: float = 0.0


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
    # attributed share of activity time ("other" counts as attributed); None where the pass
    # recorded no time (an identity model): nothing to attribute
    coverage: float | None
    unattributed_ms: float
    unattributed_kernels: list[NamedTime] = field(default_factory=list)  # largest first
    other_ops: list[NamedTime] = field(default_factory=list)  # ops no rule matched, largest first
    kernel_count: float = 0.0  # activity rows per iteration
    iterations: int = 1
    # Casts of parameters (autocast re-casting weights every forward), per iteration.
    weight_cast_ms: float = 0.0
    weight_cast_count: float = 0.0
    # torch.compile'd runs: the memory format Inductor gave its convolutions' inputs
    # ("channels_last", "contiguous", "mixed"); None for eager runs and models without convs.
    inductor_conv_layout: str | None = None


@dataclass
class MemorySummary:
    peak_bytes: int  # allocated: bytes held by tensors (block sizes) at the peak of one forward
    # keys are "category" or "category/subcategory"
    by_category_at_peak: dict[str, int] = field(default_factory=dict)
    transient_peak_by_category: dict[str, int] = field(default_factory=dict)
    alloc_count: int = 0
    # reserved: bytes the CUDA caching allocator held from the driver (decides whether a
    # model fits a GPU), at its own peak, split by the category of the op that reserved them
    reserved_peak_bytes: int | None = None
    reserved_by_category_at_peak: dict[str, int] = field(default_factory=dict)
    method: str = ""  # "caching-allocator trace" | "torch counters only"
    baseline_bytes: int | None = None  # held before the forwards: parameters, input, cached casts
    # torch's own peak counters over the same forwards: max_memory_allocated (block sizes, what
    # peak_bytes counts), max_memory_reserved, requested (the bytes tensors asked for)
    torch_peaks: dict[str, int] = field(default_factory=dict)
    requested_peak_bytes: int | None = None  # peak of the bytes tensors asked for, before rounding
    # allocations booked at their rounded requested size: the block mirror could not place them
    block_fallbacks: int | None = None


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
class CategoryCounters:
    """Hardware counters of one category's kernels, measured by Nsight Compute (`visprof ncu`).

    ncu profiles a sample of the category's ops (the first few of each kind); each sampled
    kernel stands for the ops of its kind, so sums are extrapolated to one iteration and
    percentages are means weighted by kernel time."""

    category: str
    kernels_profiled: int  # kernel launches ncu measured
    kernels_per_iteration: float  # the category's kernels per iteration in the attributed pass
    time_coverage: float  # share of the category's kernel time whose kind of op was measured
    duration_ms: float | None  # ncu's kernel durations, extrapolated to one iteration
    sm_throughput_pct: float | None  # compute speed of light: % of peak sustained
    dram_throughput_pct: float | None  # DRAM speed of light: % of peak sustained
    achieved_occupancy_pct: float | None  # active warps, % of the SM's maximum
    tensor_pipe_pct: float | None  # tensor pipe busy, % of peak
    dram_bytes: float | None  # DRAM bytes moved per iteration
    arithmetic_intensity: float | None  # FLOPs (visprof's count) per DRAM byte
    dram_gbps: float | None  # dram_bytes / duration_ms (both from ncu's cold-cache replays), GB/s
    bound: str | None  # "compute" | "memory" | "latency" (neither unit past 40% of peak)


@dataclass
class KernelCounters:
    """One kernel name within a category, as ncu measured it: means over its profiled launches, the duration
    weighted by each launch's weight (weight x duration is the time the row stands for), the others by
    that time. Results made before 2026-12-08 kept plain means."""

    name: str
    category: str
    launches: int  # profiled
    weight: float  # launches per iteration each profiled launch stands for, summed
    metrics: dict[str, float | None] = field(default_factory=dict)  # role -> mean value


@dataclass
class CounterSummary:
    """`visprof ncu`: how the counters were taken, and the per-category roofline position."""

    tool: str  # e.g. "ncu 2025.3.1.0"
    metrics: dict[str, str]  # role -> metric name(s) used ("a+b" where combined)
    nvtx_filters: list[str]  # the --nvtx-include expression of each ncu run
    clock_control: str
    samples_per_kind: int  # ops profiled per kind of op (same op, module class and FLOPs)
    kernels_profiled: int
    categories: list[CategoryCounters] = field(default_factory=list)
    kernels: list[KernelCounters] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


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
class OpTypeRow:
    """GPU time of one aten op type, per iteration (visprof.attribution.op_types)."""

    op_type: str  # "aten.native_group_norm.default", "aten.convolution.default [depthwise]", "aten.mm.default [high intensity]"
    category: str  # where most of its time went
    subcategory: str | None
    calls: float  # ops per iteration
    kernels: float  # kernels (and copies) per iteration
    time_ms: float
    share: float  # of the attributed pass's activity time
    gflop: float
    mb: float  # bytes read once and written once, in MB


@dataclass
class KernelFamilyRow:
    """GPU time of one kernel family (name without template arguments or tile sizes), per iteration."""

    family: str
    category: str  # where most of its time went
    subcategory: str | None
    calls: float
    time_ms: float
    share: float
    # The work of the ops that launched its kernels: an op's bytes split over its kernels by
    # time, its FLOPs on its math kernel (visprof.attribution.op_types); None in older results.
    gflop: float | None = None
    mb: float | None = None
    # Launch shape, the median over its launches weighted by their time; None for copies.
    blocks: float | None = None  # thread blocks per launch (grid x * y * z)
    threads: float | None = None  # threads per block
    # Its ms per iteration by the class each of its kernels was attributed to, keyed "category" or
    # "category/subcategory" (as MemorySummary's keys), most first; the values add up to time_ms.
    # A shared kernel (ATen's vectorized_elementwise_kernel) is an activation in one model, a copy
    # or an add in another: ``category`` names only the key with most of its time (the first here;
    # in older results, the class with most, which two rules of one key could split),
    # this keeps the rest. None in older results.
    by_category: dict[str, float] | None = None


@dataclass
class LaunchSizeRow:
    """Kernel time of launches with ``blocks_min`` to ``blocks_max`` thread blocks, per iteration.
    A launch of fewer blocks than the GPU has SMs leaves SMs idle unless another stream fills them."""

    blocks_min: int
    blocks_max: int
    kernels: float
    time_ms: float
    share: float  # of all kernel time (copies excluded)
    # Launches of exactly as many blocks as the GPU has SMs: persistent kernels sized to the GPU
    # (cuBLAS's nvjet, flash attention), which launch as many on a GPU of more SMs. A row of
    # their own (blocks_min = blocks_max = the SM count); the power-of-two bins leave them out.
    one_per_sm: bool = False


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
    gpu: dict[str, Any] | None = None  # filled by visprof.base.hardware; stored as given
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # advice drawn from the numbers (e.g. weight casts)
    wall_s: float | None = None  # the whole profile() call
    counters: CounterSummary | None = None  # Nsight Compute per category (visprof ncu); null otherwise
    roofline: RooflineSummary | None = None  # visprof.analysis.roofline; absent in older results
    # What the model runs (visprof.attribution.op_types): every op type and kernel family with
    # time; empty in results made before them.
    op_types: list[OpTypeRow] = field(default_factory=list)
    kernel_families: list[KernelFamilyRow] = field(default_factory=list)
    # Kernel time by thread blocks per launch, in power-of-two bins; empty before it was kept.
    launch_sizes: list[LaunchSizeRow] = field(default_factory=list)
    schema: str = SCHEMA
    visprof_version: str = field(default_factory=visprof_version)
    created_at: str = field(default_factory=_utc_now)  # ISO 8601, UTC

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def sm_count(self) -> int | None:
        """The SM count of the GPU it ran on, as its GPU record holds it; None without one."""
        sms = self.gpu.get("sm_count") if isinstance(self.gpu, dict) else None
        return sms if isinstance(sms, int) and sms > 0 else None

    def small_launches(self) -> list[LaunchSizeRow] | None:
        """The launch-size bins wholly below the GPU's SM count, one-per-SM launches left out: the
        launches that cannot give every SM a block. None without launch sizes or the SM count."""
        sms = self.sm_count
        if not self.launch_sizes or sms is None or sms < 2:
            return None
        return self.launches_below(sms)

    def launch_share_below(self, blocks: int) -> float | None:
        """The share of kernel time in launches of fewer than ``blocks`` thread blocks, one-per-SM
        launches left out (they are sized to whatever GPU runs them); None without launch sizes.
        Bins are counted whole, so ``blocks`` is meant to be a power of two (a bin edge)."""
        if not self.launch_sizes:
            return None
        return sum(r.share for r in self.launches_below(blocks))

    def launches_below(self, blocks: int) -> list[LaunchSizeRow]:
        """The launch-size bins wholly below ``blocks`` thread blocks (a bin that straddles it is
        left out), one-per-SM launches left out; empty without launch sizes."""
        return [r for r in self.launch_sizes if r.blocks_max < blocks and not r.one_per_sm]

    def category_totals(self) -> dict[str, CategoryRow]:
        """Rows summed per category (sub-categories merged), in row order."""
        return category_totals(self.categories, self.memory)

    def peak_allocated_bytes(self) -> int | None:
        """Bytes held by tensors at the peak of one forward: the memory pass's, else the timing pass's
        ``max_memory_allocated``; None with neither."""
        if self.memory is not None and self.memory.peak_bytes:
            return self.memory.peak_bytes
        return self.timing.max_memory_allocated_bytes if self.timing else None

    def activity_ms(self) -> float:
        """The attributed pass's activity time per iteration (kernels, copies, fills; the host
        clock's op time on the CPU): what the category shares divide."""
        if self.attribution is not None and self.attribution.activity_ms:
            return self.attribution.activity_ms
        return sum(row.time_ms for row in self.categories)

    def __repr__(self) -> str:
        """A few lines, not the dataclass's every field (27 kB for an H100 profile of ViT-B/16), so
        that a notebook cell or a REPL that shows a result stays readable. The whole report:
        ``print(visprof.text_report(result))``; every field: ``result.to_dict()``."""
        where = self.config.device
        gpu_name = self.gpu.get("name") if isinstance(self.gpu, dict) else None
        if gpu_name:
            where += f" ({gpu_name})"
        shape = [f"batch {self.model.batch_size}"] if self.model.batch_size else []
        sides = self.model.input_shape[-2:] if len(self.model.input_shape or []) >= 4 else []
        if len(sides) == 2 and sides[0] != sides[1]:  # img_size holds the height alone
            shape.append(f"{sides[0]}x{sides[1]} px")
        elif self.model.img_size:
            shape.append(f"{self.model.img_size} px")
        lines = [f"<ProfileResult {self.model.name} on {where}: {', '.join(shape + [self.config.precision])}"]
        if self.timing is not None:
            clock = "GPU" if self.measurement == "gpu" else "host clock"
            lines.append(f"  latency {self.timing.latency_ms.median:.3f} ms a batch (median, {clock}), "
                         f"{self.timing.samples_per_s:,.1f} samples/s")
        totals = sorted(self.category_totals().values(), key=lambda row: -row.share)
        shares = ", ".join(f"{row.category} {row.share:.0%}" for row in totals[:4] if row.share > 0)
        if shares:
            lines.append(f"  time: {shares}")
        if self.memory is not None:
            lines.append(f"  peak memory {self.memory.peak_bytes / (1 << 20):,.1f} MiB allocated")
        if self.checks:
            failed = len(self.failed_checks)
            verdict = "all pass" if not failed else f"{failed} FAILED"
            lines.append(f"  self-checks: {len(self.checks)}, {verdict}")
        return "\n".join(lines) + ">"

    # --- serialization -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON types (dict, list, str, int, float, bool, None)."""
        data = _plain(dataclasses.asdict(self))
        # identification first, for people reading the JSON
        head = ("schema", "visprof_version", "created_at")
        return {**{k: data[k] for k in head}, **{k: v for k, v in data.items() if k not in head}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ProfileResult":
        """A result from ``to_dict()``'s form. Every field is checked against the schema; a
        document that does not fit raises BadInputError naming the field, e.g.
        ``categories[3].time_ms: expected a number, got a string ('1.5')``."""
        try:
            return _from_document(data)
        except _NotAResult as exc:
            raise exc.as_user_error(str(exc)) from None
        except DocumentError as exc:
            raise exc.as_user_error(f"not a valid visprof result: {exc}") from None

    def to_json(self, path: str | Path | None = None, indent: int | None = 2) -> str:
        """The result as JSON text; also written to ``path`` when given, atomically (the
        previous file stays whole if writing fails or is interrupted; gzipped for ``.gz``)."""
        data = self.to_dict()
        try:
            text = json.dumps(data, indent=indent, allow_nan=False)
        except ValueError:  # the encoder's "Out of range float values", ten frames deep, naming no field
            found = _non_finite(data)
            if found is None:
                raise
            field, value = found
            from visprof.base.errors import BadInputError

            raise BadInputError(f"the result holds {value} at {field}, which a JSON document cannot hold (and "
                                "no run gives): set it to a number or None first") from None
        if path is not None:
            from visprof.base.outputs import atomic_write_json

            atomic_write_json(path, text + "\n", kind="profile")
        return text

    @classmethod
    def load(cls, path: str | Path) -> "ProfileResult":
        """Reads a result written by ``to_json`` (plain or gzipped). A file that is missing,
        empty, truncated, not JSON, or does not fit the schema raises BadInputError naming
        the file and, where it applies, the field."""
        from visprof.base.inputs import load_json_file

        data = load_json_file(path, "result file")
        try:
            return _from_document(data)
        except DocumentError as exc:
            raise exc.as_user_error(f"result file {path}: {exc}") from None


def category_totals(rows: list[CategoryRow], memory: MemorySummary | None = None) -> dict[str, CategoryRow]:
    """Rows summed per category; category-level memory figures from ``memory``.

    Every default category is present (``totals["attention"]`` works on a CNN): one with no
    rows has a zero row. The default categories come first, in taxonomy order, then any
    others (user categories, ``unattributed``) in row order. Without rows (no attributed
    pass) the result is empty: nothing was measured, not zero."""
    if not rows:
        return {}

    totals: dict[str, CategoryRow] = {cat: CategoryRow(cat, None, 0.0, 0.0, 0.0, 0.0, None) for cat in CATEGORIES}
    seen: set[str] = set()
    for row in rows:
        t = totals.get(row.category)
        if t is None or row.category not in seen:
            seen.add(row.category)
            totals[row.category] = dataclasses.replace(row, subcategory=None, fused=dict(row.fused))
            continue
        for key, ms in row.fused.items():
            t.fused[key] = t.fused.get(key, 0.0) + ms
        t.time_ms += row.time_ms
        t.share += row.share
        t.kernel_count += row.kernel_count
        t.flops += row.flops
        t.bytes += row.bytes
        t.flop_time_ms += row.flop_time_ms
        t.live_bytes_at_peak = _add_optional(t.live_bytes_at_peak, row.live_bytes_at_peak)
        # transient peaks of sub-categories happen at different times: the max is a lower bound
        t.transient_peak_bytes = _max_optional(t.transient_peak_bytes, row.transient_peak_bytes)
        t.reserved_bytes_at_peak = _add_optional(t.reserved_bytes_at_peak, row.reserved_bytes_at_peak)
    for cat, t in totals.items():
        t.tflops = t.flops / t.time_ms / 1e9 if t.time_ms > 0 and t.flops > 0 else None
        t.gbps = t.bytes / t.time_ms / 1e6 if t.time_ms > 0 and t.bytes > 0 else None
        if memory is not None:
            t.live_bytes_at_peak = memory.by_category_at_peak.get(cat, t.live_bytes_at_peak)
            t.transient_peak_bytes = memory.transient_peak_by_category.get(cat, t.transient_peak_bytes)
            t.reserved_bytes_at_peak = memory.reserved_by_category_at_peak.get(cat, t.reserved_bytes_at_peak)
    return totals


def _add_optional(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


def _max_optional(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


# --- decoding: dataclass type hints drive from_dict (visprof.base.typed_json) ----------
# The fields of the first visprof.profile/1 writer. Every v1 document has them, so a missing
# one means a damaged or hand-made file and is refused. Fields added since (anything not
# listed here) may be missing in older v1 files: they take their defaults.
_V1_FIELDS: dict[str, tuple[str, ...]] = {
    "ProfileResult": ("model", "config", "measurement", "timing", "categories", "modules", "attribution",
                      "memory", "checks", "passes", "environment", "gpu", "warnings", "schema",
                      "visprof_version", "created_at"),
    "ModelInfo": ("name", "source", "param_count", "input_shape", "batch_size", "img_size"),
    "RunConfig": ("precision", "channels_last", "compile", "device", "warmup", "iterations", "passes"),
    "LatencyStats": ("median", "mean", "p10", "p90", "min", "max", "std"),
    "Timing": ("latency_ms", "samples_per_s", "iterations", "busy_ms", "idle_ms", "max_memory_allocated_bytes"),
    "CategoryRow": ("category", "subcategory", "time_ms", "share", "kernel_count", "flops", "tflops",
                    "live_bytes_at_peak", "transient_peak_bytes"),
    "ModuleRow": ("path", "cls", "time_ms", "self_time_ms", "share", "kernel_count"),
    "NamedTime": ("name", "time_ms", "count"),
    "AttributionSummary": ("kernel_ms", "memcpy_ms", "memset_ms", "activity_ms", "busy_ms", "span_ms", "coverage",
                           "unattributed_ms", "unattributed_kernels", "other_ops", "kernel_count", "iterations"),
    "MemorySummary": ("peak_bytes", "by_category_at_peak", "transient_peak_by_category", "alloc_count"),
    "Check": ("name", "value", "reference", "tolerance", "passed", "unit", "detail"),
    "PassInfo": ("wall_s", "iterations"),
}
_DECODER = DataclassDecoder(_V1_FIELDS, missing_note=" (every visprof.profile/1 result has it)")


class _NotAResult(DocumentError):
    """A document of another kind: no visprof result schema at all."""

    def as_user_error(self, message: str) -> Exception:
        from visprof.base.errors import NotAResultError

        return NotAResultError(message)


def _from_document(data: Any) -> "ProfileResult":
    if not isinstance(data, dict):
        raise DocumentError(f"expected a JSON object at the top level, got {describe_value(data)}")
    schema = data.get("schema")
    if not isinstance(schema, str) or schema.rsplit("/", 1)[0] != SCHEMA.rsplit("/", 1)[0]:
        raise _NotAResult(f"not a visprof profile result (schema={schema!r}){described(data)}")
    if schema != SCHEMA:
        raise DocumentError(f"unsupported result schema {schema!r}; this visprof reads {SCHEMA!r}")
    result = _DECODER.decode(ProfileResult, data)
    _check_values(result)
    return result


# A share is a fraction of the run's time; a float sum may pass 1 by a rounding step.
_SHARE_MAX = 1 + 1e-6


def _check_values(result: "ProfileResult") -> None:
    """Values of the right type that no run can give (a share of 5.0, batch -4, a negative time):
    loaded, they had been reported as "convolution 501%", "batch -4"."""
    def need(ok: bool, field: str, value: Any, what: str) -> None:
        if not ok:
            raise DocumentError(f"{field}: {value!r} {what}")

    batch = result.model.batch_size
    need(batch is None or batch >= 1, "model.batch_size", batch, "is not a batch size (1 or more)")
    if result.timing is not None:
        latency = result.timing.latency_ms
        for name in ("median", "mean", "p10", "p90", "min", "max", "std"):
            value = getattr(latency, name)
            need(value >= 0, f"timing.latency_ms.{name}", value, "is not a time (0 or more)")
    for table in ("categories", "modules", "op_types", "kernel_families"):
        for i, row in enumerate(getattr(result, table)):
            need(row.time_ms >= 0, f"{table}[{i}].time_ms", row.time_ms, "is not a time (0 or more)")
            need(0 <= row.share <= _SHARE_MAX, f"{table}[{i}].share", row.share, "is not a share (0 to 1)")


def _non_finite(value: Any, field: str = "") -> tuple[str, float] | None:
    """The first NaN or infinity in ``value`` (a result's dict) and where it is: ("categories[0].share", nan)."""
    if isinstance(value, float) and not math.isfinite(value):
        return field, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _non_finite(item, f"{field}[{key}]" if isinstance(key, int) else f"{field}.{key}" if field else key)
        if found:
            return found
    return None


def _plain(value: Any) -> Any:
    """``value`` with every number and string as the plain Python type: what a pass computes can be
    a numpy scalar, and torch's version a str subclass, which YAML and other writers refuse."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    if type(value).__module__ == "numpy" and hasattr(value, "item"):  # a numpy scalar (numpy not imported here)
        return value.item()
    for plain in (bool, str, int, float):  # bool first: it is an int
        if isinstance(value, plain):
            return plain(value)
    return value
