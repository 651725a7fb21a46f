"""Sweep progress on stderr: a tqdm bar with rate, ETA and failure counts on a terminal;
one line per finished cell in a log or a pipe (a redrawn bar turns a log into noise), with
the same figures at its end:

    [visprof] 3/40 resnet50 b64|img=default|bf16|nchw|timing+attributed+memory [cuda:0]: ok 2.1 s · 21.4 cells/min · ETA 1 min 44 s

The rate counts the cells finished (measured or failed for good) per minute since the first
worker was ready (shown once a cell was measured: failures at once say nothing of a cell's time);
the ETA is the cells left at that rate.
"""
from __future__ import annotations

import collections
import os
import sys
import time
from typing import Callable, TextIO

from visprof.base.closed_streams import DropWhenClosed
from visprof.base.progress import PREFIX, load_tqdm

__all__ = ["SweepProgress"]


def _has_width(stream) -> bool:
    """Whether a terminal has columns to draw a bar in: a pty of 0x0 (`script -qc`, some CI
    runners) showed no bar and, being a terminal, no per-cell lines either: no progress at all."""
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (OSError, ValueError, AttributeError):
        return True  # a terminal whose size cannot be read: tqdm falls back to its own width


class SweepProgress:
    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total
        target = stream if stream is not None else sys.stderr
        self.enabled = enabled and target is not None  # no stderr at all (closed before the start): nothing said
        # progress is a side channel: a reader gone (`2>&1 | head`) or a full log disk must not stop the sweep
        self._stream = DropWhenClosed(target)
        self._clock = clock
        self._t0 = clock()  # the rate counts from here (restart_clock moves it)
        self.done = 0
        self.ok = 0
        self.failed: collections.Counter[str] = collections.Counter()
        self._bar = None

    @property
    def stream(self) -> TextIO:
        return self._stream

    def __enter__(self) -> "SweepProgress":
        if not self.enabled:
            return self
        tqdm = load_tqdm()
        isatty = getattr(self.stream, "isatty", None)
        if tqdm is not None and isatty is not None and isatty() and _has_width(self.stream):
            self._bar = tqdm(total=self.total, desc="sweep", unit="cell", file=self.stream, dynamic_ncols=True,
                             smoothing=0.1)
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def restart_clock(self) -> None:
        """Rate and ETA count from now (called once the first worker is ready: its start-up,
        seconds of imports, is no cell's time)."""
        if self.done == 0:
            self._t0 = self._clock()
        if self._bar is not None and self._bar.n == 0:
            self._bar.reset(total=self.total)

    def note(self, text: str) -> None:
        """A line of its own (worker started, time budget reached, ...)."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(f"{PREFIX} {text}", file=self.stream)
        else:
            print(f"{PREFIX} {text}", file=self.stream, flush=True)

    def cell(self, label: str, where: str, wall_s: float | None, error_class: str | None = None,
             retry: bool = False) -> None:
        """A cell finished (``error_class`` None: it succeeded); ``retry``: it will run again."""
        if not retry:
            self.done += 1
            if error_class is None:
                self.ok += 1
            else:
                self.failed[error_class] += 1
        if not self.enabled:
            return
        if self._bar is not None:
            if not retry:
                self._bar.update(1)
            self._bar.set_postfix_str(self._counts(), refresh=True)
            if error_class is not None:
                self._bar.write(f"{PREFIX} {label}: {error_class}{' (will retry)' if retry else ''}", file=self.stream)
            return
        wall = f" {wall_s:.1f} s" if wall_s is not None else ""
        status = "ok" if error_class is None else error_class + (" (will retry)" if retry else "")
        print(f"{PREFIX} {self.done}/{self.total} {label} [{where}]: {status}{wall}{self._rate_eta()}",
              file=self.stream, flush=True)

    def _rate_eta(self) -> str:
        """`` · 21.4 cells/min · ETA 1 min 44 s``; empty before a cell was measured: failures alone
        (a forward that raises at once) had made "1963 cells/min · ETA 0 s" with cells still to measure."""
        elapsed = self._clock() - self._t0
        if not self.ok or elapsed <= 0:
            return ""
        per_min = self.done / elapsed * 60
        left = max(self.total - self.done, 0)
        rate = f"{per_min:.0f}" if per_min >= 100 else f"{per_min:.3g}"
        return f" · {rate} cells/min · ETA {_duration(left / per_min * 60)}"

    def _counts(self) -> str:
        failed = sum(self.failed.values())
        text = f"ok={self.ok} failed={failed}"
        if failed:
            text += " (" + ", ".join(f"{name} {n}" for name, n in self.failed.most_common(3)) + ")"
        return text


def _duration(seconds: float) -> str:
    """``42 s``, ``4 min 10 s``, ``2 h 05 min``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
