"""The captures and module trackers that are recording now, for two questions capture itself
cannot answer from inside one of them.

- Is a capture recording on this thread already? A ``visprof.trace()`` block or a
  ``visprof.profile()`` inside another trace block would time every op with the outer
  capture's per-op work inside it (an inner trace read 10x, a profile 2x its latency), so they
  are refused (``recording_here``).
- A process forked inside a ``visprof.trace()`` block (a DataLoader's workers) inherits the
  thread's dispatch mode and the global module hooks: each worker then recorded every op it ran,
  for nobody (data loading 15x slower, its memory growing by the op). In the child, every live
  capture leaves the dispatch mode stack and every tracker removes its hooks
  (``os.register_at_fork``).
"""
from __future__ import annotations

import os
import weakref

from torch.utils import _python_dispatch as python_dispatch

_live = weakref.WeakSet()  # OpCapture and ModuleTracker instances between __enter__ and __exit__


def started(capture_or_tracker) -> None:
    _live.add(capture_or_tracker)


def ended(capture_or_tracker) -> None:
    _live.discard(capture_or_tracker)


def recording_here() -> bool:
    """Whether a visprof capture is on this thread's dispatch mode stack."""
    return any(mode in _live for mode in python_dispatch._get_current_dispatch_mode_stack())


def _stand_down_in_child() -> None:
    if not _live:  # every fork of the process comes here (subprocesses, multiprocessing): most with nothing to do
        return
    modes = python_dispatch._get_current_dispatch_mode_stack()
    if any(mode in _live for mode in modes):
        for _ in modes:  # the stack is popped from its top; the others go back in their order
            python_dispatch._pop_mode()
        for mode in modes:
            if mode not in _live:
                python_dispatch._push_mode(mode)
    for live in list(_live):
        live.stand_down()
    _live.clear()


os.register_at_fork(after_in_child=_stand_down_in_child)
