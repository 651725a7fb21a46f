"""A reader that goes away (`visprof calibrate ... --save cal.json | head`, a pager quit early)
must not cost the files a command still has to write: printing to a closed pipe raises
BrokenPipeError, which would end the command before its --json, --csv or --save.

``pipe_safe_stdout()`` wraps ``sys.stdout`` for the length of a command: the first write or
flush that finds the pipe closed points the stream's file descriptor at /dev/null (so that the
interpreter's own flush at exit finds no pipe either), and every later write is dropped.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, TextIO


class _DropWhenClosed:
    """``stream`` until its reader goes away, then nothing."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._closed = False

    def write(self, text: str) -> int:
        if not self._closed:
            self._guard(self._stream.write, text)
        return len(text)

    def flush(self) -> None:
        if not self._closed:
            self._guard(self._stream.flush)

    def _guard(self, call, *args) -> None:
        try:
            call(*args)
        except BrokenPipeError:
            self._closed = True
            with contextlib.suppress(OSError, ValueError, AttributeError):  # a stream without a descriptor
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._stream.fileno())
                os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def pipe_safe_stdout() -> Iterator[None]:
    original = sys.stdout
    sys.stdout = _DropWhenClosed(original)
    try:
        yield
    finally:
        sys.stdout = original


__all__ = ["pipe_safe_stdout"]
