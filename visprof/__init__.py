"""visprof: where a vision model's GPU time and peak memory go, by operator category.

    import visprof
    result = visprof.profile("vit_base_patch16_224", batch_size=64)
    print(visprof.text_report(result))   # the report `visprof profile` prints
    with visprof.trace(model) as session:
        model(x)

`import visprof` stays cheap: torch, timm and the native extension load on first use.
"""
import importlib as _importlib
from typing import Any as _Any

__version__ = "0.1.0"

__all__ = [
    "profile",
    "trace",
    "text_report",
    "native_info",
    "ProfileResult",
    "CapturedTrace",
    "CategoryTable",
    "default_table",
    "VisprofError",
    "VisprofWarning",
]

_LAZY = {
    "profile": ("visprof.profiler", "profile"),
    "trace": ("visprof.trace_session", "trace"),
    "text_report": ("visprof.report.table", "render"),
    "native_info": ("visprof.native", "native_info"),
    "ProfileResult": ("visprof.result", "ProfileResult"),
    "CapturedTrace": ("visprof.native.records", "CapturedTrace"),
    "CategoryTable": ("visprof.attribution.categories", "CategoryTable"),
    "default_table": ("visprof.attribution.categories", "default_table"),
    "VisprofError": ("visprof.base.errors", "VisprofError"),
    "VisprofWarning": ("visprof.base.errors", "VisprofWarning"),
}


# The subpackages the docs name as ``visprof.<name>...`` (``visprof.sweep.open_store(...)``): served
# on first use as the names above are, so that code written as the docs write it runs after a
# plain ``import visprof``.
_SUBPACKAGES = ("analysis", "attribution", "native", "nsight", "report", "store", "sweep")


def __getattr__(name: str) -> _Any:
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"visprof.{name}")  # importing it binds it here too
    if name not in _LAZY:
        raise AttributeError(f"module 'visprof' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(_importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """What a notebook's completion offers after ``visprof.``: the lazy names and subpackages, which
    are not in the module until first used, and the submodules imported meanwhile."""
    loaded = {name for name in globals() if not name.startswith("_")}
    return sorted({*__all__, *_SUBPACKAGES, "__version__", *loaded})
