"""visprof._aten_observer: the C++ RecordFunction observer that links kernels to ops in the
attributed pass without Python per op (csrc/aten_observer/aten_observer.cpp).

RecordFunction is torch C++ API with no stable ABI, so the module is compiled on first use
against the torch in this process (visprof/native/runtime_module.py). Without a compiler, or
with ``VISPROF_ATEN_OBSERVER=0``, ``load_observer()`` says why and visprof captures ops with
its Python dispatch mode instead (same results, more overhead per op).
"""
from __future__ import annotations

import functools
import os
from typing import Any

from visprof.native.runtime_module import RuntimeModule

OBSERVER = RuntimeModule("_visprof_aten_observer", "aten_observer", purpose="ATen observer",
                         optional_define="VISPROF_RECORD_FUNCTION_FN")


@functools.lru_cache(maxsize=1)
def load_observer() -> tuple[Any, str | None]:
    """(module, None), or (None, why it is unavailable)."""
    if os.environ.get("VISPROF_ATEN_OBSERVER", "1") in ("0", ""):
        return None, "VISPROF_ATEN_OBSERVER=0"
    return OBSERVER.load()
