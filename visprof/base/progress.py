"""Progress on stderr for work that takes a while (passes, iterations, sweeps).

On a terminal with tqdm installed it draws bars. Elsewhere (CI logs, pipes, no tqdm) it
prints one plain line per step, ``[visprof] pass 2/3: attributed``, because a redrawn bar
turns a log file into noise. ``enabled=False`` (the CLI's ``--quiet``) silences it.
Progress never goes to stdout: stdout carries the report, which users pipe (with no stderr
at all, it says nothing). A stderr whose reader went away (``2>&1 | head``) silences it; the
work goes on.

    with Progress(3, "pass", enabled=not quiet) as progress:
        progress.step("timing")
        for _ in progress.iter(range(iterations), "iterations"):
            ...
        progress.step("attributed")

A long step says how far it got with ``update(text)`` (a pass calls it as often as it likes,
e.g. ``progress.update("12 iterations, 9 s")``): on a terminal the bar's step line shows the
text, redrawn at most once a second; in a log a line ``[visprof]   attributed: 12 iterations,
9 s`` at most every ``LOG_UPDATE_S`` seconds, none in a step's first seconds, so steps that
end quickly (a GPU's timing pass) add no lines. ``delay_s`` shows nothing at all in the work's
first seconds: an analysis command that ends, or is refused, at once says only what it has to say.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Iterable, Iterator, TextIO, TypeVar

from visprof.base.closed_streams import DropWhenClosed
from visprof.base.errors import BadInputError

T = TypeVar("T")
PREFIX = "[visprof]"
BAR_UPDATE_S = 1.0  # the shortest time between two redraws of a step's line on a terminal
LOG_UPDATE_S = 5.0  # the shortest time between two update lines in a log


def load_tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    def __init__(self, total_steps: int, desc: str, enabled: bool = True, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, delay_s: float = 0.0):
        self.total_steps = total_steps
        self.desc = desc
        self.enabled = enabled
        self._stream = stream  # None: sys.stderr as the block is entered (so tests can capture it)
        self._out: DropWhenClosed | None = None  # what is written to, from __enter__ on
        self._clock = clock
        self._done = 0  # steps finished
        self._current: str | None = None  # label of the step in progress
        self._shown_at = 0.0  # when the step began, or when update() last showed something
        self.delay_s = delay_s  # nothing is shown before this many seconds since the block was entered
        self._entered_at = 0.0
        self._held: str | None = None  # a step's line not shown, as it began in the first delay_s
        self._bar = None
        self._tqdm = None

    @property
    def stream(self) -> TextIO:
        if self._out is None:  # before the block: where it will write
            return self._stream if self._stream is not None else sys.stderr
        return self._out

    def _use_bars(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty()) and self._tqdm is not None

    def __enter__(self) -> "Progress":
        target = self.stream
        # Python has no stderr when it was closed before the start (`2>&-`, pythonw): print(file=None)
        # then writes to stdout, which carries the caller's report, so nothing is said.
        self.enabled = self.enabled and target is not None
        # A reader that went away (`python train.py 2>&1 | head`) or a full disk: a progress line had
        # ended visprof.profile() with a BrokenPipeError, the profile lost; the rest is dropped instead.
        self._out = DropWhenClosed(target) if target is not None else None
        self._entered_at = self._clock()
        if self.enabled:
            self._tqdm = load_tqdm()
            if self._use_bars():
                self._bar = self._tqdm(
                    total=self.total_steps,
                    desc=self.desc,
                    file=self.stream,
                    leave=False,  # gone once done: the report printed next is what stays
                    bar_format="{desc} |{bar}| {elapsed}",  # steps/s means nothing for passes
                    delay=self.delay_s,
                )
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._bar is not None:
            if exc_type is None:
                self._bar.update(self.total_steps - self._bar.n)
            self._bar.close()
            self._bar = None

    def step(self, label: str) -> None:
        """Start the next step; the one before it counts as finished."""
        if self._current is not None:
            self._done += 1
        self._current = label
        if not self.enabled:
            return
        self._shown_at = self._clock()
        text = self._step_text()
        if self._bar is not None:
            self._bar.update(self._done - self._bar.n)
            self._bar.set_description_str(text)
        elif self._in_delay(self._shown_at):
            self._held = text
        else:
            self._held = None
            self._print(text)

    def _step_text(self) -> str:
        return f"{self.desc} {self._done + 1}/{self.total_steps}: {self._current}"

    def update(self, text: str) -> None:
        """How far the step in progress got (``"12 iterations, 9 s"``). Cheap to call often:
        shown at most once a second on a terminal, every LOG_UPDATE_S seconds in a log, and
        never in the first of those seconds of a step."""
        if not self.enabled or self._current is None:
            return
        now = self._clock()
        if now - self._shown_at < (BAR_UPDATE_S if self._bar is not None else LOG_UPDATE_S):
            return
        if self._bar is not None:
            self._shown_at = now
            self._bar.set_description_str(f"{self._step_text()} · {text}")
            return
        if self._in_delay(now):
            return
        self._shown_at = now
        if self._held is not None:  # the step began in the first delay_s and has lasted: say which it is
            self._print(self._held)
            self._held = None
        self._print(f"  {self._current}: {text}")

    def _in_delay(self, now: float) -> bool:
        return now - self._entered_at < self.delay_s

    def iter(self, iterable: Iterable[T], desc: str) -> Iterator[T]:
        """``iterable``, with an inner bar on a terminal or one line in a log."""
        if not self.enabled:
            yield from iterable
            return
        if self._bar is not None:
            yield from self._tqdm(iterable, desc=f"  {desc}", file=self.stream, leave=False)
            return
        total = len(iterable) if hasattr(iterable, "__len__") else None
        self._print(f"  {desc}" + (f" ({total})" if total is not None else ""))
        yield from iterable

    def _print(self, text: str) -> None:
        print(f"{PREFIX} {text}", file=self.stream, flush=True)


def check_callback(on_progress: object) -> None:
    """BadInputError unless ``on_progress`` is None or callable: given ``True`` (for "show progress"),
    a library function failed minutes in, at its first item, with "'bool' object is not callable"."""
    if on_progress is not None and not callable(on_progress):
        raise BadInputError(f"on_progress takes a function of one string (e.g. print or Progress.update), "
                            f"not {type(on_progress).__name__} {on_progress!r:.40}")


def counted(items: Iterable[T], total: int, what: str, on_progress: Callable[[str], None] | None) -> Iterator[T]:
    """``items``, telling ``on_progress`` after each is dealt with ``"{done} of {total} {what}"``, for
    library functions that take an ``on_progress`` (``Progress.update`` throttles what it is told)."""
    for done, item in enumerate(items, 1):
        yield item
        if on_progress is not None:
            on_progress(f"{done} of {total} {what}")
