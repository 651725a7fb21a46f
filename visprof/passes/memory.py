"""Pass 3: the memory pass, in this process, on PyTorch's own CUDA caching allocator.

Two forwards run while visprof's allocator tracker books every block the caching allocator
hands to a tensor and every segment it reserves from the driver (visprof/native/
alloc_tracker.py), each tagged with the category of the op that asked for it. Before them the
allocator's unused cache is emptied (cuBLAS's workspaces stay, as in a running model: see
empty_cache), so the segments the forwards need are reserved again, under the ops that need
them. The second forward is the steady state. The peaks over both are then what a plain
script's loop in a fresh process reports
(bench/results/h200-s17-memory): "reserved" is what running this model takes from the GPU,
the figure that decides whether it fits a smaller one. The books start from what is already
live (parameters, the input, autocast's cached weight casts), booked as "parameters & inputs".

It reports the peak of bytes held by tensors (allocated) and its split by category at that
moment, each category's own transient peak, and the same for reserved bytes. Each
allocation is booked at the size of the block the allocator hands out, as torch's
max_memory_allocated counts it: the trace carries the requested size, and visprof's block
mirror (csrc/alloc/block_mirror.h) follows the allocator's splits and merges to find the
block. The peak of requested sizes is kept too. Where the mirror cannot place an allocation
(a setting it does not model), it books the rounded requested size and the result says so.
torch's own peak counters of the same forwards are kept for the self-checks.

Without the tracker (no C++ compiler or CUDA headers, an allocator backend that takes no
trackers) the pass still measures the totals from torch's counters, without the split.
"""
from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field

import torch

from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.capture.replay import ReplayCapture
from visprof.attribution.categories import CategoryTable
from visprof.native import alloc, alloc_tracker
from visprof.native.aten_observer import load_observer
from visprof.passes.runner import ModelRunner

PREALLOCATED = "parameters & inputs"
# Allocations inside the forward but outside any captured op: all of them for a compiled
# model, whose graph runs without op capture (a dispatch mode would make it run eagerly).
OUTSIDE_OPS = "outside ops"
COMPILED_GRAPH = "compiled graph"
FORWARDS = 2  # the first reserves its segments again after the emptied cache, then the steady state


@dataclass
class MemoryResult:
    peak_bytes: int  # bytes held by tensors at the peak (block sizes, as max_memory_allocated)
    baseline_bytes: int  # live before the measured forward (parameters, input)
    live_at_peak: dict[str, int]  # category -> bytes live at the moment of the peak
    transient_peak: dict[str, int]  # category -> its own peak of live bytes
    allocs: int
    wall_s: float
    reserved_peak_bytes: int | None = None
    reserved_at_peak: dict[str, int] = field(default_factory=dict)
    # torch's own counters over the same forwards: max_memory_allocated, max_memory_reserved,
    # and the peak of requested bytes.
    torch_peaks: dict[str, int] = field(default_factory=dict)
    method: str = "caching-allocator trace"
    note: str = ""
    requested_peak_bytes: int | None = None  # peak of the sizes tensors asked for, before rounding
    # allocations the block mirror could not place, booked at their rounded requested size
    block_fallbacks: int | None = None


def run_memory_pass(runner: ModelRunner, table: CategoryTable, template: OpCapture | None = None) -> MemoryResult:
    """``FORWARDS`` forwards on the booked allocator (module doc). `template`, the attributed
    pass's template capture, gives each op its category (roles found from the dataflow
    included) by position, without module hooks; without it, ops are classified on the spot
    from their module classes. Without the tracker, the same forwards under torch's counters."""
    start = time.perf_counter()
    device = runner.device.index or 0
    attached, why_not = alloc_tracker.attach_tracker()
    tagging = _Tagging(runner, table, template) if attached else None  # its recording forward is not booked
    empty_cache(runner)
    torch.cuda.reset_peak_memory_stats(runner.device)
    if attached:
        with alloc_tracker.booking(device):
            baseline = alloc.stats(device).live
            tagging.forwards(runner)
        result = _from_books(device, tagging.names, baseline)
        counts = alloc_tracker.block_counts(device)
        result.block_fallbacks = counts["fallbacks"]
        result.note = "; ".join(filter(None, [block_size_note(counts, alloc_tracker.unmodeled_allocator_settings()),
                                              tagging.note()]))
    else:
        for _ in range(FORWARDS):  # the same forwards as booked: the peaks mean the same
            runner()
        runner.sync()
        result = MemoryResult(0, 0, {}, {}, 0, 0.0, method="torch counters only",
                              note=f"no split by category: the allocator tracker is unavailable ({why_not})")
    result.torch_peaks = _torch_peaks(runner.device)
    if not attached:
        result.peak_bytes = result.torch_peaks["max_memory_allocated"]
        result.requested_peak_bytes = result.torch_peaks["requested"]
        result.reserved_peak_bytes = result.torch_peaks["max_memory_reserved"]
    result.wall_s = time.perf_counter() - start
    return result


def empty_cache(runner: ModelRunner) -> None:
    """Returns every cached, unused segment to the driver (what is live stays reserved)."""
    runner.sync()
    gc.collect()
    # cuBLAS's workspaces stay: a running model holds them (32 MiB a handle on the H200), and
    # once cleared, its GEMMs did not allocate them again through the caching allocator, so a
    # memory pass without them measured 5% below the timing pass's peak (dla102: 583 vs
    # 617 MB, bench/results/h200-checks-2026-12-01).
    torch.cuda.empty_cache()


