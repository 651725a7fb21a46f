"""Pass 1b: the CUPTI tracer alone (kernel, memcpy and memset activity; no op capture).

It gives the two references the other passes are checked against: the kernel-time sum per
iteration (the attributed pass must reproduce it) and the GPU busy time per iteration (the
clean latency minus it is the idle, "host/launch-bound" time)."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from visprof.native import native
from visprof.native.timer import EventTimer
from visprof.native.tracer import KernelTracer, SpanCheck, span_check
from visprof.passes.runner import ModelRunner
from visprof.native.records import busy_time_ns, duration_sum_ns, rows_by_iteration
from visprof.passes.kernel_sequence import KernelSequence, merged, sequence_of


@dataclass
class TraceOnlyResult:
    iterations: int
    kernel_ns_per_iteration: list[int]
    busy_ns_per_iteration: list[int]
    kernels_per_iteration: float
    dropped: int
    span: SpanCheck
    wall_s: float
    sequence: KernelSequence | None = None  # what one iteration launched, for the attributed pass's checks

    def then(self, later: "TraceOnlyResult") -> "TraceOnlyResult":
        """This run and a later one of the same pass as one result (the self-checks bracket
        the attributed pass with the two, so that clock drift cancels)."""
        return TraceOnlyResult(
            iterations=self.iterations + later.iterations,
            kernel_ns_per_iteration=self.kernel_ns_per_iteration + later.kernel_ns_per_iteration,
            busy_ns_per_iteration=self.busy_ns_per_iteration + later.busy_ns_per_iteration,
            kernels_per_iteration=(self.kernels_per_iteration * self.iterations
                                   + later.kernels_per_iteration * later.iterations) / (self.iterations + later.iterations),
            dropped=self.dropped + later.dropped, span=self.span, wall_s=self.wall_s + later.wall_s,
            sequence=merged(self.sequence, later.sequence) if self.sequence and later.sequence else self.sequence)

    @property
    def kernel_ns(self) -> float:
        return float(np.median(self.kernel_ns_per_iteration))

    @property
    def busy_ns(self) -> float:
        return float(np.median(self.busy_ns_per_iteration))


def run_trace_only_pass(runner: ModelRunner, iterations: int = 10) -> TraceOnlyResult:
    c = native()
    start_wall = time.perf_counter()
    timer = EventTimer(runner.device.index)
    stream = runner.stream()
    bounds = []
    with KernelTracer(kinds=c.tracer.KERNELS | c.tracer.MEMCPY | c.tracer.MEMSET) as tracer:
        whole = timer.start(stream)
        for _ in range(iterations):
            begin = c.monotonic_ns()
            runner()
            runner.sync()
            bounds.append((begin, c.monotonic_ns()))
        timer.stop(whole, stream)
        runner.sync()
    records = tracer.records
    kernels = records.kernel_rows
    per_iteration = rows_by_iteration(kernels, bounds)
    return TraceOnlyResult(
        iterations=iterations,
        kernel_ns_per_iteration=[duration_sum_ns(rows) for rows in per_iteration],
        busy_ns_per_iteration=[busy_time_ns(rows) for rows in per_iteration],
        kernels_per_iteration=len(kernels) / iterations,
        dropped=records.dropped,
        span=span_check(records, int(timer.elapsed_ns()[0])),
        wall_s=time.perf_counter() - start_wall,
        sequence=sequence_of(per_iteration, records.kernel_names),
    )
