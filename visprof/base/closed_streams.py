"""A text stream that, once writing to it fails, drops every later write instead of raising.

Output on a side channel (a progress line, a report on a pipe) must not cost the work and the
files a command still has to do: a reader that went away (`| head`, a pager quit early) or a full
disk under a log made the next print raise, and a sweep died at its next progress line. The CLI
wraps stdout and stderr in it (``visprof.cli.closed_stdout``); a sweep's progress wraps its stream,
so that ``run_sweep`` from a script piped the same way goes on too.
"""
from __future__ import annotations

import contextlib
import os
from typing import TextIO


class DropWhenClosed:
    """``stream`` until it fails, then nothing; ``failure`` keeps a failure that was not a closed pipe."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._closed = False
        self.failure: str | None = None

    def write(self, text: str) -> int:
        if not self._closed:
            try:
                self._guard(self._stream.write, text)
            except UnicodeEncodeError:
                # A path with a byte that is not UTF-8 (a Latin-1 folder name), or a character the
                # stream's encoding lacks: written escaped (\xe9), as Python's own stderr does.
                encoding = getattr(self._stream, "encoding", None) or "utf-8"
                self._guard(self._stream.write, text.encode(encoding, "backslashreplace").decode(encoding))
        return len(text)

    def flush(self) -> None:
        if not self._closed:
            self._guard(self._stream.flush)

    def _guard(self, call, *args) -> None:
        try:
            call(*args)
        except BrokenPipeError:
            self._drop()
        except OSError as error:
            self.failure = error.strerror or str(error)
            self._drop()

    def _drop(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a stream without a descriptor
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


__all__ = ["DropWhenClosed"]
