"""Speed-ups between two GPUs, how sensitive each model is, and why (docs/hardware-sensitivity.md).

    comparison = compare(loaded.measurements, base="rtx3090", target="rtx4090")

* **speed-up**: the model's throughput on the target over its throughput on the base, both
  at the same image size (measurements are joined on architecture and image size; where a
  GPU has several, the one whose precision and batch match the other side's best); end to
  end, or with ``time="gpu"`` of profiles' GPU busy time (``visprof.analysis.time_basis``);
* **sensitivity**: speed-up / the median speed-up of all joined models - 1. +0.26 means the
  model gains 26% more from the upgrade than the typical model does;
* **family**: the timm module that defines the model (``visprof.analysis.families``);
* **dominant category** and **time by bound** on the base GPU: from the model's profile on
  the base GPU if there is one, else predicted onto the base GPU (at the base measurement's
  batch) from its profile on any GPU with a spec row (``visprof.analysis.predict``);
* **predicted speed-up**: what the profile's roofline groups give for the two spec rows
  (``visprof.analysis.predict``); where it misses the measured speed-up by more than
  ``EXPLAINED_WITHIN``, the explanation says the bounds do not account for the difference;
* **explanation**: one sentence built from these numbers and the two GPUs' spec rows.

CPU results are left out, with a note that says how many: their times are host-clock.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Mapping, NamedTuple

from visprof.analysis.batch_witness import PathChange, decays_from, path_change, path_change_note
from visprof.analysis.families import family
from visprof.analysis.gpus import GpuSpec, GpuTable, table_or_default
from visprof.analysis.metrics import ratio_errors, spearman
from visprof.analysis.time_basis import END_TO_END, GPU, TIME_BASES, host_note, on_gpu_time
from visprof.analysis.roofline import BOUND_LABELS, dominant_category
from visprof.analysis.sources import Loaded, Measurement
from visprof.base.errors import BadInputError
from visprof.base.progress import check_callback, counted
from visprof.base.spelling import option

# A predicted speed-up within this of the measured one: the bounds account for the gain.
EXPLAINED_WITHIN = 0.10


@dataclass
class ModelComparison:
    model: str
    img_size: int | None
    family: str
    base: Measurement
    target: Measurement
    speedup: float
    sensitivity: float = 0.0
    dominant_category: str | None = None
    shares: dict[str, float] = field(default_factory=dict)  # time by bound on the base GPU
    shares_from: str = ""  # "measured on rtx3090" / "predicted from h200"
    predicted_speedup: float | None = None  # from the profile's roofline groups and the two spec rows
    predicted_band: tuple[float, float] | None = None  # predict.speedup_band: over how off-roof time may scale
    # the throughput the profile's groups predict on the base GPU, at the published batch: how the
    # published base number departs from it is a calibration covariate (base_time_over_predicted)
    predicted_base_samples_per_s: float | None = None
    explanation: str = ""
    profile: Measurement | None = None  # the profile all of the above was read from (profile_for)
    # where the two published batches show that the runs held different memory per sample (batch_witness)
    path_change: PathChange | None = None

    def __repr__(self) -> str:
        # The model's line, not its two measurements' every field and the profile inside (40 lines).
        size = f" @{self.img_size}" if self.img_size else ""
        predicted = ""
        if self.predicted_speedup is not None:
            band = f" (band x{self.predicted_band[0]:.3f}-x{self.predicted_band[1]:.3f})" if self.predicted_band else ""
            predicted = f", predicted x{self.predicted_speedup:.3f}{band} from its profile"
        return (f"<ModelComparison {self.model}{size} ({self.family}): x{self.speedup:.3f} {self.base.gpu} -> "
                f"{self.target.gpu}, sensitivity {self.sensitivity:+.1%}{predicted}>")

    @property
    def base_time_over_predicted(self) -> float | None:
        """log(published base time per sample / the time the profile predicts there): the calibration's
        covariate from the base GPU's own number (calibration_fleet.BASE_COVARIATE)."""
        return base_time_over_predicted(self.base.samples_per_s, self.predicted_base_samples_per_s)

    @property
    def intensity(self) -> float | None:
        """MACs per activation (timm's counts): how much math each value moved carries."""
        for m in (self.base, self.target):
            if m.gmacs and m.macts_m:
                return m.gmacs * 1e3 / m.macts_m
        return None

    def row(self) -> dict:
        """Plain fields for JSON/CSV."""
        return {"model": self.model, "img_size": self.img_size, "family": self.family,
                "base_samples_per_s": self.base.samples_per_s, "target_samples_per_s": self.target.samples_per_s,
                "base_batch": self.base.batch_size, "target_batch": self.target.batch_size,
                "speedup": self.speedup, "predicted_speedup": self.predicted_speedup,
                "predicted_base_samples_per_s": self.predicted_base_samples_per_s,
                "predicted_low": self.predicted_band[0] if self.predicted_band else None,
                "predicted_high": self.predicted_band[1] if self.predicted_band else None, "sensitivity": self.sensitivity,
                "dominant_category": self.dominant_category,
                **{f"share_{b}": v for b, v in self.shares.items()}, "shares_from": self.shares_from,
                "macs_per_activation": self.intensity, "explanation": self.explanation,
                "base_source": self.base.source, "target_source": self.target.source,
                "path_change_run": self.path_change.hungrier if self.path_change else None,
                "path_change_factor": self.path_change.factor if self.path_change else None}


