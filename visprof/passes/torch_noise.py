"""Silence the torch messages that visprof's own doing causes and that tell the user nothing.

* ``Using torch.compile(module) when there are global hooks on modules``: the attributed
  pass's module tracker installs global hooks, and a compiled model is called inside them.
  visprof knows; the tracker names the extra ``OptimizedModule`` like any other module.
* ``No CUDA runtime is found, using CUDA_HOME=...`` (torch.utils.cpp_extension's logger):
  Inductor compiling for the CPU on a machine that has a CUDA toolkit but no GPU.

Only these exact messages are dropped, and only while ``quiet_torch_noise()`` is active;
every other warning and log line goes through. Its filters are added and then taken out one by
one, not by ``warnings.catch_warnings()``, which puts the whole filter list back: inside a
``visprof.trace()`` block the user's own code runs, and the filters it set there would have gone.
"""
from __future__ import annotations

import contextlib
import logging
import re
import warnings
from typing import Iterator

__all__ = ["quiet_torch_noise"]

_WARNINGS = (r"Using `torch\.compile\(module\)` when there are global hooks",)
_LOGS = {"torch.utils.cpp_extension": re.compile(r"^No CUDA runtime is found")}


class _DropMatching(logging.Filter):
    def __init__(self, pattern: re.Pattern):
        super().__init__()
        self.pattern = pattern

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.search(str(record.msg))


@contextlib.contextmanager
def quiet_torch_noise() -> Iterator[None]:
    filters = [(logging.getLogger(name), _DropMatching(pattern)) for name, pattern in _LOGS.items()]
    added = []
    try:
        for message in _WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
            added.append(warnings.filters[0])
        for logger, drop in filters:
            logger.addFilter(drop)
        yield
    finally:
        for logger, drop in filters:
            logger.removeFilter(drop)
        for entry in added:
            with contextlib.suppress(ValueError):  # the user's code may have reset the filters meanwhile
                warnings.filters.remove(entry)
        getattr(warnings, "_filters_mutated", lambda: None)()  # the C module's cache of the list
