"""timm, for every visprof module that builds or names models. A timm that is installed but does
not import (most often: a torchvision built for another torch, whose ops fail to register with a
RuntimeError) is one line naming the versions, not a traceback from deep inside torchvision."""
from __future__ import annotations

import signal
import sys
import threading
from types import ModuleType
from typing import Callable

from visprof.base.errors import BrokenDependencyError


def import_timm() -> ModuleType:
    try:
        import timm
    except ModuleNotFoundError:
        raise  # not installed at all: pip's own message is the clearer one
    except Exception as exc:  # an ImportError or RuntimeError raised while timm imports torchvision
        raise BrokenDependencyError("timm", exc) from exc
    return timm


# Signals that stop a command as Ctrl-C does (the CLI's handlers, visprof/cli/app.py): SIGTERM
# (timeout, SLURM, docker stop, systemd) and SIGHUP (the terminal closed, an ssh session dropped).
STOPPING_SIGNALS = ("SIGTERM", "SIGHUP")


def import_timm_holding_interrupts(on_interrupt: Callable[[], None] | None = None) -> ModuleType:
    """``import_timm`` (and with it torch) with Ctrl-C held until the import is done.

    torch's C initialisation imports numpy and clears any error raised meanwhile, so a Ctrl-C
    that lands there is lost and numpy is left half imported: the command then runs on, or fails
    later with an AttributeError from numpy or "cannot load module more than once per process".
    Held, the interrupt arrives as KeyboardInterrupt right after the import, where the CLI says
    "interrupted". The mask is the calling thread's: the CLI calls this before it starts any other
    thread, and those the import starts inherit it. Only the main thread takes SIGINT and only POSIX
    can hold it; elsewhere this is ``import_timm``.

    A cold import can take many seconds, and a Ctrl-C with no answer meanwhile reads as ignored. So
    where the platform has ``sigtimedwait`` (Linux), a thread takes the held signal as it comes and
    calls ``on_interrupt`` at the first, to say that the stop is on its way."""
    if "timm" in sys.modules or not hasattr(signal, "pthread_sigmask") \
            or threading.current_thread() is not threading.main_thread():
        return import_timm()
    # The stopping signals too: the CLI stops on them as on Ctrl-C, by an exception that the import would lose as well
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, *(getattr(signal, name) for name in STOPPING_SIGNALS)})
    # Started after the mask is set, so the waiter holds SIGINT too, as sigtimedwait needs. Not where
    # the caller held SIGINT already: the waiter would take a signal that is the caller's to take.
    waiter = _HeldInterruptWaiter(on_interrupt) \
        if hasattr(signal, "sigtimedwait") and signal.SIGINT not in held else None
    try:
        timm = import_timm()
    finally:
        if waiter is not None:
            waiter.stop()  # before the mask is lifted, so that a later Ctrl-C reaches this thread
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    if waiter is not None and waiter.interrupted:
        raise KeyboardInterrupt  # the waiter took the signal, so it is no longer pending to arrive itself
    return timm


class _HeldInterruptWaiter:
    """A daemon thread that takes SIGINT while it is held, and notes that it came.

    It polls (``sigtimedwait``, 50 ms) rather than waiting to be woken by a signal of its own: a
    real Ctrl-C could land just before that wake-up signal and be taken for it."""

    POLL_S = 0.05

    def __init__(self, on_interrupt: Callable[[], None] | None):
        self.interrupted = False
        self._on_interrupt = on_interrupt
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._wait, name="visprof-held-interrupt", daemon=True)
        self._thread.start()

    def _wait(self) -> None:
        while not self._stop.is_set():
            if signal.sigtimedwait({signal.SIGINT}, self.POLL_S) is None or self.interrupted:
                continue
            self.interrupted = True
            if self._on_interrupt is not None:
                self._on_interrupt()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()  # a Ctrl-C after its last poll stays pending, and arrives once unheld


__all__ = ["import_timm", "import_timm_holding_interrupts"]
