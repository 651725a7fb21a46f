"""The notes a comparison carries about its inputs, not its GPUs: rows that disagree, two
precisions or software versions, implausible tables, CPU results left out, and published runs
whose batches say they took different paths (``batch_witness``). Each returns None (or nothing)
where there is nothing to say; none refuses: the user's numbers may be right.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Mapping

from visprof.analysis.batch_witness import PathChange, decays_from, path_change
from visprof.analysis.comparison import ModelComparison
from visprof.analysis.gpus import GpuSpec
from visprof.analysis.sources import Measurement


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


def other_tags_note(models: list[ModelComparison], base_rows: Mapping[tuple, list], target_rows: Mapping[tuple, list],
                    base_name: str, target_name: str) -> str | None:
    """A note where a GPU holds rows of a compared architecture and size under another pretrained tag
    (resnet50.a1_in1k beside resnet50.tv_in1k): the join drops the tag and compares one pair, and the
    other tag's row had disappeared without a count (within DISAGREEING_ROWS of the one compared, no
    warning said so)."""
    left_out = []
    for m in models:
        key = (m.base.arch, m.img_size)
        for chosen, pool, name in ((m.base, base_rows[key], base_name), (m.target, target_rows[key], target_name)):
            left_out += [(other, chosen, name) for other in pool if other.model != chosen.model]
    if not left_out:
        return None
    other, chosen, name = left_out[0]
    return (f"{len(left_out)} row(s) of a compared architecture under another pretrained tag left out (e.g. "
            f"{other.model} @{chosen.img_size} on the {name}, where {chosen.model} was compared): the join drops the "
            "tag and compares one pair per architecture and size, the one whose precision, software, layout and "
            "batch agree best; give one row per architecture and size to choose")


def other_sizes_note(models: list[ModelComparison], profiles: Mapping[tuple, list]) -> str | None:
    """A note where compared models have no profile at their published image size but one at another:
    they get no predicted speed-up, and calibrate had said "0 model(s) have a profile" of a table whose 40
    models were all profiled, at 224 where the table gave 256."""
    sizes: dict[str, set] = {}
    for arch, size in profiles:
        sizes.setdefault(arch, set()).add(size)
    elsewhere = [(m, sorted(s for s in sizes[m.base.arch] if s is not None)) for m in models
                 if m.profile is None and m.base.arch in sizes]
    if not elsewhere:
        return None
    m, other = elsewhere[0]
    return (f"{len(elsewhere)} compared model(s) have profiles only at other image sizes than the published rows "
            f"(e.g. {m.model}: published at {m.img_size}, profiled at {', '.join(map(str, other)) or 'its default'}): "
            "they have no predicted speed-up; profile them at the published sizes")


def cpu_results_note(count: int) -> str:
    return f"{count} CPU result(s) left out: their times are host-clock, not a GPU's"


def _two_settings(models: list[ModelComparison], setting: str) -> tuple[int, tuple] | None:
    """How many models' two numbers differ in ``setting`` (a Measurement field), and the most common
    (base, target) pair of values; None where none do."""
    pairs = Counter((getattr(m.base, setting), getattr(m.target, setting)) for m in models
                    if getattr(m.base, setting) and getattr(m.target, setting)
                    and getattr(m.base, setting) != getattr(m.target, setting))
    return (sum(pairs.values()), pairs.most_common(1)[0][0]) if pairs else None


def precision_note(models: list[ModelComparison], base_name: str, target_name: str) -> str | None:
    """A warning where the two GPUs' numbers of some models were measured at different precisions:
    their speed-ups carry the change of precision as well as the GPUs'."""
    found = _two_settings(models, "precision")
    if found is None:
        return None
    count, (base_p, target_p) = found
    return (f"{count} model(s) compare numbers of two precisions (e.g. the {base_name} at {base_p}, "
            f"the {target_name} at {target_p}): their speed-ups carry the change of precision as well as the GPUs'")


def batch_note(models: list[ModelComparison], base_name: str, target_name: str) -> str | None:
    """Where a model's two numbers ran at different batches (timm's benchmark halves the batch on
    an out-of-memory error; a user's tables may simply differ): its speed-up carries the change of
    batch too, and its prediction is at the base GPU's batch. Said as the precision's is."""
    found = _two_settings(models, "batch_size")
    if found is None:
        return None
    count, (base_b, target_b) = found
    return (f"{count} model(s) compare numbers at two batch sizes (e.g. the {base_name} at {base_b}, the "
            f"{target_name} at {target_b}): their speed-ups carry the change of batch as well as the GPUs', and their "
            f"predictions are at the {base_name}'s batch")


def _precision_kind(precision: str | None) -> str | None:
    """fp16 and bf16 are one kind to the predictor (same bytes, tensor-core rates): it predicts a
    16-bit profile at either, but not at fp32 or tf32."""
    return "16-bit" if precision in ("fp16", "bf16") else precision


def profile_precision_note(models: list[ModelComparison], base_name: str) -> str | None:
    """Where the predictions come from profiles of another precision than the published numbers
    (an fp32 table explained by bf16 profiles): the predicted speed-ups and their sentences are of
    the profile's precision, not the table's. They had been given with no word of it."""
    pairs = Counter((m.profile.precision, m.base.precision) for m in models
                    if m.predicted_speedup is not None and m.profile is not None and m.profile.precision
                    and m.base.precision and _precision_kind(m.profile.precision) != _precision_kind(m.base.precision))
    if not pairs:
        return None
    (profiled, published), _ = pairs.most_common(1)[0]
    return (f"{sum(pairs.values())} model(s) are predicted from profiles at another precision than the published "
            f"numbers (e.g. profiled at {profiled}, the {base_name} at {published}): their predicted speed-ups and "
            f"sentences are of {profiled} runs; profile them at {published} to predict the tables' runs")


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


__all__ = ["batch_note", "cpu_results_note", "disagreeing_rows_note", "implausible_note", "other_sizes_note",
           "precision_note", "profile_precision_note", "software_note", "witness_path_changes"]
