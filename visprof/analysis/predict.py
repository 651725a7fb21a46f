"""Latency on a GPU you do not have, from a profile on one you do (docs/hardware-sensitivity.md).

From the profile's GPU row A to the target's row B:

1-3. Each op group (``RooflineGroup``) on B, by ``group_scaling``: its measured time is a per-kernel floor plus its
   roofline time on A over an efficiency; on B it takes the longer of its roof there and
   its rate-limited time scaled by the clock, at the new batch; ``predict_group``'s
   ``excess`` names the other ways).
4. GPU busy time is the sum, times the profile's busy/kernel-time ratio (overlap).
   Launch/host: the profile's idle time per iteration (``timing.idle_ms``: the host's lead
   before the GPU starts, and gaps it could not fill) is added, times busy_A / busy_B where
   the target's GPU time is the longer (the host gets ahead, the gaps fill). Where the
   target is faster than the host can launch, keeping it is optimistic; a note says when
   the profile was host-bound.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable

from visprof.analysis.gpus import GpuSpec, GpuTable, more_gpus, table_or_default
from visprof.analysis.group_scaling import (RATE_SCALINGS, SIXTEEN_BIT, GpuPair, GroupPrediction, default_rate_scaling,
                                           predict_group, target_precision, under_each_scaling)
from visprof.analysis.roofline import BOUNDS
from visprof.base.errors import BadInputError
from visprof.base.options import PRECISIONS
from visprof.base.sizes import validate_batch_size
from visprof.base.spelling import option
from visprof.result import NSYS_IMPORT, ProfileResult, RooflineGroup

HOST_BOUND_IDLE = 0.10  # idle share of latency above which a note says the profile was host-bound
SMALL_LAUNCH_NOTE = 0.10  # kernel-time share in launches smaller than the target above which a note says so
# A target whose tensor or bandwidth peak is this much above the profiled GPU's, of another design: the
# default scaling keeps off-roof time at the clock's rate, and every check of it was toward lower peaks
HIGHER_PEAKS = 1.2
# The peak-memory estimate over the target's memory between which it cannot say whether a model
# fits (Prediction.fits None, "near"). Against timm's published runs at batch 1024 (a row at a
# smaller batch ran out of memory there) on the RTX 3090, both RTX 4090 tables and the RTX 5090,
# from the H200 profiles: below 0.8x 97-99% of the models fit, from 1.25x 1-3%, between them
# 37-49% (6-76% per tenth; bench/memory_fit_check.py, bench/results/memory-fit-2026-12-06/).
FITS_UNDECIDED = (0.8, 1.25)


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

    @property
    def fits_text(self) -> str:
        """yes, NO, near (the estimate too near the card's memory to tell), or - without a memory
        estimate: the table's column, and the files' ``fits_label`` (their ``fits`` is None for both
        near and no estimate)."""
        if self.fits is None:
            return "near" if self.memory_share is not None else "-"
        return "yes" if self.fits else "NO"

    def to_dict(self, groups: bool = False) -> dict:
        data = asdict(replace(self, groups=[]))  # asdict had walked every group, to drop them without groups
        if groups:
            data["groups"] = [p.to_dict() for p in self.groups]
        else:
            data.pop("groups")
        data["latency_range_ms"] = self.latency_range_ms
        data["fits_label"] = self.fits_text
        return data


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
    if spec is None and not name:  # an nsys export without a GPU description: no table row can help
        raise BadInputError(f"{result.model.name}: the result does not name its GPU (an nsys export without a "
                            "TARGET_INFO_GPU row), so there is nothing to predict from")
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
        under = under_each_scaling(roof.groups, GpuPair(source, target, scale, precision))
        groups = under[scaling]
    else:  # by the name this module imports: bench/measured_share_variant.py wraps predict.predict_group ("fraction")
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


def higher_peaks_note(source: GpuSpec, target: GpuSpec, precision: str | None) -> str | None:
    """Said once per GPU pair where ``target``'s tensor or bandwidth peak is HIGHER_PEAKS above ``source``'s
    and the two are of other designs (compute capability): under ``--excess clock`` a group's measured time
    above its roof scales by the boost clocks alone, so the prediction gains from the higher peaks only where
    a group reaches the target's roof. An H200 profile onto a B200 came out x0.99-1.01 for 1,596 of 1,623
    profiles, with a range of 12% (read as decided), where the B200 has 2.27x the tensor rate."""
    if source.compute_capability and source.compute_capability == target.compute_capability:
        return None  # one design: time above the roof scales with SMs x clock (default_rate_scaling)
    ratios = {"bandwidth": target.memory_bandwidth_gbs / source.memory_bandwidth_gbs}
    own, theirs = source.tensor_peak(precision), target.tensor_peak(precision)
    if own and theirs:
        ratios[f"{precision} tensor rate"] = theirs / own
    higher = {name: ratio for name, ratio in ratios.items() if ratio >= HIGHER_PEAKS}
    if not higher:
        return None
    parts = ", ".join(f"{name} x{ratio:.2f}" for name, ratio in higher.items())
    return (f"the {target.short_name}'s peaks are above the {source.short_name}'s ({parts}), another design: by default "
            f"({option('excess', 'clock')}) a group's measured time above its roof scales by the boost clocks alone "
            f"(x{source.boost_clock_mhz / target.boost_clock_mhz:.2f} in time), so the prediction gains from the higher "
            f"peaks only where a group reaches the {target.short_name}'s roof, and its range does not cover more; "
            f"visprof's checks were toward GPUs with lower peaks than the profiled one; {option('excess', 'fraction')} "
            f"scales each group's roofline share by its resource (docs/hardware-sensitivity.md, section 6)")


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


__all__ = ["FITS_UNDECIDED", "HIGHER_PEAKS", "HOST_BOUND_IDLE", "Prediction", "batch_distance", "choose_profiles",
           "higher_peaks_note", "idle_share", "predict_many", "predict_result", "source_spec", "speedup", "speedup_band"]