@dataclass
class Aggregate:
    key: str
    count: int
    median_speedup: float
    median_sensitivity: float
    min_speedup: float
    max_speedup: float


@dataclass
class PredictionAgreement:
    """How far the explanations can be trusted: the profiles' predicted speed-ups against the measured ones."""

    models: int
    spearman: float
    median_abs_error: float
    median_signed_error: float
    within: int  # models predicted within EXPLAINED_WITHIN
    # Models whose speed-up band (predict.speedup_band) is at most DECIDED_BAND wide: the spec
    # ratios decide their prediction whatever limits their kernels far below the roof.
    decided: int = 0
    decided_spearman: float | None = None

    @classmethod
    def of(cls, models: list[ModelComparison]) -> "PredictionAgreement | None":
        pairs = [(m.predicted_speedup, m.speedup) for m in models if m.predicted_speedup]
        if len(pairs) < 3:
            return None
        predicted, measured = zip(*pairs)
        errors = ratio_errors(predicted, measured)
        decided = [(m.predicted_speedup, m.speedup) for m in models if m.predicted_speedup and is_decided(m.predicted_band)]
        return cls(len(pairs), spearman(predicted, measured), errors["median_abs"], errors["median_signed"],
                   sum(abs(p / s - 1) <= EXPLAINED_WITHIN for p, s in pairs), len(decided),
                   spearman(*zip(*decided)) if len(decided) >= 3 else None)

    def sentence(self) -> str:
        decided = (f"; on the {self.decided} whose band is within {EXPLAINED_WITHIN:.0%} either way (the spec ratios "
                   f"decide them), Spearman {self.decided_spearman:.2f}" if self.decided_spearman is not None else "")
        return (f"{self.models} profiled model(s): their profiles predict the speed-up with median error "
                f"{self.median_abs_error:.1%} (median signed {self.median_signed_error:+.1%}), rank the models with "
                f"Spearman {self.spearman:.2f}, and account for it within {EXPLAINED_WITHIN:.0%} for {self.within} of them"
                f"{decided}")


DECIDED_BAND = 2 * EXPLAINED_WITHIN


def is_decided(band: tuple[float, float] | None) -> bool:
    """A speed-up band narrow enough that its scaling cannot move the prediction by more than
    EXPLAINED_WITHIN either way."""
    return bool(band) and band[1] / band[0] - 1 <= DECIDED_BAND


@dataclass
class Comparison:
    base: str  # GPU key (spec id, else name)
    target: str
    base_spec: GpuSpec | None
    target_spec: GpuSpec | None
    models: list[ModelComparison]
    median_speedup: float
    by_family: list[Aggregate]
    by_category: list[Aggregate]
    by_bound: list[Aggregate]
    unmatched: dict[str, int] = field(default_factory=dict)  # GPU key -> models without a partner
    notes: list[str] = field(default_factory=list)
    prediction: PredictionAgreement | None = None  # also the last note
    software: str | None = None  # where the two GPUs' numbers come from different software: why it matters (a note too)
    paths: str | None = None  # the models whose two published runs took different paths (batch_witness; a note too)
    host: str | None = None  # profiles on both sides whose end-to-end time carries their hosts (time_basis; a note too)
    cpu_results: str | None = None  # the CPU results left out (cpu_results_note; a note too)
    implausible: str | None = None  # speed-ups that say a table is wrong, not the GPUs (implausible_note; a note too)
    base_name: str = ""  # the GPUs as sentences name them ("RTX 4090")
    target_name: str = ""
    # (architecture, image size) -> its base GPU measurement, for models measured on the base only:
    # what a calibration predicts the target from (a reference row where there is one)
    base_only: dict[tuple, Measurement] = field(default_factory=dict)
    time: str = END_TO_END  # which time the speed-ups divide (time_basis.TIME_BASES)

    def __post_init__(self) -> None:
        self.base_name = self.base_name or self.base
        self.target_name = self.target_name or self.target

    def __repr__(self) -> str:
        # The headline, not every model's row (megabytes for a published table): to_dict() has them.
        agreement = (f"; {self.prediction.models:,} profiled, predicted at Spearman {self.prediction.spearman:.2f}, "
                     f"median error {self.prediction.median_abs_error:.1%}" if self.prediction else "")
        return (f"<Comparison {self.base} -> {self.target}: {len(self.models):,} models, median speed-up "
                f"x{self.median_speedup:.3f}{agreement}; {len(self.notes)} note(s)>")

    def to_dict(self) -> dict:
        return {"base": self.base, "target": self.target, "time": self.time,
                "base_spec": self.base_spec.as_dict() if self.base_spec else None,
                "target_spec": self.target_spec.as_dict() if self.target_spec else None,
                "median_speedup": self.median_speedup, "models": [m.row() for m in self.models],
                "by_family": [asdict(a) for a in self.by_family], "by_category": [asdict(a) for a in self.by_category],
                "by_bound": [asdict(a) for a in self.by_bound], "unmatched": self.unmatched, "notes": self.notes,
                "prediction": asdict(self.prediction) if self.prediction else None}


