"""The kernels one forward launches, in order, and how two passes' sequences compare.

The attributed pass must run what the clean passes run. Two things about kernel *durations*
differ between passes without the work differing (measured on the H200,
bench/results/h200-checks-2026-12-01):

* launch pattern: launched back to back, a kernel can start before the one ahead of it ends
  (Hopper's programmatic dependent launch in cuBLAS/cuDNN kernels, kernels on side streams):
  its duration then includes the wait. PiT-S's tracer-only pass sums 5.74 ms of kernel time
  in 4.81 ms of busy GPU time; the attributed pass, whose op capture spaces launches, 5.17 ms.
* clock: under the power limit a large model's SM clock wanders between passes (ViT-L/16
  SigLIP: 1710 MHz in the tracer-only pass, 1890 in the attributed one, kernel time -5.9%;
  the same passes again, both at 1890 MHz: -0.2%). Splitting the tracer-only iterations
  before and after the attributed pass cancels slow drift, not wandering: of 300 models swept
  on 2026-12-01, three ViT-L/H failed the check at -2.5 to -3.4% with the same kernels, and
  again on 2026-12-03 one round read 1832 MHz (NVML, sampled every 10 ms) in the tracer-only
  pass against 1947 in the attributed one, kernel time -3.5%; the next round, 1951 vs 1960
  MHz: -0.2% (bench/results/h200-checks-2026-12-03).
* slow iterations: at the power limit a few iterations of a pass can run much slower than the
  rest. vit_base_patch8_224 (2026-12-03, "sw_power_cap", SM clock 1455-1980 MHz over the run):
  the tracer-only iterations' median busy time was 29.89 ms while their mean kernel time was
  at least 31.61 ms, and the attributed pass's 30.37 ms failed against that mean
  (bench/results/h200-optypes557-2026-12-03).

So the self-checks compare what ran (every kernel name, count per iteration) exactly, and
the durations of kernels that overlapped nothing in either pass, with the tracer-only
iterations split before and after the attributed pass, at the clock each pass ran at: the
same kernels at another clock take between the same time (bound by memory, whose clock does
not move) and the time scaled by the SM clock ratio (bound by the SMs). The tolerance applies
around that range; with equal clocks, or no clock reading, the range is the reference alone.
Each pass's figure is the median over its iterations of their summed kernel time, as the
timing pass reports latency, so that a slow iteration moves neither.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from visprof.native.records import KIND_KERNEL
from visprof.result import Check

__all__ = ["KernelSequence", "sequence_of", "launch_difference", "isolated_time_ms", "kernel_time_check",
           "KERNEL_TIME_TOLERANCE"]

KERNEL_TIME_TOLERANCE = 0.02


@dataclass
class KernelSequence:
    """One pass's kernels per iteration, in launch order: names, each kept iteration's
    durations, and whether the kernel overlapped a neighbour in any iteration."""

    names: list[str] = field(default_factory=list)
    overlapped: list[bool] = field(default_factory=list)
    iteration_ns: list[np.ndarray] = field(default_factory=list)  # per kept iteration, a duration per kernel
    # iterations whose sequence differed from the first (data-dependent code): not kept
    differing: int = 0

    @property
    def iterations(self) -> int:
        return len(self.iteration_ns)

    @property
    def duration_ns(self) -> list[float]:
        """Each kernel's mean duration over the kept iterations."""
        return [float(d) for d in np.mean(self.iteration_ns, axis=0)] if self.iteration_ns else []


def sequence_of(per_iteration: list[np.ndarray], kernel_names: list[str]) -> KernelSequence:
    """The sequence from kernel rows split by iteration (``rows_by_iteration``)."""
    seq = KernelSequence()
    for rows in per_iteration:
        rows = rows[rows["kind"] == KIND_KERNEL]
        rows = rows[np.argsort(rows["start_ns"], kind="stable")]
        names = [kernel_names[int(i)] if 0 <= int(i) < len(kernel_names) else "?" for i in rows["name_id"]]
        start, end = rows["start_ns"].astype(np.int64), rows["end_ns"].astype(np.int64)
        ends_before = np.maximum.accumulate(end)  # the latest end of any earlier kernel
        overlap = np.zeros(len(rows), dtype=bool)
        if len(rows) > 1:
            overlap[1:] = start[1:] < ends_before[:-1]
            overlap[:-1] |= overlap[1:]  # both kernels of an overlapping pair
        if not seq.iterations:
            seq.names, seq.overlapped = names, [False] * len(names)
        elif names != seq.names:
            seq.differing += 1
            continue
        seq.iteration_ns.append((end - start).astype(np.float64))
        seq.overlapped = [a or bool(b) for a, b in zip(seq.overlapped, overlap)]
    return seq


def merged(a: KernelSequence, b: KernelSequence) -> KernelSequence:
    """Two runs of the same pass (before and after another) as one: their iterations together."""
    if not a.iterations or a.names != b.names:
        return a if a.iterations else b
    return KernelSequence(a.names, [x or y for x, y in zip(a.overlapped, b.overlapped)],
                          a.iteration_ns + b.iteration_ns, a.differing + b.differing)


def launch_difference(attributed: KernelSequence, reference: KernelSequence) -> int:
    """Kernel launches per iteration that one pass made and the other did not (by name)."""
    a, b = Counter(attributed.names), Counter(reference.names)
    return sum(((a - b) + (b - a)).values())


def isolated_time_ms(attributed: KernelSequence, reference: KernelSequence) -> tuple[float, float, int, int]:
    """(attributed ms, reference ms, kernels compared, kernels in all) over the launches that ran
    the same kernel at the same position and overlapped nothing in either pass; each pass's ms
    is the median over its iterations of those launches' summed durations (module doc)."""
    if attributed.names != reference.names:
        return 0.0, 0.0, 0, len(reference.names)
    keep = [i for i in range(len(reference.names)) if not attributed.overlapped[i] and not reference.overlapped[i]]

    def median_ms(seq: KernelSequence) -> float:
        return float(np.median([durations[keep].sum() for durations in seq.iteration_ns])) / 1e6 if keep else 0.0

    return median_ms(attributed), median_ms(reference), len(keep), len(reference.names)


def kernel_time_check(ms: float, reference_ms: float, mhz: float | None, reference_mhz: float | None,
                      detail: str, tolerance: float = KERNEL_TIME_TOLERANCE) -> Check:
    """The attributed pass's kernel time against the tracer-only pass's, each at its SM clock
    (module doc): passes when ``ms / reference_ms`` lies within ``tolerance`` of the range
    between 1 and ``reference_mhz / mhz``."""
    name = "kernel time: attributed vs tracer-only"
    if not mhz or not reference_mhz or not reference_ms:
        return Check.within(name, ms, reference_ms, tolerance, unit="ms", detail=detail)
    scale = reference_mhz / mhz
    low, high = min(1.0, scale), max(1.0, scale)
    ratio = ms / reference_ms
    passed = bool(low * (1 - tolerance) <= ratio <= high * (1 + tolerance))  # a NumPy bool is no JSON
    clock = (f"SM clock {mhz:.0f} vs {reference_mhz:.0f} MHz (NVML): the same kernels take x{low:.3f} to "
             f"x{high:.3f} of the reference's time, the tolerance applies around that; took x{ratio:.3f}")
    return Check(name, ms, reference_ms, tolerance, passed, unit="ms", detail=f"{detail}; {clock}")