class _Tagging:
    """Runs the booked forwards with each op's category as allocation tag.

    Where the ATen observer's recording of one forward aligns with the template (as in the
    attributed pass), the forwards replay it from C++: the model runs exactly as it does
    without visprof. A Python dispatch mode does not always: torch treats every tensor as a
    subclass under it (at::isTensorSubclassLike), and some composite ops take another branch
    (visprof/capture/replay.py); under inference_mode it received composite ops with autocast
    off (visprof/capture/dispatch.py, now corrected). On the H200, hrnet_w48_ssld's upsampling
    ran in bf16 instead of fp32 under the dispatch mode, and its peak fell from 1060 to 962 MB
    (bench/results/h200-checks-2026-12-03). The dispatch mode remains the fallback (no
    observer, no template, data-dependent forwards)."""

    def __init__(self, runner: ModelRunner, table: CategoryTable, template: OpCapture | None):
        self.tracker = ModuleTracker(runner.spec.module)
        self.capture = OpCapture(self.tracker, table, nvtx=False, tags=True, template=template)
        self.names = {0: PREALLOCATED, **self.capture.tag_names()}
        self.outside = max(self.names) + 1
        self.names[self.outside] = COMPILED_GRAPH if runner.config.compile else OUTSIDE_OPS
        self.has_template = template is not None
        self.replay, self.why_not = None, ""
        if runner.config.compile:
            pass  # the compiled graph runs without op capture (forwards)
        elif template is None:
            self.why_not = "no attributed pass ran, whose template forward the replay follows"
        else:
            self.replay, self.why_not = self._prepare_replay(runner)

    def _prepare_replay(self, runner: ModelRunner) -> tuple[ReplayCapture | None, str]:
        observer, why_not = load_observer()
        if observer is None:
            return None, f"ATen observer unavailable: {why_not}"

        def forward() -> None:
            runner()
            runner.sync()

        return ReplayCapture.prepare(observer, self.capture, forward, FORWARDS)

    def forwards(self, runner: ModelRunner) -> None:
        """``FORWARDS`` forwards, tagged."""
        if self.replay is not None:
            with alloc.tagged(self.outside), self.replay:
                for iteration in range(FORWARDS):
                    self.replay.start_iteration(iteration)
                    runner()
        else:
            for iteration in range(FORWARDS):
                self.capture.start_iteration(iteration)
                with alloc.tagged(self.outside), contextlib.ExitStack() as capturing:
                    # A compiled model runs its graph without op capture: a dispatch mode would make
                    # torch.compile fall back to eager, and the memory measured would be the eager model's.
                    if not runner.config.compile:
                        if not self.has_template:
                            capturing.enter_context(self.tracker)  # module hooks: the template knows modules by position
                        capturing.enter_context(self.capture)
                    runner()
        runner.sync()

    def note(self) -> str:
        """What the books' categories rest on, where it is not the replay."""
        if self.replay is not None and self.replay.diverged_iterations:
            return (f"forward(s) {', '.join(map(str, self.replay.diverged_iterations))} departed from the recorded one "
                    "(data-dependent code): the allocations after the departure are booked as outside ops")
        if self.replay is None and self.why_not:
            return f"allocations tagged under a Python dispatch mode ({self.why_not})"
        return ""


def _from_books(device: int, names: dict[int, str], baseline: int) -> MemoryResult:
    held = alloc.stats(device)
    reserved = alloc.reserved_stats(device)

    def by_name(values: list[int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for tag, value in enumerate(values):
            if value:
                name = names.get(tag, OUTSIDE_OPS)
                out[name] = out.get(name, 0) + int(value)
        return out

    return MemoryResult(
        peak_bytes=int(held.peak),
        requested_peak_bytes=int(held.requested_peak),
        baseline_bytes=int(baseline),
        live_at_peak=by_name(held.live_at_peak),
        transient_peak=by_name(held.tag_peak),
        allocs=int(held.allocs),
        wall_s=0.0,
        reserved_peak_bytes=int(reserved.peak),
        reserved_at_peak=by_name(reserved.live_at_peak),
    )


def block_size_note(counts: dict[str, int], unmodeled: list[str]) -> str:
    """Says where the booked block sizes may differ from torch's: allocations the mirror could
    not place, and allocator settings it does not model. Empty when neither."""
    parts = []
    fallbacks = counts.get("fallbacks", 0)
    if fallbacks:
        total = sum(counts.values())
        parts.append(f"{fallbacks} of {total} allocations were booked at their rounded requested size: visprof's "
                     "mirror of the allocator's blocks found no free block at their address")
    if unmodeled:
        parts.append(f"{', '.join(unmodeled)} changes the allocator's block sizes in ways visprof's block mirror "
                     "does not model")
    if not parts:
        return ""
    return "; ".join(parts) + (" (peak held by tensors may differ from torch.cuda.max_memory_allocated: see the "
                               "self-check)")


def _torch_peaks(device: torch.device) -> dict[str, int]:
    stats = torch.cuda.memory_stats(device)
    return {
        "max_memory_allocated": int(stats.get("allocated_bytes.all.peak", 0)),
        "max_memory_reserved": int(stats.get("reserved_bytes.all.peak", 0)),
        "requested": int(stats.get("requested_bytes.all.peak", 0)),
    }
