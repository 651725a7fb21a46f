"""Latency on a GPU you do not have, from a profile on one you do (docs/hardware-sensitivity.md).

Roofline scaling, per op group (``RooflineGroup``), from the profile's GPU row
A to the target's row B:

1. Each group's measured time is ``kernels x floor + roofline_A / e``: a fixed cost per
   kernel (``KERNEL_FLOOR_MS``, the shortest kernels the H200 runs take 1 us) plus the
   group's roofline time on A, max(FLOPs / peak, bytes / bandwidth), over an efficiency e
   in (0, 1] that this solves for. Bytes above A's bandwidth (L2 hits on A) give e = 1.
2. At a batch ``s`` times the profile's, FLOPs and activation bytes scale by s, weight
   bytes (``param_bytes``) do not.
3. On B the group takes ``kernels x floor + max(roofline_B, t_rate)``: its roofline time
   with B's peaks (the tensor peak of the group's tensor-core precision, else FP32) and
   bandwidth, or, where longer, ``t_rate``: its measured time above the floors, grown with
   its work at the new batch, times A's boost clock over B's. The roof counts as DRAM
   traffic only the activations B's L2 does not hold (``l2_hit_share``), and takes the
   share of the peaks kernels reach (``ACHIEVABLE``) unless the group ran closer on A. A
   kernel far below A's roof is held back by latency (dependent loads, too little
   parallelism to hide them), which a faster clock shortens and more SMs or bandwidth do
   not; a GPU with far lower peaks (a 3090's 936 GB/s against the H200's 4.8 TB/s) runs the
   same kernel at its roof.
   ``predict_group``'s ``excess`` names the other ways to scale the time above the roof
   (Habitat's is ``roofline_B / e``, the efficiency kept).
   Which ratio such rate-limited time scales by is not in any datasheet: a kernel waiting on
   memory latency gains nothing from a faster clock, one limited by issue gains SMs x clock.
   ``RATE_SCALINGS`` names the three. Between GPUs of one SM design (the same compute
   capability) the same kernel does the same work per SM per clock, so the default is SMs x
   clock; across designs, the clock (``default_rate_scaling``). ``Prediction.
   latency_by_scaling`` keeps the latency under each, so a prediction says how much it hinges
   on that choice (``speedup_band``): a narrow band is a prediction the specs decide.
   Layout transforms inside an op (``helper_ms``) are kernels too: with ``clock`` they take
   the longer of their roof (``HELPER_TRAFFIC`` x the op's activation bytes over B's
   bandwidth) and their measured time grown with the batch and scaled by the clock; in the
   other modes they scale with bandwidth and batch. Groups with neither FLOPs nor bytes known
   scale like memory traffic.
4. GPU busy time is the sum, times the profile's busy/kernel-time ratio (overlap).
   Launch/host: the profile's idle time per iteration (``timing.idle_ms``: the host's lead
   before the GPU starts, and gaps it could not fill) is added, times busy_A / busy_B where
   the target's GPU time is the longer (the host gets ahead, the gaps fill). Where the
   target is faster than the host can launch, keeping it is optimistic; a note says when
   the profile was host-bound.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Iterable, NamedTuple

from visprof.analysis.gpus import GpuSpec, GpuTable, more_gpus, table_or_default
from visprof.analysis.roofline import BOUNDS, roofline_rates
from visprof.base.errors import BadInputError
from visprof.base.options import PRECISIONS
from visprof.base.sizes import validate_batch_size
from visprof.base.spelling import option
from visprof.result import NSYS_IMPORT, ProfileResult, RooflineGroup

KERNEL_FLOOR_MS = 0.001  # shortest kernels in the H200 recordings: 0.96-1.0 us (tests/data)
HOST_BOUND_IDLE = 0.10  # idle share of latency above which a note says the profile was host-bound
SMALL_LAUNCH_NOTE = 0.10  # kernel-time share in launches smaller than the target above which a note says so
SIXTEEN_BIT = ("fp16", "bf16")
# The peak-memory estimate over the target's memory between which it cannot say whether a model
# fits (Prediction.fits None, "near"). Against timm's published runs at batch 1024 (a row at a
# smaller batch ran out of memory there) on the RTX 3090, both RTX 4090 tables and the RTX 5090,
# from the H200 profiles: below 0.8x 97-99% of the models fit, from 1.25x 1-3%, between them
# 37-49% (6-76% per tenth; bench/memory_fit_check.py, bench/results/memory-fit-2026-12-06/).
FITS_UNDECIDED = (0.8, 1.25)
TRANSFERS = ("[memcpy]", "[memset]")  # RooflineGroup.op of copies and fills without an op (roofline.op_groups)
# Bytes an op's layout transforms move per byte of its activations: cuDNN's NCHW<->NHWC
# kernels read and write the input on the way in and the output on the way out.
HELPER_TRAFFIC = 2.0
# The share of a datasheet peak that kernels reach, from the H200 profiles (300 models at batch
# 64, 88 at batch 256, bench/results/sweep-h200x2-*): 90% of memory-bound groups stay below
# 0.86-0.89 of 4.8 TB/s (the few above it are L2 hits), 99% of tensor-bound groups below
# 0.82-0.83 of the dense tensor peak. With ``clock`` a group on the target runs at most this
# close to its roof, or as close as it ran on the profiled GPU where that was closer.
ACHIEVABLE = {"memory": 0.88, "tensor": 0.82}


@dataclass
class GroupPrediction:
    group: RooflineGroup
    time_ms: float  # on the target, per iteration: main kernels + helpers
    bound: str  # on the target
    helper_ms: float

    def to_dict(self) -> dict:
        """``asdict(self)`` without its generic walk, a deepcopy call per field (4-6 s of the ~200,000
        groups `visprof predict --json` writes): a group's fields are numbers, strings and None,
        which asdict keeps as they are."""
        return {"group": {name: getattr(self.group, name) for name in _GROUP_FIELDS}, "time_ms": self.time_ms,
                "bound": self.bound, "helper_ms": self.helper_ms}


_GROUP_FIELDS = tuple(f.name for f in fields(RooflineGroup))


@dataclass
class Prediction:
    model: str
    img_size: int | None
    source_gpu: str  # spec id of the profile's GPU
    target_gpu: str
    source_batch: int
    batch_size: int
    precision: str  # of the prediction (the profile's, or the one asked for)
    latency_ms: float
    samples_per_s: float
    busy_ms: float
    idle_ms: float
    bound_ms: dict[str, float] = field(default_factory=dict)
    shares: dict[str, float] = field(default_factory=dict)  # of latency; "launch" is the idle time
    measured_latency_ms: float | None = None  # the profile's own, on its GPU at its batch
    peak_memory_bytes: float | None = None  # rough: weights + activations scaled with the batch
    # peak_memory_bytes well within the target's memory (True), well above it (False); None where
    # the estimate is too near the card's memory to tell (memory_share in FITS_UNDECIDED) or absent
    fits: bool | None = None
    memory_share: float | None = None  # peak_memory_bytes over the target's memory
    notes: list[str] = field(default_factory=list)
    groups: list[GroupPrediction] = field(default_factory=list)
    source_precision: str = ""  # the profile's: one model profiled in bf16 and fp16 is two rows
    # The scaling of time above the roof that latency_ms took (default_rate_scaling), and the
    # latency under each of RATE_SCALINGS (clock mode with measured times only): how much the
    # prediction hinges on what limits off-roof kernels.
    rate_scaling: str | None = None
    latency_by_scaling: dict[str, float] = field(default_factory=dict)

    @property
    def latency_range_ms(self) -> tuple[float, float] | None:
        values = self.latency_by_scaling.values()
        return (min(values), max(values)) if values else None

    def __repr__(self) -> str:
        # The prediction, not every op group's (10 kB for ViT-B/16): groups and to_dict() have them.
        span = self.latency_range_ms
        span_text = f" (range {span[0]:.3f}-{span[1]:.3f})" if span else ""
        fits = {True: ", fits", False: ", does NOT fit"}.get(self.fits, ", may not fit" if self.memory_share else "")
        return (f"<Prediction {self.model} {self.source_gpu} -> {self.target_gpu}: batch {self.batch_size}, "
                f"{self.precision}, {self.latency_ms:.3f} ms{span_text}, {self.samples_per_s:,.1f} samples/s{fits}>")

    def to_dict(self, groups: bool = False) -> dict:
        data = asdict(replace(self, groups=[]))  # asdict had walked every group, to drop them without groups
        if groups:
            data["groups"] = [p.to_dict() for p in self.groups]
        else:
            data.pop("groups")
        data["latency_range_ms"] = self.latency_range_ms
        return data


def target_precision(tensor_core: str | None, precision: str | None) -> str | None:
    """The precision a group's tensor-core work runs at when predicted at ``precision``: fp16 and
    bf16 switch (same bytes per value); anything else stays as profiled."""
    if tensor_core in SIXTEEN_BIT and precision in SIXTEEN_BIT:
        return precision
    return tensor_core


EXCESS_MODES = ("clock", "bound", "compute", "none", "fraction")
# How time above the roof (a rate-limited group) scales between GPUs with ``excess="clock"``:
# "clock" by the boost clocks (the default: pipelines and dependent loads run at the clock),
# "latency" not at all (a kernel waiting on DRAM latency, about the same in ns on every
# GPU), "throughput" by SMs x clock (a kernel limited by issue or per-SM parallelism that
# has enough blocks for every SM). The spread of a prediction over the three is how much it
# hinges on a choice no datasheet settles (speedup_band).
RATE_SCALINGS = ("clock", "latency", "throughput")


def default_rate_scaling(source: GpuSpec | None, target: GpuSpec) -> str:
    """"throughput" between GPUs of one SM design (equal compute capability), else "clock".

    Within a design a kernel's per-SM, per-clock rate carries over, so time above the roof
    scales with SMs x clock. Measured on an H200 whose kernels ran in a CUDA green context of
    66-76 of its 132 SMs (20 models, bench/results/h200-s22-sm/): predicted from the all-SM
    profiles, SMs x clock predicted them 8-24% too slow (median; the spread is the uncertain SM
    count of the partition), the clock alone 33% too fast; in a partition of exactly 96 SMs,
    over 241 models, 6.9% too slow against 19.9% too fast. Across designs per-SM rates differ,
    and the clock ranks the H200 -> RTX 3090 / 4090 predictions best (docs/hardware-sensitivity-record.md, the spec-only predictor)."""
    same_design = bool(source and source.compute_capability) and source.compute_capability == target.compute_capability
    return "throughput" if same_design else "clock"


def rate_ratio(source: GpuSpec, target: GpuSpec, scaling: str = "clock") -> float:
    """Time on ``target`` over time on ``source`` of rate-limited work, by ``scaling``."""
    if scaling == "clock":
        return source.boost_clock_mhz / target.boost_clock_mhz
    if scaling == "latency":
        return 1.0
    if scaling == "throughput":
        return (source.sms * source.boost_clock_mhz) / (target.sms * target.boost_clock_mhz)
    raise ValueError(f"rate scaling must be one of {RATE_SCALINGS}, got {scaling!r}")


def l2_hit_share(activation_bytes: float, gpu: GpuSpec) -> float:
    """The share of an op's activation bytes (inputs and outputs) served from ``gpu``'s L2
    rather than DRAM: all of them where they fit, else L2 / their size. The op's inputs were
    just written by the ops before it; a cache that keeps a random part of what streamed
    through it keeps about that fraction of them. At batch 1024 the 4090's 72 MB holds most
    of a mobile network's later layers, the 3090's 6 MB almost none."""
    if activation_bytes <= 0 or not gpu.l2_mb:
        return 0.0
    return min(1.0, gpu.l2_mb * 1e6 / activation_bytes)


def predict_group(g: RooflineGroup, source: GpuSpec | None, target: GpuSpec, scale: float = 1.0,
                  precision: str | None = None, efficiency: float | None = None,
                  excess: str = "clock", rate_scaling: str | None = None) -> GroupPrediction:
    """One group on ``target`` at ``scale`` times the profiled batch (module doc, steps 1-3).
    ``efficiency`` fixes e instead of measuring it (then ``source`` is not needed).

    ``excess`` says how the measured time above the roofline scales: "clock" (the default)
    takes the measured time as the group's rate limit and scales that rate with the boost
    clock, so the group takes the longer of its roof on the target and that time: a kernel
    at 30% of the H200's 4.8 TB/s moves 1.4 TB/s, more than a 936 GB/s card's roof, so there
    it is at its roof; on the same GPU at a larger batch it keeps its rate. "bound"
    (Habitat's assumption) keeps the efficiency, so it scales with the resource that bounds
    the group; "compute" scales it with the GPUs' general throughput (FP32 TFLOP/s: SMs x
    clock), for time lost to issue, latency and poor parallelism rather than to the roof;
    "none" drops it: on the target every group runs at its roof (plus the per-kernel floor),
    which suits a target whose peaks the kernels reach and not the profiled GPU itself (on
    the H200 at another batch it is 55% too fast); "fraction" splits the measured time into
    its roofline share (e), which scales with the roof's resource, and the rest (1 - e),
    which scales by ``rate_scaling`` (bench/results/calibrate-2026-12-03/). ``rate_scaling`` (``RATE_SCALINGS``) says
    which ratio of the two GPUs the "clock" mode's measured rate scales by; None takes
    ``default_rate_scaling``."""
    if excess not in EXCESS_MODES:
        raise BadInputError(f"excess must be one of {', '.join(EXCESS_MODES)}, got {excess!r}")
    pair = _Pair.of(source, target, scale, precision)
    r = _roofs(g, pair, efficiency, excess)
    if isinstance(r, GroupPrediction):
        return r
    measured = efficiency is None
    if excess == "clock" and measured:
        time_ratio = rate_ratio(source, target, rate_scaling or default_rate_scaling(source, target))
        return _clock_predictions(g, pair, r, (time_ratio,))[0]
    if excess == "fraction" and measured:
        # The share of the group's time that is its roofline time (its efficiency e on A) moves
        # with the roof's resource (roof_b); the rest, time off every roof, with the rate
        # scaling. Nsight Compute reads the H200's "memory-bound" kernels at 10-50% of its
        # bandwidth (issue 25): for them most of the time is off the roof and should not gain
        # the full bandwidth ratio, as it does under "clock" wherever the target's roof is met.
        # Both roofs count the activations each GPU's L2 holds as hits, so that on the profiled
        # GPU itself the prediction is the measured time.
        time_ratio = rate_ratio(source, target, rate_scaling or default_rate_scaling(source, target))
        grown = max(r.main_a - r.floor, 0.0) * r.growth
        hits_a = r.activations * scale * l2_hit_share(r.activations * scale, source)
        flops_per_ms_a, bytes_per_ms_a = pair.rates(g.tensor_core)[:2]
        roof_a_b = g.count * max(r.flops_b / flops_per_ms_a, (r.bytes_b - hits_a) / bytes_per_ms_a)
        on_roof = min(roof_a_b, grown)
        main_b = r.floor + (on_roof * r.roof_b / roof_a_b if roof_a_b > 0 else 0.0) + (grown - on_roof) * time_ratio
    elif excess == "compute" and measured:
        above = max(r.main_a - r.floor - r.roof_a, 0.0)
        main_b = r.floor + r.roof_b + above * r.growth * source.fp32_tflops / target.fp32_tflops
    elif excess == "none":
        main_b = r.floor + r.roof_b
    else:
        main_b = r.floor + r.roof_b / r.efficiency
    return GroupPrediction(g, main_b + r.helper, r.bound, r.helper)


class _Pair:
    """What every group of one prediction shares: the GPUs, the batch scale, the bandwidth ratio
    and the roof rates by tensor-core precision, each looked up once per prediction rather than
    once per group and rate scaling (a comparison predicts ~340,000 groups on each of its two
    GPUs). A rate is the divisor ``roofline_ms`` divides by, so a time is the float it gives."""

    __slots__ = ("source", "target", "scale", "precision", "bandwidth_ratio", "_rates")
    _last: _Pair | None = None  # of()'s

    def __init__(self, source: GpuSpec | None, target: GpuSpec, scale: float, precision: str | None):
        self.source, self.target, self.scale, self.precision = source, target, scale, precision
        self.bandwidth_ratio = source.memory_bandwidth_gbs / target.memory_bandwidth_gbs if source else 1.0
        self._rates: dict[str | None, tuple] = {}

    @classmethod
    def of(cls, source: GpuSpec | None, target: GpuSpec, scale: float, precision: str | None) -> _Pair:
        """The pair of these arguments: the last one made where they are the very same objects (spec
        rows are frozen), as they are for each group of a prediction that calls predict_group once a
        group ("fraction" and the other modes): its rates are then looked up once, not per group."""
        last = cls._last
        if (last is not None and last.source is source and last.target is target and last.scale is scale
                and last.precision is precision):
            return last
        cls._last = pair = cls(source, target, scale, precision)
        return pair

    def rates(self, tensor_core: str | None) -> tuple[float | None, float | None, float, float, str]:
        """(FLOPs and bytes per ms on the source's roof, the same on the target's, the target's compute
        kind) for a group of ``tensor_core`` precision: on the target it runs at ``target_precision``."""
        rates = self._rates.get(tensor_core)
        if rates is None:
            on_source = roofline_rates(self.source, tensor_core)[:2] if self.source else (None, None)
            on_target = roofline_rates(self.target, target_precision(tensor_core, self.precision))
            rates = self._rates[tensor_core] = (*on_source, *on_target)
        return rates


class _Roofs(NamedTuple):
    """A group's terms up to its roof on the target (module doc, steps 1-3), which every ``excess``
    mode starts from."""
    floor: float  # its kernels' fixed cost
    main_a: float  # its measured time on A, less helpers
    helper_a: float  # its measured helper time on A (none for a copy predicted from its bytes)
    helper: float  # helper_a at B's bandwidth and the new batch
    roof_a: float  # its roof on A at the profiled batch; 0 with a fixed efficiency
    efficiency: float
    activations: float  # bytes per op that grow with the batch
    flops_b: float  # per op, at the new batch
    bytes_b: float
    roof_b: float  # on B at the new batch ("clock": at the share of the peaks kernels reach)
    bound: str  # on B
    # How much time off the roof grows with the group's work at the new batch (on A's roofline:
    # x scale for FLOPs and activations, x1 for a weight-only cast); with measured times only.
    growth: float


def _roofs(g: RooflineGroup, pair: _Pair, efficiency: float | None, excess: str) -> _Roofs | GroupPrediction:
    """``g``'s ``_Roofs``, or its prediction where no mode has more to do: a group with neither
    FLOPs nor bytes known, or (with measured times) one whose kernels did not run."""
    scale, count, flops, nbytes = pair.scale, g.count, g.flops, g.bytes
    floor = g.kernel_count * KERNEL_FLOOR_MS
    # A copy or fill of its own (no op around it) is predicted from the bytes it moved, like
    # an op: counted as helper time it would scale with the batch and bandwidth whatever its
    # size, and 25 copies of 64 bytes (1 us each, EfficientViT-M0) would take 1.9 ms on a 3090.
    helper_a = 0.0 if g.op in TRANSFERS and nbytes > 0 else g.helper_ms
    main_a = max(g.time_ms - helper_a, 0.0)
    helper = helper_a * scale * pair.bandwidth_ratio
    measured = efficiency is None
    if flops <= 0 and nbytes <= 0:
        # Nothing known but its time: scaled as memory traffic. Without measured times
        # (a fixed efficiency) such an op is a view or an allocation: it launches nothing.
        main_b = (floor + max(main_a - floor, 0.0) * scale * pair.bandwidth_ratio) if measured and main_a > 0 else 0.0
        return GroupPrediction(g, main_b + helper, "unknown", helper)
    if measured and main_a <= 0:  # FLOPs counted but no kernel ran (e.g. fused away)
        return GroupPrediction(g, helper, "memory", helper)
    flops_per_ms_a, bytes_per_ms_a, flops_per_ms, bytes_per_ms, kind = pair.rates(g.tensor_core)
    roof_a = 0.0
    if efficiency is None:
        if pair.source is None:
            raise ValueError("a measured efficiency needs the source GPU's spec")
        roof_a = count * max(flops / flops_per_ms_a, nbytes / bytes_per_ms_a)
        efficiency = roof_a / max(main_a - floor, roof_a) if main_a > 0 and roof_a > 0 else 1.0
    activations = max(nbytes - g.param_bytes, 0.0)
    activations_b = activations * scale
    flops_b = flops * scale
    bytes_b = activations_b + g.param_bytes
    # DRAM traffic on B (clock): the share of the activations B's L2 holds does not go to DRAM.
    in_l2 = activations_b * l2_hit_share(activations_b, pair.target) if excess in ("clock", "fraction") else 0.0
    compute_b, memory_b = flops_b / flops_per_ms, (bytes_b - in_l2) / bytes_per_ms
    if excess == "clock":
        reached = min(efficiency or 0.0, 1.0)
        memory_b /= max(ACHIEVABLE["memory"], reached)
        if kind == "tensor":
            compute_b /= max(ACHIEVABLE["tensor"], reached)
    # The bound is the larger roof, as in the profile's own roofline (a rate-limited group
    # keeps it): on the profiled GPU the predicted shares are the measured ones.
    bound = kind if flops_b > 0 and compute_b >= memory_b else "memory"
    growth = (count * max(flops_b / flops_per_ms_a, bytes_b / bytes_per_ms_a) / roof_a) if roof_a > 0 else scale
    # tuple.__new__ as _Roofs._make does, without NamedTuple's Python-level __new__ (a tenth of a call here)
    return tuple.__new__(_Roofs, (floor, main_a, helper_a, helper, roof_a, efficiency, activations, flops_b, bytes_b,
                                  count * max(compute_b, memory_b), bound, growth))


def _clock_predictions(g: RooflineGroup, pair: _Pair, r: _Roofs, time_ratios: Iterable[float]) -> list[GroupPrediction]:
    """``g``'s prediction with measured times and the "clock" excess at each rate scaling's time
    ratio (``rate_ratio``): only its rate-limited time and its helpers' depend on that ratio, so
    the rest is computed once for all of ``RATE_SCALINGS``."""
    floor, main_a, helper_a, helper, _, _, activations, _, _, roof_b, bound, growth = r
    off_roof = max(main_a - floor, 0.0) * growth  # the measured time above the floors, grown with the batch
    helper_roof = None
    if helper_a > 0:
        # The transforms at B's bandwidth, or as rate-limited as they ran on A. Scaled by the
        # bandwidth ratio alone, EfficientViT-M0's pointwise convolutions' 4.4 us of
        # transforms per op on the H200 at batch 64 (far below its 4.8 TB/s) became 0.36 ms
        # per op on a 3090 at batch 1024; their bytes there take 0.08 ms.
        helper_roof = (g.count * HELPER_TRAFFIC * activations * pair.scale
                       / (pair.target.memory_bandwidth_gbs * 1e6 * ACHIEVABLE["memory"]))
        helper_grown = helper_a * pair.scale
    out = []
    for time_ratio in time_ratios:
        main_b = floor + max(roof_b, off_roof * time_ratio)
        if helper_roof is not None:
            helper = max(helper_roof, helper_grown * time_ratio)
        out.append(GroupPrediction(g, main_b + helper, bound, helper))
    return out


def _under_each_scaling(groups: list[RooflineGroup], pair: _Pair) -> dict[str, list[GroupPrediction]]:
    """``predict_group`` of each group with measured times and the "clock" excess, under each of
    ``RATE_SCALINGS``: one ``_roofs`` a group serves all three."""
    time_ratios = [rate_ratio(pair.source, pair.target, scaling) for scaling in RATE_SCALINGS]
    rows = []
    for g in groups:
        r = _roofs(g, pair, None, "clock")
        rows.append([r] * len(time_ratios) if isinstance(r, GroupPrediction) else _clock_predictions(g, pair, r, time_ratios))
    return {scaling: [row[i] for row in rows] for i, scaling in enumerate(RATE_SCALINGS)}


def _profile_result(given) -> ProfileResult:
    """A ProfileResult, or a loaded measurement's (``sources.load(...).profiles`` holds those): given
    one of those, predict_result had raised an AttributeError from deep inside."""
    if isinstance(given, ProfileResult):
        return given
    inner = getattr(given, "result", None)
    if isinstance(inner, ProfileResult):
        return inner
    raise BadInputError(f"predict takes a visprof profile (a ProfileResult, or a loaded measurement with one), "
                        f"got {type(given).__name__}" + (" without a profile" if hasattr(given, "result") else ""))


def _check_precision(result: ProfileResult, precision: str | None) -> str:
    own = result.config.precision
    if precision is None or precision == own:
        return own
    if precision in SIXTEEN_BIT and own in SIXTEEN_BIT:
        return precision
    if precision not in PRECISIONS:  # "profile it at int8" had sent the user to what visprof cannot do
        raise BadInputError(f"precision {precision!r}: visprof profiles and predicts at {', '.join(PRECISIONS)}")
    raise BadInputError(f"{result.model.name}: profiled at {own}; a prediction can switch between fp16 and bf16 "
                        f"(same bytes per value) but not to {precision}: profile it at {precision}")


def source_spec(result: ProfileResult, table: GpuTable) -> GpuSpec:
    """The spec row of the GPU a result ran on; a clear error where there is none."""
    name = (result.gpu or {}).get("name")
    spec = (table.find(result.roofline.gpu) if result.roofline and result.roofline.gpu else None) or table.for_device(name)
    if spec is None:
        raise BadInputError(f"{result.model.name}: its GPU {name!r} has no row in the GPU spec table; "
                            f"add one with {more_gpus()} to predict from it")
    return spec


def _why_no_roofline_groups(result: ProfileResult) -> str:
    """What a result without roofline groups lacks, and what would give it some."""
    env = result.environment or {}
    if env.get("source") != NSYS_IMPORT:
        return ("the result has no roofline groups (made by a visprof before they were recorded, or without an "
                "attributed pass); profile it again")
    if env.get("no_kernel_rows"):
        return (f"an nsys import with no kernel rows ({env['no_kernel_rows']}), so no roofline groups to predict "
                "from; record it with an nsys that traces kernels")
    return (f"an nsys import made by a visprof before imports had roofline groups; import it again: "
            f"visprof nsys import {env.get('path', 'REPORT.sqlite')} --json FILE")


def predict_result(result: ProfileResult, target: GpuSpec | str, *, source: GpuSpec | str | None = None,
                   batch_size: int | None = None, precision: str | None = None, table: GpuTable | None = None,
                   efficiency: float | None = None, excess: str = "clock") -> Prediction:
    """``result``'s latency on ``target`` at ``batch_size`` (default: the profile's).

    ``source`` overrides the spec row of the profile's GPU. ``efficiency`` (a number) skips
    the measured efficiencies: a pure roofline, for profiles whose times do not count
    (CPU results), used by bench/predict_check.py's baseline. ``excess``: see ``predict_group``."""
    table = table_or_default(table)
    result = _profile_result(result)
    target = table.get(target) if isinstance(target, str) else target
    roof = result.roofline
    if roof is None or not roof.groups:
        raise BadInputError(f"{result.model.name}: {_why_no_roofline_groups(result)}")
    if efficiency is None:
        if result.measurement != "gpu":
            raise BadInputError(f"{result.model.name}: a CPU result has host-clock times; predict from a GPU profile")
        source = (table.get(source) if isinstance(source, str) else source) or source_spec(result, table)
    elif isinstance(source, str):
        source = table.get(source)
    precision = _check_precision(result, precision)
    own_batch = result.model.batch_size or 1
    # checked as profile() checks it: 0 had meant the profile's own batch, 1.5 was predicted, "64" a TypeError
    batch = own_batch if batch_size is None else validate_batch_size(batch_size)
    scale = batch / own_batch
    banded = excess == "clock" and efficiency is None
    scaling = default_rate_scaling(source, target) if banded else None
    if banded:
        under = _under_each_scaling(roof.groups, _Pair(source, target, scale, precision))
        groups = under[scaling]
    else:  # by predict_group's module name: bench/measured_share_variant.py wraps it ("fraction")
        under = {}
        groups = [predict_group(g, source, target, scale, precision, efficiency, excess, scaling) for g in roof.groups]
    bound_ms, busy, idle = _busy_and_idle(result, groups, measured=efficiency is None)
    latency = busy + idle
    by_scaling = {other: latency if other == scaling else sum(_busy_and_idle(result, others, measured=True)[1:])
                  for other, others in under.items()}
    timing = result.timing
    notes = []
    idle_on_own = idle_share(timing)
    if idle_on_own and idle_on_own > HOST_BOUND_IDLE:
        # kept where it shrank by under 1%: on the profile's own GPU and batch the busy time predicted
        # is within about that of the measured, which is no "more work" (coatnet_0_rw_224: 0.8%)
        kept = ("kept as is" if idle >= timing.idle_ms * 0.99 else
                f"{idle:.3f} ms here, where the GPU has more work to hide it")
        notes.append(f"host-bound on its own GPU ({idle_on_own:.0%} idle): the host's "
                     f"{timing.idle_ms:.3f} ms of idle GPU per iteration is {kept}")
    if timing is None:  # an attributed-only profile or an nsys import: nothing timed the host's share
        notes.append("no timing pass: the latency is the GPU's busy time alone, without the host's idle time")
    if scale != 1:
        notes.append(f"batch {own_batch} -> {batch}: FLOPs and activation bytes x{scale:g}, weight bytes kept")
    notes.extend(_small_launch_note(result, target))
    notes.extend(_no_tensor_rate_note(roof.groups, target, precision))
    peak, share, fits = _memory(result, scale, target)
    if peak is not None and scale > 1 and result.model.param_count is None:
        notes.append("its parameter count is unknown (a frozen TorchScript module, an import): its weights are "
                     f"taken to grow with the batch like the rest, so ~{peak / 1e9:.1f} GB is an upper bound")
    if fits is False:
        notes.append(f"needs ~{peak / 1e9:.1f} GB at batch {batch}, more than the {target.memory_gb:g} GB of the {target.id}")
    elif share is not None and fits is None:
        notes.append(f"needs ~{peak / 1e9:.1f} GB at batch {batch}, {share:.2f}x the {target.memory_gb:g} GB of the "
                     f"{target.id}: too near it for the estimate to say whether it fits")
    shares = {b: ms / latency for b, ms in bound_ms.items()} if latency > 0 else {}
    if idle and latency > 0:
        shares["launch"] = idle / latency
    return Prediction(model=result.model.name, img_size=result.model.img_size, source_gpu=source.id if source else "-",
                      target_gpu=target.id, source_batch=own_batch, batch_size=batch, precision=precision,
                      source_precision=result.config.precision,
                      latency_ms=latency, samples_per_s=batch / latency * 1e3 if latency > 0 else float("nan"),
                      busy_ms=busy, idle_ms=idle, bound_ms={b: bound_ms[b] for b in BOUNDS if b in bound_ms},
                      shares=shares, measured_latency_ms=timing.latency_ms.median if timing else None,
                      peak_memory_bytes=peak, fits=fits, memory_share=share, notes=notes, groups=groups, rate_scaling=scaling,
                      latency_by_scaling=by_scaling)