def gpu_keys(measurements: Iterable[Measurement]) -> list[str]:
    """GPU keys in order of first appearance."""
    return list(dict.fromkeys(m.gpu for m in measurements if m.samples_per_s))


def busiest_pair(measurements: Iterable[Measurement]) -> tuple[str, str] | None:
    """The two GPUs with the most models measured on both (in order of first appearance)."""
    keys = gpu_keys(measurements)
    seen: dict[str, set] = {k: set() for k in keys}
    for m in measurements:
        if m.samples_per_s:
            seen[m.gpu].add((m.arch, m.img_size))
    pairs = [(len(seen[a] & seen[b]), -i, -j, a, b) for i, a in enumerate(keys) for j, b in enumerate(keys) if i < j]
    best = max(pairs, default=None)
    return (best[3], best[4]) if best and best[0] > 0 else None


def _resolve(name: str | None, keys: list[str], table: GpuTable) -> str:
    spec = table.find(name) if name else None
    for key in keys:
        if key == name or (spec is not None and key == spec.id):
            return key
    raise BadInputError(f"no measurements on GPU {name!r}; the inputs have: {', '.join(keys) or 'none'}")


def pick_gpus(measurements: list[Measurement], base: str | None, target: str | None, table: GpuTable) -> tuple[str, str]:
    """The two GPUs to compare: as named, or the only two there are (base: the first seen)."""
    keys = gpu_keys(measurements)
    if len(keys) < 2:  # before --base/--target: naming GPUs cannot bring a second one into the inputs
        held = f"on one only ({keys[0]})" if keys else "on none (no throughput in them)"
        raise BadInputError(f"a comparison needs measurements on two GPUs, and the inputs have measurements {held}: "
                            "add the other GPU's, e.g. its timm benchmark CSV (as it is, or imported into a store "
                            "with visprof import-timm) or visprof profiles made on it")
    if base is None and target is None:
        if len(keys) != 2:
            raise BadInputError(f"the inputs have measurements on {len(keys)} GPU(s) ({', '.join(keys) or 'none'}); "
                                f"name the two to compare with {option('base')} and {option('target')}")
        return keys[0], keys[1]
    if base is None or target is None:
        named = _resolve(base or target, keys, table)
        others = [k for k in keys if k != named]
        if len(others) != 1:
            raise BadInputError(f"name both {option('base')} and {option('target')}: the inputs have GPUs "
                                f"{', '.join(keys)}")
        return (named, others[0]) if base else (others[0], named)
    b, t = _resolve(base, keys, table), _resolve(target, keys, table)
    if b == t:
        raise BadInputError(f"{option('base')} and {option('target')} are the same GPU ({b})")
    return b, t


# Published rows of one model on one GPU, alike in what _best_pair weighs, that differ by more than
# this in throughput: two tables disagree (or a tag's weights run another network), and which is
# compared decides the speed-up.
DISAGREEING_ROWS = 0.05


def _disagreeing(chosen: Measurement, candidates: list[Measurement]) -> Measurement | None:
    """A published row of ``candidates`` alike to ``chosen`` (precision, software, layout, batch)
    whose throughput differs by more than DISAGREEING_ROWS, or None."""
    if chosen.kind != "reference":
        return None
    for other in candidates:
        alike = (other.kind, other.precision, other.torch, other.channels_last, other.batch_size) == \
                (chosen.kind, chosen.precision, chosen.torch, chosen.channels_last, chosen.batch_size)
        if other is not chosen and alike and abs(other.samples_per_s / chosen.samples_per_s - 1) > DISAGREEING_ROWS:
            return other
    return None


def disagreeing_rows_note(models: list[ModelComparison], base_rows: Mapping[tuple, list], target_rows: Mapping[tuple, list],
                          base_name: str, target_name: str) -> str | None:
    """A warning where a GPU holds published rows of one model that agree in their settings but
    not in throughput (two user tables, or two pretrained tags of one architecture): the row
    compared was the one loaded last, silently. ``base_rows``/``target_rows``: each GPU's
    measurements by (architecture, image size)."""
    found = []
    for m in models:
        key = (m.base.arch, m.img_size)
        for chosen, pool, name in ((m.base, base_rows[key], base_name), (m.target, target_rows[key], target_name)):
            other = _disagreeing(chosen, pool)
            if other is not None:
                found.append((m, chosen, other, name))
                break
    if not found:
        return None
    m, chosen, other, name = found[0]
    return (f"{len(found)} model(s) have published rows on one GPU that agree in precision, software, layout and "
            f"batch but not in throughput (e.g. {m.model} @{m.img_size} on the {name}: {chosen.samples_per_s:g} "
            f"samples/s compared, {other.samples_per_s:g} left out, from {other.source}): the one loaded last is "
            "compared; give one table per GPU")


