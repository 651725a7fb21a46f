"""Intervals timed by CUDA events on any stream, or by the host clock without a GPU.

    timer = EventTimer(device=0)
    i = timer.start(torch.cuda.current_stream())
    ...
    timer.stop(i, torch.cuda.current_stream())
    timer.elapsed_ns()   # -> np.ndarray[int64], one call for all intervals
"""
from __future__ import annotations

from typing import Any

import numpy as np

from visprof.base.errors import BadInputError
from visprof.native._loader import native


def stream_handle(stream: Any) -> int:
    """The raw cudaStream_t of a torch stream, a CuPy stream, or an int (0 = default)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    raise TypeError(f"not a stream: {stream!r} (pass a torch or CuPy stream, or an int handle)")


class EventTimer:
    """device=None or "cpu" times with the host clock; an int or "cuda:N" with CUDA events."""

    def __init__(self, device: int | str | None = None):
        self._timer = native().EventTimer(_device_index(device))

    @property
    def uses_gpu(self) -> bool:
        return self._timer.uses_gpu

    def start(self, stream: Any = None) -> int:
        return self._timer.start(stream_handle(stream))

    def stop(self, interval: int, stream: Any = None) -> None:
        self._timer.stop(interval, stream_handle(stream))

    def elapsed_ns(self, first: int = 0) -> np.ndarray:
        """Intervals `first`.. in nanoseconds; waits for them to finish."""
        return self._timer.elapsed_ns(first)

    def reset(self) -> None:
        self._timer.reset()

    def __len__(self) -> int:
        return len(self._timer)


def _device_index(device: int | str | None) -> int:
    if device is None or device == "cpu":
        return -1
    if isinstance(device, int):
        return device
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise BadInputError(f"unknown timer device {device!r}; use 'cpu', 'cuda', 'cuda:N' or an int")