def _small_launch_note(result: ProfileResult, target: GpuSpec) -> list[str]:
    """A note where SMALL_LAUNCH_NOTE or more of the profile's kernel time ran in launches of fewer
    thread blocks than the target has SMs: such a launch leaves SMs idle there, which no spec
    ratio models (efficientformerv2 runs 79-85% of its H200 kernel time in a one-block upsample;
    timm publishes it x0.81-0.84 from the RTX 4090 to the 5090, where `fraction` says x1.02-1.06)."""
    under = result.launches_below(target.sms)
    share = sum(r.share for r in under)
    if share < SMALL_LAUNCH_NOTE:
        return []
    largest = max(r.blocks_max for r in under)
    return [f"{share:.0%} of its kernel time ran in launches of at most {largest} thread block{'s' * (largest > 1)}, "
            f"fewer than the {target.id}'s {target.sms} SMs: they leave SMs idle there, which the prediction "
            f"does not model"]


def _no_tensor_rate_note(groups: list[RooflineGroup], target: GpuSpec, precision: str) -> list[str]:
    """A note where tensor-core work of the profile has no tensor rate on the target (bf16 or
    TF32 on a T4 or V100): it is predicted at the FP32 rate there, which is a different
    machine from the one profiled, so the user should know why such a prediction is slow."""
    total = sum(g.time_ms for g in groups)
    missing: dict[str, float] = {}
    for g in groups:
        wanted = target_precision(g.tensor_core, precision)
        if wanted and target.tensor_peak(wanted) is None:
            missing[wanted] = missing.get(wanted, 0.0) + g.time_ms
    if not missing or total <= 0:
        return []
    names = " or ".join(sorted(missing))
    share = sum(missing.values()) / total
    fp16 = (f" ({option('precision', 'fp16')} predicts it on them)" if "bf16" in missing and target.tensor_peak("fp16")
            else "")
    return [f"the {target.id} has no {names} tensor cores: {share:.0%} of the profile's kernel time ran on tensor "
            f"cores in {names} and is predicted at its FP32 rate ({target.fp32_tflops:g} TFLOP/s) there{fp16}"]