def _best_pair(a: list[Measurement], b: list[Measurement]) -> tuple[Measurement, Measurement]:
    """The pair of one precision, then of one PyTorch version, then whose layout and batch agree
    best (ties: the latest measurements). Without the version, one GPU's two timm tables (torch
    2.4 and 2.9.1) were chosen between by the order they were loaded in: mobileone_s0 compared
    its torch 2.4 RTX 4090 row with the 5090's 2.9.1 one at x8.26, x1.55 under one version."""
    def score(pair):
        x, y = pair
        return (x.precision == y.precision, bool(x.torch) and x.torch == y.torch,
                (x.channels_last == y.channels_last) + (x.batch_size == y.batch_size), a.index(x), b.index(y))
    return max(((x, y) for x in a for y in b), key=score)


def _aggregate(models: list[ModelComparison], key) -> list[Aggregate]:
    groups: dict[str, list[ModelComparison]] = defaultdict(list)
    for m in models:
        groups[key(m) or "-"].append(m)
    out = [Aggregate(k, len(ms), statistics.median(m.speedup for m in ms), statistics.median(m.sensitivity for m in ms),
                     min(m.speedup for m in ms), max(m.speedup for m in ms)) for k, ms in groups.items()]
    out.sort(key=lambda a: -a.median_speedup)
    return out


def profile_for(candidates: list[Measurement], base_key: str, batch_size: int | None) -> Measurement | None:
    """The profile a comparison reads for one (architecture, image size): those on the base GPU,
    else those on a GPU with a spec row, else any; among them the one whose batch is closest (by
    ratio) to the published base measurement's ``batch_size``, as ``visprof predict`` chooses
    (``predict.choose_profiles``): the profile least extrapolated. Ties: the last (newest)."""
    on_base = [m for m in candidates if m.gpu == base_key]
    with_spec = [m for m in candidates if m.gpu_id]
    pool = on_base or with_spec or candidates
    if not pool:
        return None
    from visprof.analysis.predict import batch_distance

    # min keeps the first of equals: over the reversed pool, the newest
    return min(reversed(pool), key=lambda m: batch_distance(m.batch_size, batch_size))


def base_time_over_predicted(published_samples_per_s: float | None, predicted_samples_per_s: float | None) -> float | None:
    """log of the base GPU's published time per sample over the time per sample a profile predicts
    there (both at the published batch); None without both."""
    if not published_samples_per_s or not predicted_samples_per_s or published_samples_per_s <= 0 \
            or predicted_samples_per_s <= 0:
        return None
    return math.log(predicted_samples_per_s / published_samples_per_s)


class OnBaseAndTarget(NamedTuple):
    """What a profile says of its model on a comparison's two GPUs (``on_base_and_target``)."""

    shares: dict[str, float]  # time by bound on the base GPU
    shares_from: str  # "measured on rtx3090" / "predicted from h200" ("" without a split)
    speedup: float | None = None  # base to target, from the roofline groups and the two spec rows
    band: tuple[float, float] | None = None  # predict.speedup_band
    base_samples_per_s: float | None = None  # the throughput the groups predict on the base GPU


def on_base_and_target(profile: Measurement, base: Measurement, base_spec: GpuSpec | None, target_spec: GpuSpec | None,
                       table: GpuTable, excess: str = "clock", gpu_time: bool = False) -> OnBaseAndTarget:
    """From ``profile``: its model's time by bound on the base GPU (measured there, else
    predicted), where that split comes from, the speed-up its roofline groups predict from
    base to target, at the base measurement's batch, with its band (``speedup_band``), and the
    throughput they predict on the base. One prediction per GPU serves all of them.
    ``excess``: ``predict.predict_group``'s. ``gpu_time``: the speed-up and band of GPU busy time
    (``compare(time="gpu")``), not of end-to-end time."""
    result = profile.result
    roof = result.roofline if result else None
    if roof is None or not roof.groups:
        return OnBaseAndTarget({}, "")
    measured = (dict(roof.shares), f"measured on {profile.gpu}") if roof.shares else ({}, "")
    if base_spec is None or profile.gpu_id is None or result.measurement != "gpu":
        return OnBaseAndTarget(*measured)
    from visprof.analysis.predict import predict_result, source_spec, speedup_band

    options = {"batch_size": base.batch_size, "table": table, "excess": excess,
               "precision": base.precision if base.precision in ("fp16", "bf16") else None}
    try:
        # the profile's GPU row, looked up once for both (GpuTable.find: a tenth of a comparison's predictions)
        options["source"] = source_spec(result, table)
        on_base = predict_result(result, base_spec, **options)
        on_target = predict_result(result, target_spec, **options) if target_spec else None
    except BadInputError:
        return OnBaseAndTarget(*measured)
    if on_target is None:
        speedup = None
    else:
        speedup = (on_base.busy_ms / on_target.busy_ms if gpu_time and on_target.busy_ms > 0
                   else on_target.samples_per_s / on_base.samples_per_s)
    band = speedup_band(on_base, on_target, gpu_time) if on_target else None
    split = measured if profile.gpu == base.gpu and roof.shares else (on_base.shares, f"predicted from {profile.gpu}")
    if gpu_time:  # busy time has no launch/host share: the split is of the kernels' time alone
        split = (_without_launch(split[0]), split[1])
    # the base throughput in the time the comparison divides, as its base measurement is
    base_rate = (on_base.batch_size / on_base.busy_ms * 1e3 if gpu_time and on_base.busy_ms > 0
                 else on_base.samples_per_s)
    return OnBaseAndTarget(*split, speedup, band, base_rate)


