"""visprof: where a vision model's GPU time and peak memory go, by operator category.

    import visprof
    result = visprof.profile("vit_base_patch16_224", batch_size=64)
    print(visprof.text_report(result))   # the report `visprof profile` prints
    with visprof.trace(model) as session:
        model(x)
    print(visprof.diff("before.json", "after.json"))  # two saved results side by side

`import visprof` stays cheap: torch, timm and the native extension load on first use.
"""
from visprof.base.lazy_names import lazy_names as _lazy_names

__version__ = "0.1.0"

__all__ = [
    "profile",
    "trace",
    "text_report",
    "diff",
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
    "diff": ("visprof.report.profile_diff", "diff_profiles"),
    "native_info": ("visprof.native", "native_info"),
    "ProfileResult": ("visprof.result", "ProfileResult"),
    "CapturedTrace": ("visprof.native.records", "CapturedTrace"),
    "CategoryTable": ("visprof.attribution.categories", "CategoryTable"),
    "default_table": ("visprof.attribution.categories", "default_table"),
    "VisprofError": ("visprof.base.errors", "VisprofError"),
    "VisprofWarning": ("visprof.base.errors", "VisprofWarning"),
}


# The subpackages the docs name as ``visprof.<name>...`` (``visprof.sweep.open_store(...)``): served
# on first use as the names above are, so that code written as the docs write it runs after a plain
# ``import visprof``.
_SUBPACKAGES = ("analysis", "attribution", "native", "nsight", "report", "store", "sweep")
__getattr__, __dir__ = _lazy_names(__name__, _LAZY, public=_SUBPACKAGES)