def _busy_and_idle(result: ProfileResult, groups: list[GroupPrediction], measured: bool) -> tuple[dict[str, float], float, float]:
    """GPU time by bound, GPU busy time and idle (launch/host) time per iteration on the
    target, from its group predictions (module doc, step 4)."""
    kernel_ms_a = sum(p.group.time_ms for p in groups)
    timing = result.timing
    overlap = timing.busy_ms / kernel_ms_a if timing and timing.busy_ms and kernel_ms_a > 0 and measured else 1.0
    bound_ms: dict[str, float] = {}
    for p in groups:
        main = p.time_ms - p.helper_ms
        bound_ms[p.bound] = bound_ms.get(p.bound, 0.0) + main * overlap
        if p.helper_ms:
            bound_ms["memory"] = bound_ms.get("memory", 0.0) + p.helper_ms * overlap
    busy = sum(bound_ms.values())
    idle = (timing.idle_ms or 0.0) if timing and measured else 0.0
    if idle and timing.busy_ms and busy > timing.busy_ms:
        # The GPU waited for the host (idle) because the host could not stay ahead of it.
        # With more GPU work per iteration (a larger batch, a slower GPU) the host gets
        # further ahead and the gaps fill: to first order they shrink as busy_A / busy_B.
        # On the H200 it took the error of batch 256 predicted from batch 64 (87 models)
        # from 5.0% to 3.4%, median (docs/hardware-sensitivity-record.md, the spec-only predictor).
        idle *= timing.busy_ms / busy
        # But the same host with more GPU work is not faster than the profile: a host-bound
        # profile stays host-bound while its GPU time is below the host's.
        if timing.latency_ms.median and busy + idle < timing.latency_ms.median:
            idle = timing.latency_ms.median - busy
    return bound_ms, busy, idle