def _without_launch(shares: dict[str, float]) -> dict[str, float]:
    kernel = {bound: share for bound, share in shares.items() if bound != "launch"}
    total = sum(kernel.values())
    return {bound: share / total for bound, share in kernel.items()} if total > 0 else {}


def _unexplained(m: ModelComparison, bound: str, target_name: str, fp32_ratio: float) -> str:
    """What the sentence adds when the bounds do not account for the measured speed-up."""
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
        hint = (f": kernels below their roof gain from the {target_name}'s {fp32_ratio:.2f}x SMs x clock as well"
                if bound in ("memory", "unknown") and fp32_ratio > 1 + EXPLAINED_WITHIN else "")
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
    tensor_ratio = bandwidth_ratio = None
    if base and target:
        key = tensor_key(precision)
        tb, tt = (base.tensor_peak(key), target.tensor_peak(key)) if key else (None, None)
        tensor_ratio = tt / tb if tb and tt else None
        bandwidth_ratio = target.memory_bandwidth_gbs / base.memory_bandwidth_gbs
        fp32_ratio = target.fp32_tflops / base.fp32_tflops
    if not m.shares:
        # profiles join on the image size: another size's profile does not say why this one gains
        at = f" at {m.img_size} px" if m.img_size else ""
        tail = f"; no profile of it{at} to say why (profile it, or sweep it, on a GPU with a spec row)"
        if m.intensity is not None:
            tail = f"; no profile of it{at} (it does {m.intensity:.0f} MACs per activation)"
        return head + tail
    kernel = {b: v for b, v in m.shares.items() if b != "launch"}
    bound = max(kernel, key=kernel.get)
    where = m.shares_from.replace("measured on ", "measured on the ").replace("predicted from ", "predicted from the ")
    if profile_gpu_name and m.profile is not None:
        where = where.replace(f" the {m.profile.gpu}", f" the {profile_gpu_name}")
    what = f"{m.shares[bound]:.0%} of its {base_name} time is {BOUND_LABELS[bound]} bound ({where} profile)"
    if tensor_ratio is None:
        return f"{head}: {what}"
    # "but" or "less than" where the bound's resource gains less than the other; where it gains more
    # (the 5090's bandwidth, x1.78 of the 4090's against x1.27 tensor throughput), said so
    if bound == "tensor":
        why = (f"and the {target_name} has {tensor_ratio:.2f}x the {base_name}'s tensor throughput but "
               f"{bandwidth_ratio:.2f}x its bandwidth" if tensor_ratio >= bandwidth_ratio else
               f"and the {target_name} has {tensor_ratio:.2f}x the {base_name}'s tensor throughput, less than its "
               f"{bandwidth_ratio:.2f}x bandwidth")
    elif bound == "memory":
        # The predictor keeps the share of activations the target's L2 holds off DRAM: a larger
        # L2 (the 4090's 72 MB against the 3090's 6 MB) is part of why memory-bound work gains.
        l2 = (f", {target.l2_mb / base.l2_mb:.1f}x its L2" if base.l2_mb and target.l2_mb
              and abs(target.l2_mb / base.l2_mb - 1) >= 0.25 else "")
        why = (f"and the {target_name} has {bandwidth_ratio:.2f}x the {base_name}'s bandwidth, less than its "
               f"{tensor_ratio:.2f}x tensor throughput{l2}" if bandwidth_ratio < tensor_ratio else
               f"and the {target_name} has {bandwidth_ratio:.2f}x the {base_name}'s bandwidth, more than its "
               f"{tensor_ratio:.2f}x tensor throughput{l2}")
    elif bound == "compute":
        why = f"and the {target_name} has {fp32_ratio:.2f}x the {base_name}'s FP32 throughput, {bandwidth_ratio:.2f}x its bandwidth"
    else:
        why = f"(ops without recorded bytes); the {target_name} has {tensor_ratio:.2f}x the tensor throughput, {bandwidth_ratio:.2f}x the bandwidth"
    launch = m.shares.get("launch", 0.0)
    extra = f"; {launch:.0%} is launch/host time, which no GPU speeds up" if launch >= 0.10 else ""
    if m.predicted_speedup:
        extra += _unexplained(m, bound, target_name, fp32_ratio)
    return f"{head}: {what}, {why}{extra}"


