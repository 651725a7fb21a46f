"""One roofline group's time on another GPU: the per-group step of ``visprof predict``
(``predict.predict_result`` adds the groups up, with the host's idle time).

Roofline scaling, per op group (``RooflineGroup``), from the profile's GPU row A to the
target's row B:

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
   on that choice (``predict.speedup_band``): a narrow band is a prediction the specs decide.
   Layout transforms inside an op (``helper_ms``) are kernels too: with ``clock`` they take
   the longer of their roof (``HELPER_TRAFFIC`` x the op's activation bytes over B's
   bandwidth) and their measured time grown with the batch and scaled by the clock; in the
   other modes they scale with bandwidth and batch. Groups with neither FLOPs nor bytes known
   scale like memory traffic.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Iterable, NamedTuple

from visprof.analysis.gpus import GpuSpec
from visprof.analysis.roofline import roofline_rates
from visprof.base.errors import BadInputError
from visprof.result import RooflineGroup

KERNEL_FLOOR_MS = 0.001  # shortest kernels in the H200 recordings: 0.96-1.0 us (tests/data)
SIXTEEN_BIT = ("fp16", "bf16")
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
    """One group on ``target`` at ``scale`` times the profiled batch (module doc).
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
    pair = GpuPair.of(source, target, scale, precision)
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


class GpuPair:
    """What every group of one prediction shares: the GPUs, the batch scale, the bandwidth ratio
    and the roof rates by tensor-core precision, each looked up once per prediction rather than
    once per group and rate scaling (a comparison predicts ~340,000 groups on each of its two
    GPUs). A rate is the divisor ``roofline_ms`` divides by, so a time is the float it gives."""

    __slots__ = ("source", "target", "scale", "precision", "bandwidth_ratio", "_rates")
    _last: GpuPair | None = None  # of()'s

    def __init__(self, source: GpuSpec | None, target: GpuSpec, scale: float, precision: str | None):
        self.source, self.target, self.scale, self.precision = source, target, scale, precision
        self.bandwidth_ratio = source.memory_bandwidth_gbs / target.memory_bandwidth_gbs if source else 1.0
        self._rates: dict[str | None, tuple] = {}

    @classmethod
    def of(cls, source: GpuSpec | None, target: GpuSpec, scale: float, precision: str | None) -> GpuPair:
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
    """A group's terms up to its roof on the target (module doc), which every ``excess``
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


def _roofs(g: RooflineGroup, pair: GpuPair, efficiency: float | None, excess: str) -> _Roofs | GroupPrediction:
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


def _clock_predictions(g: RooflineGroup, pair: GpuPair, r: _Roofs, time_ratios: Iterable[float]) -> list[GroupPrediction]:
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


def under_each_scaling(groups: list[RooflineGroup], pair: GpuPair) -> dict[str, list[GroupPrediction]]:
    """``predict_group`` of each group with measured times and the "clock" excess, under each of
    ``RATE_SCALINGS``: one ``_roofs`` a group serves all three."""
    time_ratios = [rate_ratio(pair.source, pair.target, scaling) for scaling in RATE_SCALINGS]
    rows = []
    for g in groups:
        r = _roofs(g, pair, None, "clock")
        rows.append([r] * len(time_ratios) if isinstance(r, GroupPrediction) else _clock_predictions(g, pair, r, time_ratios))
    return {scaling: [row[i] for row in rows] for i, scaling in enumerate(RATE_SCALINGS)}


__all__ = ["ACHIEVABLE", "EXCESS_MODES", "HELPER_TRAFFIC", "KERNEL_FLOOR_MS", "RATE_SCALINGS", "SIXTEEN_BIT", "TRANSFERS",
           "GpuPair", "GroupPrediction", "default_rate_scaling", "l2_hit_share", "predict_group", "rate_ratio",
           "target_precision", "under_each_scaling"]
