"""timm, for every visprof module that builds or names models. A timm that is installed but does
not import (most often: a torchvision built for another torch, whose ops fail to register with a
RuntimeError) is one line naming the versions, not a traceback from deep inside torchvision."""
from __future__ import annotations

import signal
import sys
import threading
from types import ModuleType

from visprof.base.errors import BrokenDependencyError


def import_timm() -> ModuleType:
    try:
        import timm
    except ModuleNotFoundError:
        raise  # not installed at all: pip's own message is the clearer one
    except Exception as exc:  # an ImportError or RuntimeError raised while timm imports torchvision
        raise BrokenDependencyError("timm", exc) from exc
    return timm


def import_timm_holding_interrupts() -> ModuleType:
    """``import_timm`` (and with it torch) with Ctrl-C held until the import is done.

    torch's C initialisation imports numpy and clears any error raised meanwhile, so a Ctrl-C
    that lands there is lost and numpy is left half imported: the command then runs on, or fails
    later with an AttributeError from numpy or "cannot load module more than once per process".
    Held, the interrupt arrives as KeyboardInterrupt right after the import, where the CLI says
    "interrupted". The mask is the calling thread's: the CLI calls this before it starts any other
    thread, and those the import starts inherit it. Only the main thread takes SIGINT and only POSIX
    can hold it; elsewhere this is ``import_timm``."""
    if "timm" in sys.modules or not hasattr(signal, "pthread_sigmask") \
            or threading.current_thread() is not threading.main_thread():
        return import_timm()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return import_timm()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


__all__ = ["import_timm", "import_timm_holding_interrupts"]
