"""A spec-only variant anchored on the base GPU's published throughput, on both published pairs.

    python bench/anchored_spec_variant.py --pair /tmp/pair1.db rtx3090 rtx4090 \\
        --pair /tmp/pair2.db rtx4090 rtx5090 --store /tmp/profiles.db

A spec-only prediction may use the base GPU's published numbers, only not the target's. Here the
profile's groups are predicted on the base (`excess="fraction"`) at the published batch and scaled
together so that they add up to the published base latency; each group's time on the base is then
split as `fraction` splits a measured time (its roofline share scales with the roof's resource, the
rest with the clock) from the base to the target. Printed per pair, over every model with a profile
and both published rows: Spearman, median abs. error and median signed error of the speed-up, for
it and for the committed spec model, against the fleet median's error; and how far the published
base latency is from the one `fraction` predicts there (the anchor's scale). Nothing is fitted.
"""
from __future__ import annotations

import dataclasses
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from visprof.analysis import sources
from visprof.analysis.compare import compare, profile_for
from visprof.analysis.gpus import GpuSpec, GpuTable, gpu_table
from visprof.analysis.metrics import spearman
from visprof.analysis.group_scaling import default_rate_scaling, predict_group
from visprof.analysis.predict import predict_result
from visprof.base.errors import BadInputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import per_pair_main  # noqa: E402


def anchored_speedup(result, base_latency_ms: float, batch: int, base: GpuSpec, target: GpuSpec, table: GpuTable,
                     precision: str | None = None) -> float | None:
    """Target over base throughput of ``result``'s model at ``batch``, its base latency ``base_latency_ms``."""
    on_base = predict_result(result, base, batch_size=batch, table=table, excess="fraction", precision=precision)
    return anchored_from(on_base, result, base_latency_ms, batch, base, target, precision)


def anchored_from(on_base, result, base_latency_ms: float, batch: int, base: GpuSpec, target: GpuSpec,
                  precision: str | None = None) -> float | None:
    """``anchored_speedup`` from the profile's ``fraction`` prediction on the base, ``on_base``."""
    kernel = sum(p.time_ms for p in on_base.groups)
    if kernel <= 0 or on_base.latency_ms <= 0 or base_latency_ms <= 0:
        return None
    # every part of the prediction scaled by one factor, so that they add up to the published latency
    k = base_latency_ms / on_base.latency_ms
    overlap = on_base.busy_ms / kernel  # as predict_result applies it: to the groups' sum
    scale = batch / (result.model.batch_size or 1)
    busy = 0.0
    for p in on_base.groups:
        g = p.group
        activations = max(g.bytes - g.param_bytes, 0.0)
        at_batch = dataclasses.replace(g, time_ms=p.time_ms * k, helper_ms=p.helper_ms * k,
                                       flops=g.flops * scale, bytes=activations * scale + g.param_bytes)
        busy += overlap * predict_group(at_batch, base, target, 1.0, precision, None, "fraction",
                                        default_rate_scaling(base, target)).time_ms
    # the host's gaps shrink as the GPU's work grows (predict._busy_and_idle's rule)
    idle = on_base.idle_ms * k * min(1.0, on_base.busy_ms * k / busy) if busy > 0 else 0.0
    on_target = busy + idle
    return base_latency_ms / on_target if on_target > 0 else None


def run_pair(refs: Path, base: str, target: str, store: Path) -> str:
    table = gpu_table()
    loaded = sources.load([refs, store], table)
    comparison = compare(loaded.measurements, base, target, table)
    by_key = defaultdict(list)
    for m in loaded.profiles:
        if m.result is not None:
            by_key[(m.arch, m.img_size)].append(m)
    published, committed, anchored, base_ratio = [], [], [], []
    for mc in comparison.models:
        chosen = profile_for(by_key.get((mc.base.arch, mc.img_size), []), comparison.base, mc.base.batch_size)
        if chosen is None or mc.predicted_speedup is None or not mc.base.samples_per_s:
            continue
        precision = mc.base.precision if mc.base.precision in ("fp16", "bf16") else None
        latency = mc.base.batch_size / mc.base.samples_per_s * 1e3
        try:
            on_base = predict_result(chosen.result, comparison.base_spec, batch_size=mc.base.batch_size, table=table,
                                     excess="fraction", precision=precision)
        except BadInputError:
            continue
        value = anchored_from(on_base, chosen.result, latency, mc.base.batch_size, comparison.base_spec,
                              comparison.target_spec, precision)
        if value:
            published.append(mc.speedup)
            committed.append(mc.predicted_speedup)
            anchored.append(value)
            base_ratio.append(latency / on_base.latency_ms)
    pub = np.array(published)
    median = float(np.median(pub))
    q1, q2, q3 = np.percentile(base_ratio, [25, 50, 75])
    lines = [f"{base} -> {target}: {len(pub)} models; the fleet median x{median:.3f} errs by "
             f"{np.median(np.abs(median / pub - 1)):.2%}; published over `fraction`-predicted latency on the "
             f"{base}: median x{q2:.3f}, quartiles x{q1:.3f}-x{q3:.3f}"]
    for name, values in (("spec only (committed clock)", committed), ("anchored on the base", anchored)):
        p = np.array(values)
        lines.append(f"  {name:28} Spearman {spearman(p, pub):.3f}  median |err| {np.median(np.abs(p / pub - 1)):.2%}  "
                     f"signed {np.median(p / pub - 1):+.2%}")
    return "\n".join(lines)


def main(argv=None) -> int:
    return per_pair_main(argv, __doc__, "anchored_spec_variant.py", run_pair)


if __name__ == "__main__":
    sys.exit(main())