def _memory(result: ProfileResult, scale: float, target: GpuSpec) -> tuple[float | None, float | None, bool | None]:
    """(peak memory at the new batch, its share of the target's memory, whether it fits: None
    where FITS_UNDECIDED). fp32 weights stay, the rest scales with the batch."""
    measured = (result.timing.max_memory_allocated_bytes if result.timing else None) or (
        result.memory.peak_bytes if result.memory else None)
    if not measured:
        return None, None, None
    weights = min((result.model.param_count or 0) * 4, measured)
    peak = weights + (measured - weights) * scale
    share = peak / (target.memory_gb * 1e9)
    low, high = FITS_UNDECIDED
    return peak, share, (True if share < low else False if share >= high else None)


def speedup(result: ProfileResult, base: GpuSpec | str, target: GpuSpec | str, **kwargs) -> tuple[Prediction, Prediction, float]:
    """(prediction on base, prediction on target, target throughput / base throughput)."""
    a = predict_result(result, base, **kwargs)
    b = predict_result(result, target, **kwargs)
    return a, b, b.samples_per_s / a.samples_per_s


def idle_share(timing) -> float | None:
    """The share of an iteration the GPU sat idle in a timing pass (``Timing``); None without one."""
    if timing is None or timing.idle_ms is None or not timing.latency_ms.median:
        return None
    return timing.idle_ms / timing.latency_ms.median