def compare(measurements: list[Measurement], base: str | None = None, target: str | None = None,
            table: GpuTable | None = None, time: str = END_TO_END,
            on_progress: Callable[[str], None] | None = None) -> Comparison:
    """``time``: END_TO_END (throughput as measured or published) or GPU (profiles only, each
    at its timing pass's GPU busy time: ``visprof.analysis.time_basis``). ``on_progress`` (e.g.
    ``visprof.base.progress.Progress.update``) is told after each model how many are joined: each
    profiled one is predicted on both GPUs, about 10 s for 1,500 profiles."""
    # time="GPU" had run end to end, and the comparison then said time "GPU"; the CLI offers only these
    if time not in TIME_BASES:
        raise BadInputError(f"time must be one of {', '.join(map(repr, TIME_BASES))}, got {time!r}")
    check_callback(on_progress)
    measurements = _measurement_list(measurements)
    table = table_or_default(table)
    measurements, host_clock = without_cpu_results(measurements)
    left_out = 0
    if time == GPU:
        measurements, left_out = on_gpu_time(measurements)
        if not measurements:
            raise BadInputError(f"{option('time', GPU)} compares visprof profiles' GPU busy time, and none of the "
                                f"inputs is such a profile ({left_out} published or untimed measurement(s) have no "
                                "GPU time)")
    measurements = [m for m in measurements if m.samples_per_s]
    try:
        base_key, target_key = pick_gpus(measurements, base, target, table)
    except BadInputError as exc:  # the CPU results were inputs too: say why they do not count
        if not host_clock:
            raise
        raise BadInputError(f"{exc} ({cpu_results_note(host_clock)})") from None
    by_gpu: dict[str, dict[tuple, list[Measurement]]] = {base_key: defaultdict(list), target_key: defaultdict(list)}
    profiles: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in measurements:
        if m.gpu in by_gpu:
            by_gpu[m.gpu][(m.arch, m.img_size)].append(m)
        if m.result is not None:
            profiles[(m.arch, m.img_size)].append(m)
    base_spec, target_spec = table.find(base_key), table.find(target_key)
    models = []
    for key in by_gpu[base_key]:
        if key not in by_gpu[target_key]:
            continue
        a, b = _best_pair(by_gpu[base_key][key], by_gpu[target_key][key])
        models.append(ModelComparison(model=a.model, img_size=key[1], family=family(a.model), base=a, target=b,
                                      speedup=b.samples_per_s / a.samples_per_s))
    if not models:
        raise BadInputError(f"no model was measured on both {base_key} and {target_key} at the same image size")
    median = statistics.median(m.speedup for m in models)
    base_name = base_spec.short_name if base_spec else base_key
    target_name = target_spec.short_name if target_spec else target_key
    for m in counted(models, len(models), "models", on_progress):
        m.sensitivity = m.speedup / median - 1
        m.profile = profile = profile_for(profiles.get((m.base.arch, m.img_size), []), base_key, m.base.batch_size)
        if profile is not None:
            m.dominant_category = dominant_category(profile.result)
            on = on_base_and_target(profile, m.base, base_spec, target_spec, table, gpu_time=time == GPU)
            m.shares, m.shares_from, m.predicted_speedup, m.predicted_band = on.shares, on.shares_from, on.speedup, on.band
            m.predicted_base_samples_per_s = on.base_samples_per_s
        profile_spec = table.find(profile.gpu) if profile is not None else None
        m.explanation = explain(m, median, base_spec, target_spec, base_name, target_name, m.base.precision,
                                profile_spec.short_name if profile_spec else None)
    models.sort(key=lambda m: -m.sensitivity)
    unmatched = {k: len(set(by_gpu[k]) - set(by_gpu[o])) for k, o in ((base_key, target_key), (target_key, base_key))}
    base_only = {key: max(rows, key=lambda m: m.kind == "reference") for key, rows in by_gpu[base_key].items()
                 if key not in by_gpu[target_key]}
    notes = [cpu_results_note(host_clock)] if host_clock else []
    if time == GPU:
        notes.append("speed-ups of GPU busy time per sample (each profile's timing pass; the GPU's idle time left out)"
                     + (f"; {left_out} measurement(s) without one left out (published rows have no GPU time)"
                        if left_out else ""))
    host = host_note((m.base, m.target) for m in models) if time != GPU else None
    if host:
        notes.append(host)
    mixed = sum(1 for m in models if m.base.kind != m.target.kind)
    if mixed:
        notes.append(f"{mixed} model(s) compare a visprof profile with a reference measurement (different loops and settings)")
    disagreeing = disagreeing_rows_note(models, by_gpu[base_key], by_gpu[target_key], base_name, target_name)
    if disagreeing:
        notes.append(disagreeing)
    precisions = precision_note(models, base_name, target_name)
    if precisions:
        notes.append(precisions)
    software = software_note(models, base_name, target_name)
    if software:
        notes.append(software)
    paths = path_change_note(witness_path_changes(models, base_spec, target_spec, base_name, target_name),
                             base_name, target_name)
    if paths:
        notes.append(paths)
    implausible = implausible_note(models, base_name, target_name)
    if implausible:
        notes.append(implausible)
    prediction = PredictionAgreement.of(models)
    if prediction:
        notes.append(prediction.sentence())
    return Comparison(base_key, target_key, base_spec, target_spec, models, median, time=time,
                      by_family=_aggregate(models, lambda m: m.family),
                      by_category=_aggregate(models, lambda m: m.dominant_category or "(no profile)"),
                      by_bound=_aggregate(models, lambda m: _dominant_bound(m.shares) or "(no profile)"),
                      unmatched=unmatched, notes=notes, prediction=prediction, software=software, paths=paths, host=host,
                      cpu_results=cpu_results_note(host_clock) if host_clock else None,
                      implausible=implausible,
                      base_name=base_name, target_name=target_name, base_only=base_only)


