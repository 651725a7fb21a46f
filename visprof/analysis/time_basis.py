"""Which time a speed-up between two GPUs divides: end to end, or the GPU's busy time.

A published table has one number per model, its end-to-end throughput, and that is what
``compare`` joins by default. Two visprof profiles have more: the timing pass's GPU busy time
per iteration (the union of kernel intervals), which leaves out the time the GPU sat idle
waiting for the host. Between two machines the host moves a launch-bound model's latency far
more than the GPU does: 116 models profiled on an H200 and an H100 differ by x0.84-0.98 in
GPU busy time and by x0.44-1.33 end to end (bench/results/h100-transfer-2026-12-05/). So
``--time gpu`` compares the GPUs, and ``host_note`` says when an end-to-end comparison of
profiles carries the hosts too.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from visprof.analysis.predict import HOST_BOUND_IDLE, idle_share
from visprof.analysis.sources import Measurement
from visprof.base.options import TIME_BASES, TIME_END_TO_END as END_TO_END, TIME_GPU as GPU
from visprof.base.spelling import option


def gpu_samples_per_s(m: Measurement) -> float | None:
    """Samples per second of GPU busy time: a profile's batch over its timing pass's busy time
    per iteration; None for a published row or a profile without it."""
    timing = m.result.timing if m.result is not None else None
    if timing is None or not timing.busy_ms or timing.busy_ms <= 0 or not m.batch_size:
        return None
    return m.batch_size / timing.busy_ms * 1e3


def on_gpu_time(measurements: Iterable[Measurement]) -> tuple[list[Measurement], int]:
    """The profiles among ``measurements``, each with its throughput in GPU busy time, and how many
    measurements were left out (published rows and profiles without a timing pass)."""
    kept, left = [], 0
    for m in measurements:
        rate = gpu_samples_per_s(m)
        if rate is None:
            left += m.samples_per_s is not None
            continue
        kept.append(replace(m, samples_per_s=rate))
    return kept, left


def host_note(pairs: Iterable[tuple[Measurement, Measurement]]) -> str | None:
    """A note where an end-to-end comparison joins two profiles of which one left its GPU idle
    more than HOST_BOUND_IDLE of an iteration: their speed-up carries the two hosts as well."""
    profiled = [(a, b) for a, b in pairs if a.result is not None and b.result is not None]
    host_bound = [a.model for a, b in profiled
                  if max(idle_share(a.result.timing) or 0.0, idle_share(b.result.timing) or 0.0) > HOST_BOUND_IDLE]
    if not host_bound:
        return None
    return (f"{len(host_bound)} of the {len(profiled)} model(s) profiled on both GPUs left the GPU idle more than "
            f"{HOST_BOUND_IDLE:.0%} of an iteration on one of them (e.g. {', '.join(host_bound[:3])}): their end-to-end "
            f"speed-ups carry the two hosts as well as the GPUs; {option('time', GPU)} compares GPU busy time")


__all__ = ["END_TO_END", "GPU", "TIME_BASES", "gpu_samples_per_s", "host_note", "on_gpu_time"]