def speedup_band(on_base: Prediction, on_target: Prediction, gpu_time: bool = False) -> tuple[float, float] | None:
    """The lowest and highest throughput ratio target / base over ``RATE_SCALINGS``, each
    applied to both GPUs (one physics for one kernel), or None without them. Its width says
    how much the predicted speed-up hinges on what limits the kernels far below their roof:
    EfficientFormer-V2-S0's x1.46 (clock) spans x1.03-2.20, ViT-B/16's hardly moves.
    ``gpu_time``: of GPU busy time, each latency less its predicted idle time."""
    common = [s for s in RATE_SCALINGS if s in on_base.latency_by_scaling and s in on_target.latency_by_scaling]
    if not common:
        return None

    def rate(p: Prediction, scaling: str) -> float:
        return p.batch_size / (p.latency_by_scaling[scaling] - (p.idle_ms if gpu_time else 0.0))

    ratios = [rate(on_target, s) / rate(on_base, s) for s in common]
    return min(ratios), max(ratios)


def batch_distance(batch: int | None, wanted: int | None) -> float:
    """How far a profile at ``batch`` is extrapolated to ``wanted``: |log| of their ratio; 0
    where either is unknown."""
    if not batch or not wanted:
        return 0.0
    return abs(math.log(batch / wanted))