def _measurement_list(given) -> list[Measurement]:
    """``given`` as a list of Measurements; anything else (what sources.load returns, a path, ProfileResults)
    had failed deep inside with an AttributeError or a TypeError."""
    items = list(given) if isinstance(given, Iterable) and not isinstance(given, (str, bytes, Loaded)) else None
    wrong = given if items is None else next((item for item in items if not isinstance(item, Measurement)), None)
    if items is None or wrong is not None:
        what = f"a {type(wrong).__name__}" + (" in the list" if items is not None else "")
        remedy = ": pass its .measurements" if isinstance(given, Loaded) else ""
        raise BadInputError(f"compare takes a list of measurements (sources.load(paths).measurements), got {what}{remedy}")
    return items


def without_cpu_results(measurements: list[Measurement]) -> tuple[list[Measurement], int]:
    """The measurements less the CPU results, and how many those were. A CPU result's times are
    host-clock: not a GPU's throughput, and its category breakdown is not a GPU's (casts and layout
    ops weigh differently), so it must not give a model its dominant category (predict refuses
    them too)."""
    kept = [m for m in measurements if not m.host_clock]
    return kept, len(measurements) - len(kept)


def cpu_results_note(count: int) -> str:
    return f"{count} CPU result(s) left out: their times are host-clock, not a GPU's"


def tensor_key(precision: str | None) -> str | None:
    """The tensor-core rate a comparison at ``precision`` quotes: its own for fp16, bf16 and TF32,
    none for fp32 (the FP32 units run it; an fp32 table had been explained by the fp16 ratio), and
    fp16 where the precision is not known (timm's tables are mostly amp)."""
    if precision in ("fp16", "bf16", "tf32"):
        return precision
    return None if precision == "fp32" else "fp16"


def precision_note(models: list[ModelComparison], base_name: str, target_name: str) -> str | None:
    """A warning where the two GPUs' numbers of some models were measured at different precisions:
    their speed-ups carry the change of precision as well as the GPUs'."""
    pairs = Counter((m.base.precision, m.target.precision) for m in models
                    if m.base.precision and m.target.precision and m.base.precision != m.target.precision)
    if not pairs:
        return None
    (base_p, target_p), _ = pairs.most_common(1)[0]
    return (f"{sum(pairs.values())} model(s) compare numbers of two precisions (e.g. the {base_name} at {base_p}, "
            f"the {target_name} at {target_p}): their speed-ups carry the change of precision as well as the GPUs'")


# How far the median measured speed-up may sit from the median the spec ratios predict before the
# tables, not the GPUs, are the likelier cause: on timm's published pairs it is x0.97 (3090 -> 4090,
# 1,424 profiled models) and x0.98 (4090 -> 5090, 1,579) of it; a table in ms per batch read as
# samples/s inverts the speed-up and scales it by the batch.
IMPLAUSIBLE_FACTOR = 4.0


