"""Nsight integration: visprof's NVTX scheme, Nsight Systems import, Nsight Compute per category.

* ``nvtx_scheme``: the names and nesting of visprof's NVTX ranges (docs/nsight.md).
* ``nvtx_only``: run a model with visprof's ranges only (no CUPTI), its measured iterations
  between cudaProfilerStart/Stop, for ``nsys --capture-range=cudaProfilerApi`` and
  ``ncu --profile-from-start off``.
* ``nsys_import``: attribute an ``nsys export --type sqlite`` file to visprof's categories.
* ``ncu_run``: Nsight Compute counters per category, folded into a ProfileResult.

Heavy modules (torch, sqlite readers) load on first use of the functions below.
"""
from visprof.base.lazy_names import lazy_names as _lazy_names

_LAZY = {
    "run_nvtx_only": ("visprof.nsight.nvtx_only", "run_nvtx_only"),
    "import_nsys": ("visprof.nsight.nsys_import", "import_nsys"),
    "profile_with_ncu": ("visprof.nsight.ncu_run", "profile_with_ncu"),
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = _lazy_names(__name__, _LAZY)
