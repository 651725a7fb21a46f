"""Standard output that fails must not cost the files a command still has to write.

- A reader that goes away (`visprof calibrate ... --save cal.json | head`, a pager quit early):
  printing to a closed pipe raises BrokenPipeError, which would end the command before its
  --json, --csv or --save. The first write or flush that finds the pipe closed points the
  stream's file descriptor at /dev/null (so that the interpreter's own flush at exit finds no
  pipe either), and every later write is dropped: the user chose not to read the rest.
- Standard output closed before the start (`visprof info >&-`): Python has no ``sys.stdout``;
  the report goes to /dev/null, as for a reader that went away.
- Any other failure (`> file` on a full disk, an I/O error): later writes are dropped the same
  way so that the command still writes its files, and after it the failure is reported as a
  ``StdoutWriteError`` (one line, exit 5) rather than lost.
- A standard output that cannot encode the report's characters (its `·` and `±` in an ASCII
  locale, or under `PYTHONIOENCODING=ascii`): they are written as escapes (`\\xb7`), as Python writes
  stderr. A UnicodeEncodeError there had ended `visprof profile ... --json r.json` with a
  traceback once the profile was done, and no r.json.

``pipe_safe_stdout()`` wraps ``sys.stdout`` for the length of a command, and
``pipe_safe_stderr()`` ``sys.stderr``: progress and notes are a side channel, and a sweep
whose stderr went through `| head` or onto a full log disk had died at its next progress line,
its remaining cells not run and its --json not written. A failure there has nowhere to be said.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Callable, Iterator

from visprof.base.closed_streams import DropWhenClosed
from visprof.base.errors import StdoutWriteError


@contextlib.contextmanager
def pipe_safe_stdout() -> Iterator[None]:
    original = sys.stdout
    stream = original if original is not None else open(os.devnull, "w")
    restore_errors = _escape_unencodable(stream)
    wrapped = DropWhenClosed(stream)
    sys.stdout = wrapped
    try:
        yield
        wrapped.flush()  # what is still buffered fails here, not in the interpreter's flush at exit
    finally:
        sys.stdout = original
        restore_errors()
        if original is None:
            stream.close()
    if wrapped.failure:
        raise StdoutWriteError(wrapped.failure)


def _escape_unencodable(stream) -> Callable[[], None]:
    """Has ``stream`` write what its encoding cannot as backslash escapes; returns what puts its
    own error handling back (the command's caller, a test or a notebook, keeps its stream as it was)."""
    errors = getattr(stream, "errors", None)
    reconfigure = getattr(stream, "reconfigure", None)  # io.TextIOWrapper's; not on every stream
    if errors != "strict" or reconfigure is None:
        return lambda: None
    reconfigure(errors="backslashreplace")

    def restore() -> None:
        with contextlib.suppress(OSError, ValueError):  # reconfigure flushes: a closed pipe, a closed stream
            reconfigure(errors=errors)

    return restore


@contextlib.contextmanager
def pipe_safe_stderr() -> Iterator[None]:
    original = sys.stderr
    if original is None:  # closed before the start: Python has none, and nothing is written there
        yield
        return
    sys.stderr = DropWhenClosed(original)
    try:
        yield
    finally:
        sys.stderr = original


__all__ = ["pipe_safe_stderr", "pipe_safe_stdout"]
