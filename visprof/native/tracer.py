"""The CUPTI kernel tracer, as NumPy record arrays.

    with KernelTracer() as tracer:
        model(x)
    chunk = tracer.records      # kernels (KERNEL_DTYPE), api_calls (API_DTYPE), names, dropped

Timestamps are CLOCK_MONOTONIC nanoseconds, the clock of time.perf_counter_ns(): visprof
installs its own CUPTI timestamp callback at every start, so a torch.profiler session that
ran earlier in the process (which leaves Kineto's TSC callback behind) cannot skew them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from visprof.base.errors import CuptiUnavailableError, NoGPUError
from visprof.native._loader import native
from visprof.native.records import API_DTYPE, KERNEL_DTYPE, KIND_KERNEL, duration_sum_ns


@dataclass
class TraceRecords:
    kernels: np.ndarray  # KERNEL_DTYPE rows: kernels, memcpys, memsets
    api_calls: np.ndarray  # API_DTYPE rows
    kernel_names: list[str]
    dropped: int = 0  # records CUPTI had to drop: never silent, every report shows it
    external_correlations: int = 0
    callback_errors: int = 0
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_native(cls, raw: dict) -> "TraceRecords":
        return cls(
            kernels=np.asarray(raw["kernels"]).view(KERNEL_DTYPE),
            api_calls=np.asarray(raw["api_calls"]).view(API_DTYPE),
            kernel_names=list(raw["kernel_names"]),
            dropped=int(raw["dropped"]),
            external_correlations=int(raw["external_correlations"]),
            callback_errors=int(raw["callback_errors"]),
        )

    @property
    def kernel_rows(self) -> np.ndarray:
        return self.kernels[self.kernels["kind"] == KIND_KERNEL]

    def kernel_time_ns(self) -> int:
        return duration_sum_ns(self.kernel_rows)

    def kernel_span_ns(self) -> int:
        """First kernel start to last kernel end."""
        k = self.kernel_rows
        if len(k) == 0:
            return 0
        return int(k["end_ns"].max() - k["start_ns"].min())

    def linked_fraction(self) -> float:
        """Share of kernels that carry an external correlation id."""
        k = self.kernel_rows
        return float((k["external_id"] != 0).mean()) if len(k) else 0.0


@dataclass
class SpanCheck:
    kernel_span_ns: int
    event_span_ns: int
    tolerance: float

    @property
    def ratio(self) -> float:
        return self.kernel_span_ns / self.event_span_ns if self.event_span_ns else float("nan")

    @property
    def passed(self) -> bool:
        return abs(self.ratio - 1.0) <= self.tolerance


def span_check(records: TraceRecords, event_span_ns: int, tolerance: float = 0.05) -> SpanCheck:
    """Compares the traced kernel span with a CUDA-event span around the same work.

    A ratio far from 1 means the tracer's timestamps are not nanoseconds (another tool's
    timestamp callback) or kernels were lost. Every visprof run performs it; any caller can.
    """
    return SpanCheck(records.kernel_span_ns(), int(event_span_ns), tolerance)


class KernelTracer:
    """Starts CUPTI activity tracing on enter, stops it on exit (also when the body raises).

    Raises CuptiUnavailableError when another profiler holds CUPTI and NoGPUError when there
    is no GPU, so callers can fall back to event timing.
    """

    def __init__(self, kinds: int | None = None):
        self._kinds = kinds
        self.records: TraceRecords | None = None
        self.shared_subscription = False

    def start(self) -> None:
        c = native()
        if c.native_info()["gpu_count"] == 0:
            raise NoGPUError("kernel tracing needs a CUDA GPU, and none is visible to this process")
        kinds = c.tracer.ALL if self._kinds is None else self._kinds
        busy = other_profiler_active()
        if busy:
            raise CuptiUnavailableError(busy)
        try:
            # No other tool is tracing now, so a subscriber that CUPTI still lists is an idle
            # one (Kineto keeps its subscription after every torch.profiler session ends).
            c.tracer.start(kinds, share_idle_subscriber=True)
        except c.CuptiBusyError as exc:
            raise CuptiUnavailableError(str(exc)) from exc
        except c.NativeError as exc:
            raise CuptiUnavailableError(f"CUPTI could not start kernel tracing: {exc}") from exc
        self.shared_subscription = bool(c.tracer.shared_subscription())

    def stop(self) -> TraceRecords:
        c = native()
        c.tracer.stop()
        self.records = TraceRecords.from_native(c.tracer.drain())
        return self.records

    def drain(self) -> TraceRecords:
        """Records so far, without stopping."""
        return TraceRecords.from_native(native().tracer.drain())

    def __enter__(self) -> "KernelTracer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def other_profiler_active() -> str | None:
    """Why another profiler owns CUPTI right now, or None.

    torch.profiler reports its own state; Nsight Systems and Nsight Compute inject themselves
    through CUDA_INJECTION64_PATH, which nothing else sets.
    """
    import os

    if os.environ.get("CUDA_INJECTION64_PATH"):
        return (
            "an Nsight tool (nsys or ncu) is injected into this process and owns CUPTI; visprof "
            "keeps its NVTX ranges for that tool but cannot trace kernels itself"
        )
    try:
        import torch

        if torch.autograd.profiler._is_profiler_enabled:
            return "torch.profiler is recording in this process and owns CUPTI until it stops"
    except (ImportError, AttributeError):
        pass
    return None


def push_external_id(external_id: int) -> None:
    native().tracer.push_external_id(external_id)


def pop_external_id() -> None:
    native().tracer.pop_external_id()
