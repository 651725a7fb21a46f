"""NVTX ranges in the "visprof" domain, exception-safe.

    with nvtx.range("attention", color=0xFFE24A33):
        ...

    @nvtx.range("preprocess")
    def preprocess(x): ...

Nsight Compute can then profile only what ran inside a range:
    ncu --nvtx --nvtx-include "visprof@attention/" python train.py
Set VISPROF_DISABLE=1 to make every range (and all tracing) a no-op.
"""
from __future__ import annotations

import contextlib
import functools

from visprof.native._loader import native

DEFAULT_COLOR = 0xFF76B900


def push(message: str, color: int = DEFAULT_COLOR, payload: int = 0) -> None:
    native().nvtx.push(message, color, payload)


def pop() -> None:
    native().nvtx.pop()


def depth() -> int:
    """Ranges pushed by visprof on this thread and not yet popped."""
    return native().nvtx.depth()


class range(contextlib.ContextDecorator):  # noqa: A001 - mirrors nvtx.annotate / torch.cuda.nvtx.range
    """Context manager and decorator; the range is popped however the body exits."""

    def __init__(self, message: str, color: int = DEFAULT_COLOR, payload: int = 0):
        self._message = message
        self._color = color
        self._payload = payload

    def __enter__(self) -> "range":
        native().nvtx.push(self._message, self._color, self._payload)
        return self

    def __exit__(self, *exc) -> bool:
        native().nvtx.pop()
        return False


@functools.lru_cache(maxsize=None)
def registered(message: str) -> int:
    """A handle for `message` registered once in the domain, for the cheapest pushes."""
    return native().nvtx.register_message(message)
