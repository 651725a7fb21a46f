"""Pass 3: the memory pass. Allocation hooks installed before the first CUDA allocation,
which PyTorch only allows in a process that has not used CUDA yet, so it runs in a fresh
(spawned) process. Every allocation is tagged with the category of the op that made it.

It returns the peak, the live bytes per category at the moment of the peak, and each
category's own transient peak. Allocations made before the forward (parameters, the input)
carry tag 0 and are reported as "parameters & inputs"."""
from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from visprof.categories import CategoryTable
from visprof.errors import VisprofError
from visprof.models import ModelRecipe
from visprof.passes.runner import RunConfig

PREALLOCATED = "parameters & inputs"


@dataclass
class MemoryResult:
    peak_bytes: int
    baseline_bytes: int  # live before the measured forward (parameters, input)
    live_at_peak: dict[str, int]  # category -> bytes live at the moment of the peak
    transient_peak: dict[str, int]  # category -> its own peak of live bytes
    allocs: int
    wall_s: float


def run_memory_pass(recipe: ModelRecipe, config: RunConfig, table: CategoryTable) -> MemoryResult:
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            result = pool.submit(_measure_in_fresh_process, recipe, config, table).result()
    except BrokenProcessPool as exc:
        raise VisprofError("the memory pass's worker process died (out of host memory, or a crash in "
                           "the model); rerun with --passes timing,attributed to skip it") from exc
    result.wall_s = time.perf_counter() - start
    return result


def _measure_in_fresh_process(recipe: ModelRecipe, config: RunConfig, table: CategoryTable) -> MemoryResult:
    from visprof.native import alloc  # first: the hooks must precede every CUDA allocation

    alloc.install_torch_allocator()
    from visprof.capture import ModuleTracker, OpCapture
    from visprof.passes.runner import ModelRunner

    runner = ModelRunner(recipe.build(), config)
    device = runner.device.index or 0
    tracker = ModuleTracker(runner.spec.module)
    capture = OpCapture(tracker, table, nvtx=False, tags=True)
    with tracker, capture:
        runner()  # warm-up: lazily created state (cuBLAS workspaces, ...) is booked too
        runner.sync()
        alloc.reset_peaks()
        baseline = alloc.stats(device).live
        runner()
        runner.sync()
    stats = alloc.stats(device)
    names = capture.tag_names()

    def by_category(values: list[int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for tag, value in enumerate(values):
            if value:
                name = names.get(tag, PREALLOCATED)
                out[name] = out.get(name, 0) + int(value)
        return out

    return MemoryResult(
        peak_bytes=int(stats.peak),
        baseline_bytes=int(baseline),
        live_at_peak=by_category(stats.live_at_peak),
        transient_peak=by_category(stats.tag_peak),
        allocs=int(stats.allocs),
        wall_s=0.0,
    )
