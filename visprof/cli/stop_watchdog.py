"""A stop that one long native operation cannot put off.

Python runs a signal's handler between bytecodes of the main thread, so Ctrl-C, SIGTERM and
SIGHUP wait for the native call the main thread is in. On the CPU one call can run for minutes (a
typo such as ``--img-size 22400`` makes a ViT's attention run over two million tokens), and
``timeout 300 visprof profile ...`` ran on past its 300 s, SIGTERM unanswered, until ``kill -9``.

The C-level handler writes the signal's number to the wakeup fd at once, whatever the main
thread is doing. A daemon thread reads it; if no Python handler has run ``GRACE_S`` later, the
process ends there with one line and the signal's exit code (128 + its number), as the shell
would. Where a handler has run, it carries on as before: the command's own cleanup (a sweep's
workers stopped, its run marked interrupted, its unwritten files named) is not cut short.
Ending without that cleanup loses nothing written: outputs are written whole or not at all, and
a store keeps every row it committed.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

__all__ = ["GRACE_S", "StopWatchdog"]

# Far longer than a handler takes to run where the main thread is in Python or in a call that a
# signal interrupts (a sleep, a wait, a select): milliseconds.
GRACE_S = 10.0


class StopWatchdog:
    """Ends the process when one of ``signals`` came and no handler ran within ``grace_s``.

    ``handled()`` is for the handlers to call as they run. Start it in the main thread (the wakeup
    fd is the main thread's), after the handlers are installed: only signals with a Python handler
    write to the wakeup fd."""

    def __init__(self, signals: set[int], grace_s: float = GRACE_S):
        self.signals = set(signals)
        self.grace_s = grace_s
        self._handled = threading.Event()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # the C handler must never block on a full pipe
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        # The thread blocks the signals it watches (a thread inherits its starter's mask): the kernel
        # gives a process's signal to any thread that does not block it, and one this thread took
        # would reach the main thread even while the main thread holds it (the import of torch does).
        mask = hasattr(signal, "pthread_sigmask")
        previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, self.signals) if mask else None
        try:
            threading.Thread(target=self._watch, name="visprof-stop-watchdog", daemon=True).start()
        finally:
            if mask:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)

    def handled(self) -> None:
        self._handled.set()

    def close(self) -> None:
        """The wakeup fd as it was (the reading end stays open for the daemon thread, which waits on it)."""
        with contextlib.suppress(ValueError):  # signal.set_wakeup_fd works in the main thread only
            signal.set_wakeup_fd(self._previous)
        with contextlib.suppress(OSError):
            os.close(self._write)

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                return
            if not data:  # closed: the command is over
                return
            came = [signum for signum in data if signum in self.signals]
            if not came:
                continue
            if self._handled.wait(self.grace_s):
                return  # a handler runs: the command stops its own way
            self._end(came[0])

    def _end(self, signum: int) -> None:
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"visprof: error: {'interrupted' if signum == signal.SIGINT else f'terminated ({name})'}; "
                             f"a native operation had not returned {self.grace_s:g} s later, so visprof stopped "
                             "there, without its cleanup (files are written whole or not at all)\n")
            sys.stderr.flush()
        os._exit(128 + signum)
