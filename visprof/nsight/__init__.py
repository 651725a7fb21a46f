"""Nsight integration: visprof's NVTX scheme, Nsight Systems import, Nsight Compute per category.

* ``nvtx_scheme``: the names and nesting of visprof's NVTX ranges (docs/nsight.md).
* ``nvtx_only``: run a model with visprof's ranges only (no CUPTI), its measured iterations
  between cudaProfilerStart/Stop, for ``nsys --capture-range=cudaProfilerApi`` and
  ``ncu --profile-from-start off``.
* ``nsys_import``: attribute an ``nsys export --type sqlite`` file to visprof's categories.
* ``ncu_run``: Nsight Compute counters per category, folded into a ProfileResult.

Heavy modules (torch, sqlite readers) load on first use of the functions below.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "run_nvtx_only": "visprof.nsight.nvtx_only",
    "import_nsys": "visprof.nsight.nsys_import",
    "profile_with_ncu": "visprof.nsight.ncu_run",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'visprof.nsight' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
