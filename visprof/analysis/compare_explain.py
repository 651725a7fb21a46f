"""One sentence per compared model: how much it gains against the median, what bounds its time,
the two GPUs' ratios that matter for those bounds, and where its profile's prediction misses.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from visprof.analysis.comparison import EXPLAINED_WITHIN, ModelComparison, is_decided
from visprof.analysis.gpus import GpuSpec
from visprof.analysis.group_scaling import rate_ratio, target_precision
from visprof.analysis.roofline import BOUND_LABELS, compute_peak


def l2_ratio_text(ratio: float) -> str:
    """An L2 ratio as the sentences and tables print it: two decimals below 10 (the 3090's 6 MB against the 4090's
    72 MB is 0.08x, which one decimal had made 0.1x), one above (12.0x)."""
    return f"{ratio:.2f}" if ratio < 10 else f"{ratio:.1f}"


def tensor_key(precision: str | None) -> str | None:
    """The tensor-core rate a comparison's spec line quotes for tables at ``precision``: their own for
    fp16, bf16 and TF32, none for fp32 (the FP32 units run it; an fp32 table had been explained by the
    fp16 ratio), and fp16 where the precision is not known (timm's tables are mostly amp). A sentence
    quotes the rate its profile is predicted at (``tensor_work_precision``), named where it is not this."""
    if precision in ("fp16", "bf16", "tf32"):
        return precision
    return None if precision == "fp32" else "fp16"


def spec_tensor_ratio(comparison) -> tuple[str | None, float | None]:
    """(the tensor-core rate a comparison's spec line quotes, target over base at it): the precision of its
    tables (``tensor_key``), None for a ratio where either GPU has no such rate."""
    key = tensor_key(comparison.models[0].base.precision if comparison.models else None)
    b, t = comparison.base_spec, comparison.target_spec
    tb, tt = (b.tensor_peak(key), t.tensor_peak(key)) if key and b and t else (None, None)
    return key, (tt / tb if tb and tt else None)


def tensor_work_precision(m: ModelComparison, precision: str | None) -> str | None:
    """The precision the prediction runs the profile's tensor-core work at on both GPUs: that of most
    of its tensor-core time, switched between fp16 and bf16 to the table's (``target_precision``, as
    ``predict_group`` does). A table at fp32 or tf32 leaves it as profiled: compare predicts a bf16
    profile of an fp32 table at bf16 (``compare_notes.profile_precision_note`` says so). None where
    the profile has no tensor-core work; ``tensor_key`` of the table's where there are no groups to
    read (a comparison built by hand)."""
    roof = m.profile.result.roofline if m.profile is not None and m.profile.result is not None else None
    if roof is None or not roof.groups:
        return tensor_key(precision)
    time_by_precision = Counter()
    for g in roof.groups:
        if g.tensor_core:
            time_by_precision[g.tensor_core] += g.time_ms
    if not time_by_precision:
        return None
    return target_precision(time_by_precision.most_common(1)[0][0], precision)


@dataclass(frozen=True)
class TensorWork:
    """How much faster the target runs the profile's tensor-core work than the base, at the peaks the
    predictor divides its FLOPs by (``roofline.compute_peak``): the precision's tensor peak on a GPU
    with one, else the FP32 peak. Where a GPU has no tensor rate for it the sentence says so: the
    ratio is then of FP32 units to tensor cores, not of two tensor peaks."""
    precision: str | None  # None: the profile has no tensor-core work, and the ratio is of FP32 peaks
    ratio: float
    on_base_tensor_cores: bool
    on_target_tensor_cores: bool
    named: bool  # the precision is not the table's: an fp32 table explained by a bf16 profile

    @classmethod
    def of(cls, m: ModelComparison, base: GpuSpec, target: GpuSpec, precision: str | None) -> TensorWork:
        work = tensor_work_precision(m, precision)
        (on_base, base_kind), (on_target, target_kind) = compute_peak(base, work), compute_peak(target, work)
        return cls(work, on_target / on_base, base_kind == "tensor", target_kind == "tensor",
                   work != tensor_key(precision))

    @property
    def on_tensor_cores(self) -> bool:
        return self.on_base_tensor_cores and self.on_target_tensor_cores

    @property
    def on_fp32_units(self) -> bool:
        """Neither GPU has a tensor rate for the work (or there is none): the FP32 ratio says it all."""
        return not (self.on_base_tensor_cores or self.on_target_tensor_cores)

    def throughput(self, base_name: str) -> str:
        """What the ratio is of ("tensor throughput"), with why it is not of two tensor peaks."""
        if self.on_tensor_cores:
            return f"{self.precision} tensor throughput" if self.named else "tensor throughput"
        if self.on_fp32_units:
            return "FP32 throughput"
        # The sentence's subject is the target: "no bf16 tensor cores" is its own lack.
        lacks = "no" if self.on_base_tensor_cores else f"the {base_name} has no"
        runs = "run" if self.on_base_tensor_cores else "ran"
        return f"{self.precision} throughput ({lacks} {self.precision} tensor cores: its FP32 units {runs} that work)"


def _unexplained(m: ModelComparison, bound: str, target_name: str, sms_x_clock: float) -> str:
    """What the sentence adds when the bounds do not account for the measured speed-up.
    ``sms_x_clock``: the target's SMs x clock over the base's."""
    p = m.predicted_speedup
    gap = m.speedup / p - 1
    band = m.predicted_band
    wide = bool(band) and not is_decided(band)
    if wide and band[0] <= m.speedup <= band[1] and abs(gap) > EXPLAINED_WITHIN:
        # The spec ratios cannot decide it, and one physical scaling accounts for the gain.
        return (f"; its profile predicts x{p:.2f}, and x{band[0]:.2f}-{band[1]:.2f} as its kernels far below their roof "
                f"gain nothing, the clock or SMs x clock: the measured gain is within that range")
    span = f" (x{band[0]:.2f}-{band[1]:.2f} by how its kernels far below their roof scale)" if wide else ""
    if abs(gap) <= EXPLAINED_WITHIN:
        return f"; its profile predicts x{p:.2f}{span}"
    if gap > 0:
        # SMs x clock explains a larger speed-up only where the target has more of them
        hint = (f": kernels below their roof gain from the {target_name}'s {sms_x_clock:.2f}x SMs x clock as well"
                if bound in ("memory", "unknown") and sms_x_clock > 1 + EXPLAINED_WITHIN else "")
        return f"; its profile predicts only x{p:.2f}{span}, so the bounds under-state its speed-up{hint}"
    hint = f": its kernels reach less of the {target_name}'s peak than the profile's GPU suggests" if bound == "tensor" else ""
    return f"; its profile predicts x{p:.2f}{span}, so the bounds over-state its speed-up{hint}"


def explain(m: ModelComparison, median: float, base: GpuSpec | None, target: GpuSpec | None, base_name: str,
            target_name: str, precision: str | None, profile_gpu_name: str | None = None) -> str:
    """One sentence: how much it gains against the median, what bounds its time, and the
    ratios of the two GPUs that matter for those bounds. ``profile_gpu_name``: the profile's GPU
    as the sentence names it ("H200 SXM 141GB"), where ``m.shares_from`` has its id."""
    # "gains" only for a gain: below x1 the target is slower (a downgrade, or a model that loses)
    moves = "gains" if m.speedup >= 1 else "runs at"
    head = f"{moves} x{m.speedup:.2f} against a median x{median:.2f} ({m.sensitivity:+.0%})"
    if not m.shares:
        # profiles join on the image size: another size's profile does not say why this one gains
        at = f" at {m.img_size} px" if m.img_size else ""
        tail = f"; no profile of it{at} to say why (profile it, or sweep it, on a GPU with a spec row)"
        if m.intensity is not None:
            tail = f"; no profile of it{at} (it does {m.intensity:.0f} MACs per activation)"
        return head + tail
    kernel = {b: v for b, v in m.shares.items() if b != "launch"}
    bound = max(kernel, key=kernel.get)
    how, _, gpu_id = m.shares_from.rpartition(" ")  # "measured on rtx3090", "predicted from h200"
    where = f"{how} the {profile_gpu_name or gpu_id}"
    what = f"{m.shares[bound]:.0%} of its {base_name} time is {BOUND_LABELS[bound]} bound ({where} profile)"
    if not (base and target):  # no spec rows: no ratios, and nothing predicted from them
        return f"{head}: {what}"
    work = TensorWork.of(m, base, target, precision)
    throughput = work.throughput(base_name)
    bandwidth_ratio = target.memory_bandwidth_gbs / base.memory_bandwidth_gbs
    fp32_ratio = target.fp32_tflops / base.fp32_tflops
    # "but" or "less than" where the bound's resource gains less than the other; where it gains more
    # (the 5090's bandwidth, x1.78 of the 4090's against x1.27 tensor throughput), said so
    if bound == "tensor":
        why = (f"and the {target_name} has {work.ratio:.2f}x the {base_name}'s {throughput} but "
               f"{bandwidth_ratio:.2f}x its bandwidth" if work.ratio >= bandwidth_ratio else
               f"and the {target_name} has {work.ratio:.2f}x the {base_name}'s {throughput}, less than its "
               f"{bandwidth_ratio:.2f}x bandwidth")
    elif bound == "memory":
        # The predictor keeps the share of activations the target's L2 holds off DRAM: a larger
        # L2 (the 4090's 72 MB against the 3090's 6 MB) is part of why memory-bound work gains.
        l2 = (f", {l2_ratio_text(target.l2_mb / base.l2_mb)}x its L2" if base.l2_mb and target.l2_mb
              and abs(target.l2_mb / base.l2_mb - 1) >= 0.25 else "")
        than = "less than" if bandwidth_ratio < work.ratio else "more than"
        why = (f"and the {target_name} has {bandwidth_ratio:.2f}x the {base_name}'s bandwidth, {than} its "
               f"{work.ratio:.2f}x {throughput}{l2}")
    elif bound == "compute":
        # Ops without tensor cores run on FP32 units on both GPUs; tensor-core work counts here too
        # where the base has no tensor rate for it, and the target's tensor cores then run it.
        tensor = ("" if work.on_base_tensor_cores or work.on_fp32_units
                  else f" and {work.ratio:.2f}x its {throughput}")
        why = (f"and the {target_name} has {fp32_ratio:.2f}x the {base_name}'s FP32 throughput{tensor}, "
               f"{bandwidth_ratio:.2f}x its bandwidth")
    else:
        why = (f"(ops without recorded bytes); the {target_name} has {work.ratio:.2f}x the {throughput}, "
               f"{bandwidth_ratio:.2f}x the bandwidth")
    launch = m.shares.get("launch", 0.0)
    extra = f"; {launch:.0%} is launch/host time, which no GPU speeds up" if launch >= 0.10 else ""
    if m.predicted_speedup:
        # The SMs x clock the predictor scales rate-limited time by (its "throughput" scaling), not the
        # FP32 TFLOP/s ratio: that counts FP32 lanes per SM too (A100 -> H100: 3.44x against 1.72x).
        # rate_ratio is time on the target over time on the base, so its inverse is the gain.
        extra += _unexplained(m, bound, target_name, 1 / rate_ratio(base, target, "throughput"))
    return f"{head}: {what}, {why}{extra}"


__all__ = ["TensorWork", "explain", "l2_ratio_text", "spec_tensor_ratio", "tensor_key", "tensor_work_precision"]