def choose_profiles(results: Iterable[ProfileResult], batch_size: int | None = None) -> tuple[list[ProfileResult], int]:
    """One profile per model (name, image size, GPU, precision): the one whose batch is
    closest (by ratio) to ``batch_size``, or, without one, one per batch as well; the newest
    among equals (ISO timestamps sort as text). A store that profiled a model twice, or at
    two batches, predicts it once, from the profile least extrapolated. Returns (the chosen,
    in input order; how many were left out)."""
    best: dict[tuple, tuple[float, str, int]] = {}  # key -> (distance, created_at, index)
    results = list(results)
    for index, r in enumerate(results):
        batch = r.model.batch_size or 1
        key = (r.model.name, r.model.img_size, (r.gpu or {}).get("name"), r.config.precision,
               None if batch_size else batch)
        distance = batch_distance(batch, batch_size)
        held = best.get(key)
        if held is None or distance < held[0] or (distance == held[0] and (r.created_at or "") >= held[1]):
            best[key] = (distance, r.created_at or "", index)
    keep = sorted(index for _, _, index in best.values())
    return [results[i] for i in keep], len(results) - len(keep)


def predict_many(results: Iterable[ProfileResult], target: GpuSpec | str, **kwargs) -> tuple[list[Prediction], list[str]]:
    """Predictions for every result that can be predicted; the others' reasons, one line each."""
    out, skipped = [], []
    for result in results:
        try:
            out.append(predict_result(result, target, **kwargs))
        except BadInputError as exc:
            skipped.append(str(exc))
    return out, skipped


__all__ = ["ACHIEVABLE", "EXCESS_MODES", "HELPER_TRAFFIC", "KERNEL_FLOOR_MS", "RATE_SCALINGS", "GroupPrediction", "Prediction",
           "batch_distance", "choose_profiles", "default_rate_scaling", "idle_share", "l2_hit_share", "predict_group", "predict_many", "predict_result",
           "rate_ratio", "source_spec", "speedup", "speedup_band", "target_precision"]
