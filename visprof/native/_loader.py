"""Loads visprof._C once, lazily, and explains why when it cannot."""
from __future__ import annotations

import functools
from typing import Any

from visprof.base.errors import NativeUnavailableError


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Any, str | None]:
    try:
        from visprof import _C  # noqa: PLC0415 - deliberately lazy
    except ImportError as exc:  # not built, or a library it links is missing
        return None, f"{exc}"
    return _C, None


def native():
    """The visprof._C module; raises NativeUnavailableError if it cannot be loaded."""
    module, why = _load()
    if module is None:
        raise NativeUnavailableError(f"{why}; reinstall with `pip install .` from the visprof source tree")
    return module


def native_available() -> bool:
    return _load()[0] is not None


def native_info() -> dict:
    """What visprof._C was built with and what it finds now: backend ("cuda"/"cpu"), CUDA and
    CUPTI versions built against and loaded, the libcupti path, GPU count and names."""
    module, why = _load()
    if module is None:
        return {"backend": "unavailable", "error": why, "gpu_count": 0, "gpu_names": []}
    return dict(module.native_info())
