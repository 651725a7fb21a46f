"""Pass 1: the clean timing pass. Only the caching allocator and CUDA events: no hooks, no
tracing. It runs like timm's benchmark.py (a synchronize after every step) so the latency it
reports is the one users quote, and stops once the median is stable.

``progress(text)``, when given (``Progress.update`` of visprof/base/progress.py), hears how far
the pass got, ``"warm-up: 3 iterations, 2 s"`` then ``"12 iterations, 9 s"``, at most every
PROGRESS_EVERY_S seconds: on the CPU one forward can take seconds and a pass half a minute."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from visprof.native.timer import EventTimer
from visprof.passes.runner import ModelRunner
from visprof.result import LatencyStats

PROGRESS_EVERY_S = 0.25  # the shortest time between two progress(text) calls; the display throttles too


class _Reporter:
    """Calls ``progress(text)`` at most every PROGRESS_EVERY_S seconds; elapsed time counts
    from the pass's start."""

    def __init__(self, progress: Callable[[str], None] | None, start: float):
        self.progress = progress
        self.start = start
        self.last = start

    def __call__(self, what: str, done: int, total: int | None = None) -> None:
        if self.progress is None:
            return
        now = time.perf_counter()
        if now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        count = f"{done}/{total}" if total is not None else f"{done}"
        self.progress(f"{what}{count} iteration{'s' * (done != 1 or total is not None)}, {now - self.start:.0f} s")


@dataclass
class Adaptive:
    """When to stop: after `min_iterations`, once the median of all samples moved less than
    `tolerance` over the last `window` samples, or when `max_iterations`/`max_seconds` is hit."""

    min_iterations: int = 20
    max_iterations: int = 500
    max_seconds: float = 8.0
    window: int = 10
    tolerance: float = 0.005

    def done(self, samples: list[float], elapsed_s: float) -> bool:
        n = len(samples)
        if n >= self.max_iterations or (elapsed_s >= self.max_seconds and n >= 5):
            return True
        if n < max(self.min_iterations, 2 * self.window) or n % self.window:
            return False
        before = float(np.median(samples[: n - self.window]))
        now = float(np.median(samples))
        return abs(now - before) <= self.tolerance * before


@dataclass
class TimingResult:
    samples_ns: list[int]
    warmup: int
    max_memory_allocated: int | None
    wall_s: float
    max_memory_reserved: int | None = None

    @property
    def latency_ms(self) -> LatencyStats:
        return LatencyStats.from_samples([ns / 1e6 for ns in self.samples_ns])


def warm_up(runner: ModelRunner, iterations: int | None, min_seconds: float | None = None,
            max_seconds: float = 20.0, clocks_ramped: Callable[[], bool] | None = None,
            progress: Callable[[str], None] | None = None) -> int:
    """Runs until `iterations` are done or, when None, for at least `min_seconds` and until
    three consecutive iterations agree within 5%. The time floor is for the GPU's clocks: an
    idle H200 sits at 345 MHz, and after a short warm-up a launch-bound Swin-T read 19.3 ms
    where the same loop read 13.0 ms later in the process (bench/results, first H200 smoke
    run). `clocks_ramped()` (NVML: the SM clock near its maximum) ends the floor early, so a
    GPU that is already warm, as in a sweep, does not wait for it. ``progress(text)`` as for
    run_timing_pass."""
    if iterations == 0:  # asked for none (the checks accept 0): the loop below always ran one first
        return 0
    if min_seconds is None:
        min_seconds = 1.0 if runner.config.is_cuda else 0.0
    done, recent, start = 0, [], time.perf_counter()
    report = progress if isinstance(progress, _Reporter) else _Reporter(progress, start)
    while True:
        t0 = time.perf_counter()
        runner()
        runner.sync()
        recent = (recent + [time.perf_counter() - t0])[-3:]
        done += 1
        report("warm-up: ", done, iterations)
        if iterations is not None:
            if done >= iterations:
                return done
            continue
        elapsed = time.perf_counter() - start
        stable = len(recent) == 3 and max(recent) <= 1.05 * min(recent)
        warm = elapsed >= min_seconds or (clocks_ramped is not None and clocks_ramped())
        if (done >= 5 and stable and warm) or elapsed > max_seconds:
            return done


def run_timing_pass(runner: ModelRunner, *, warmup: int | None = None, iterations: int | None = None,
                    adaptive: Adaptive | None = None, progress: Callable[[str], None] | None = None,
                    clocks_ramped: Callable[[], bool] | None = None) -> TimingResult:
    """The timed loop after a warm-up (see the module docstring); ``progress(text)`` hears how
    far it got, at most every PROGRESS_EVERY_S seconds."""
    start_wall = time.perf_counter()
    report = _Reporter(progress, start_wall)
    warmed = warm_up(runner, warmup, clocks_ramped=clocks_ramped, progress=report)
    adaptive = adaptive or Adaptive()
    cuda = runner.config.is_cuda
    if cuda:
        torch.cuda.reset_peak_memory_stats(runner.device)
    timer = EventTimer(runner.device.index if cuda else None)
    stream = runner.stream()
    samples: list[float] = []
    loop_start = time.perf_counter()
    while True:
        interval = timer.start(stream)
        runner()
        timer.stop(interval, stream)
        runner.sync()
        # Reading each interval right after its sync costs nothing extra: the event is done.
        samples.append(float(timer.elapsed_ns(interval)[0]))
        report("", len(samples), iterations)
        if iterations is not None:
            if len(samples) >= iterations:
                break
        elif adaptive.done(samples, time.perf_counter() - loop_start):
            break
    peak = int(torch.cuda.max_memory_allocated(runner.device)) if cuda else None
    reserved = int(torch.cuda.max_memory_reserved(runner.device)) if cuda else None
    return TimingResult([int(ns) for ns in samples], warmed, peak, time.perf_counter() - start_wall, reserved)