def implausible_note(models: list[ModelComparison], base_name: str, target_name: str) -> str | None:
    """Where the speed-ups say a table is wrong: every model exactly x1.000 (one file imported for
    both GPUs), or the median far from what the spec ratios predict (a column's units: ms per
    batch, not samples/s). Nothing is refused: the user's numbers may be right."""
    published = [m for m in models if m.speedup and math.isfinite(m.speedup)]
    if len(published) >= 2 and all(abs(m.speedup - 1.0) < 1e-9 for m in published):
        return (f"every model's published speed-up from {base_name} to {target_name} is exactly x1.000: the two GPUs' "
                f"numbers are the same (one table imported for both?)")
    pairs = [(m.speedup, m.predicted_speedup) for m in published if m.predicted_speedup]
    if len(pairs) < 2:
        return None
    measured = statistics.median(s for s, _ in pairs)
    predicted = statistics.median(p for _, p in pairs)
    if 1 / IMPLAUSIBLE_FACTOR <= measured / predicted <= IMPLAUSIBLE_FACTOR:
        return None
    return (f"the median published speed-up from {base_name} to {target_name} is x{measured:.3g} where the spec ratios "
            f"predict x{predicted:.3g} for the same models: check the tables' units (samples per second, not ms per "
            f"batch) and which GPU each table is")


def software_note(models: list[ModelComparison], base_name: str, target_name: str) -> str | None:
    """A warning where one GPU's compared rows mix PyTorch versions, or where most of the base GPU's
    numbers and most of the target's were measured under different versions (as the sources record
    them); None where they agree or either is not known. A CUDA version alone is not warned of: a
    new GPU needs a newer one (the 5090 CUDA 12.8 or later), and timm's tables cannot tell its
    effect from the GPU's."""
    def usual(values) -> str | None:
        known = Counter(v for v in values if v)
        return known.most_common(1)[0][0] if known else None

    # one GPU's rows under two versions (its tables of two timm releases given together): each
    # model's row is the one matching the other side best, so its speed-up may take either
    mixed = []
    for side, name in (("base", base_name), ("target", target_name)):
        counts = Counter(getattr(m, side).torch for m in models if getattr(m, side).torch)
        if len(counts) > 1:
            mix = ", ".join(f"{n} under torch {v}" for v, n in counts.most_common())
            mixed.append(f"the {name} rows mix PyTorch versions ({mix}): each model's row is the one under the other "
                         f"GPU's version where there is one, so the speed-ups mix software versions; give one table "
                         f"per GPU")
    base_torch, target_torch = usual(m.base.torch for m in models), usual(m.target.torch for m in models)
    if not base_torch or not target_torch or base_torch == target_torch:
        return "; ".join(mixed) or None
    base_sw = usual(m.base.software for m in models if m.base.torch == base_torch)
    target_sw = usual(m.target.software for m in models if m.target.torch == target_torch)
    # bench/results/software-rows-2026-12-04: timm's RTX 4090 under torch 2.4.0 and 2.9.1 moved 206 of
    # 1,198 rows by more than 5%; fitted on 3090 (2.4.0) -> 5090 (2.9.1), the calibration fell behind
    # the spec-only model, and ahead of it again with those rows left out; fitted by Huber's loss it is
    # nearer, still behind (5.5% against 5.2%, bench/results/robust-fit-2026-12-05).
    return (f"the {base_name} numbers were measured under {base_sw} and the {target_name}'s under {target_sw}: "
            f"the speed-ups carry the software's change as well as the GPUs', which no profile sees (on timm's "
            f"tables one GPU under torch 2.4 and 2.9.1 moved 1 model in 6 by more than 5%); a calibration fitted "
            f"on them is noisier (docs/hardware-sensitivity.md)" + "".join(f"; {m}" for m in mixed))


def witness_path_changes(models: list[ModelComparison], base_spec: GpuSpec | None, target_spec: GpuSpec | None,
                         base_name: str, target_name: str) -> list[tuple[str, PathChange]]:
    """Sets ``path_change`` on the models whose two published batches (timm's tables: a batch decays
    on failure from the table's first) no single memory footprint per sample explains, and says so at
    the end of their explanation; returns them, named with their size."""
    published = [m for m in models if m.base.kind == "reference" and m.target.kind == "reference"]
    if not (published and base_spec and target_spec):
        return []
    base_batches = [m.base.batch_size for m in published if m.base.batch_size]
    target_batches = [m.target.batch_size for m in published if m.target.batch_size]
    if not (base_batches and target_batches):
        return []
    base_start, target_start = max(base_batches), max(target_batches)
    if not (decays_from(base_batches, base_start) and decays_from(target_batches, target_start)):
        return []
    changed = []
    for m in published:
        m.path_change = path_change(m.base.batch_size, m.target.batch_size, base_start, target_start,
                                    base_spec.memory_gb, target_spec.memory_gb)
        if m.path_change:
            m.explanation += f"; {m.path_change.clause(base_name, target_name)}"
            changed.append((f"{m.model} at {m.img_size}px" if m.img_size else m.model, m.path_change))
    return changed


def _dominant_bound(shares: dict[str, float]) -> str | None:
    kernel = {b: v for b, v in shares.items() if b != "launch"}
    return max(kernel, key=kernel.get) if kernel else None


__all__ = ["Aggregate", "Comparison", "ModelComparison", "OnBaseAndTarget", "PredictionAgreement", "base_time_over_predicted", "on_base_and_target", "profile_for", "busiest_pair", "compare", "explain", "gpu_keys",
           "pick_gpus", "witness_path_changes"]
