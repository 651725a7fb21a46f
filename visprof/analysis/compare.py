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

import statistics
from collections import defaultdict
from typing import Callable, Iterable, NamedTuple

from visprof.analysis.batch_witness import path_change_note
from visprof.analysis.compare_explain import explain
from visprof.analysis.compare_notes import (batch_note, cpu_results_note, disagreeing_rows_note, implausible_note,
                                            other_sizes_note, other_tags_note, precision_note, profile_precision_note,
                                            software_note, witness_path_changes)
from visprof.analysis.comparison import Aggregate, Comparison, ModelComparison, PredictionAgreement
from visprof.analysis.families import family
from visprof.analysis.gpus import GpuSpec, GpuTable, more_gpus, normalize_name, table_or_default
from visprof.analysis.time_basis import END_TO_END, GPU, TIME_BASES, host_note, on_gpu_time
from visprof.analysis.roofline import dominant_category
from visprof.analysis.sources import Loaded, Measurement
from visprof.base.errors import BadInputError
from visprof.base.progress import check_callback, counted
from visprof.base.spelling import option


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


def _names_it(name: str, key: str) -> bool:
    """``name`` is the device name ``key`` or its last words (``3080`` or ``rtx3080`` for ``NVIDIA GeForce RTX
    3080``): the alias a user's --gpus row gave at import, asked for later without that file."""
    words = key.split()
    return any(normalize_name(" ".join(words[i:])) == normalize_name(name) for i in range(len(words)))


def _resolve(name: str | None, keys: list[str], table: GpuTable) -> str:
    spec = table.find(name) if name else None
    for key in keys:
        if key == name or (spec is not None and key == spec.id):
            return key
    # A GPU without a spec row keeps its device name as its key ("NVIDIA GeForce RTX 9090"): asked
    # for as rtx9090, it had been "no measurements on GPU 'rtx9090'" with that very GPU listed.
    unrowed = [key for key in keys if name and table.find(key) is None and _names_it(name, key)]
    if unrowed:
        raise BadInputError(f"GPU {name!r} is {unrowed[0]!r} in the inputs, which has no row in the GPU spec table: "
                            f"give its row with {more_gpus()} (predictions and their sentences need it), or name it "
                            f"{unrowed[0]!r}")
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
    ``excess``: ``group_scaling.predict_group``'s. ``gpu_time``: the speed-up and band of GPU busy time
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
    tags = other_tags_note(models, by_gpu[base_key], by_gpu[target_key], base_name, target_name)
    if tags:
        notes.append(tags)
    for note in (other_sizes_note(models, profiles), precision_note(models, base_name, target_name),
                 profile_precision_note(models, base_name), batch_note(models, base_name, target_name)):
        if note:
            notes.append(note)
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


def _dominant_bound(shares: dict[str, float]) -> str | None:
    kernel = {b: v for b, v in shares.items() if b != "launch"}
    return max(kernel, key=kernel.get) if kernel else None


__all__ = ["OnBaseAndTarget", "busiest_pair", "compare", "gpu_keys", "on_base_and_target",
           "pick_gpus", "profile_for", "without_cpu_results"]
