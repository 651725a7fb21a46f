"""visprof sweep: many models x configurations x GPUs into one resumable results store.

    from visprof.sweep import run_sweep, open_store
    summary = run_sweep(["resnet50", "vit_*"], store="results.db", limit=20)
    with open_store("results.db") as store:
        frame = store.dataframe()

Modules: ``selection`` (which models), ``plan`` (the cells), ``worker``/``execute`` (one cell in a
worker process), ``local`` (a worker per GPU), ``ray_exec`` (Ray tasks), ``placement`` (which of
those, on which devices), ``options`` (a sweep's arguments checked before it starts), ``run`` (the
driver), ``summary``, ``progress_bar``, ``tasks``. The store it writes is ``visprof.store``.
See docs/sweep.md.
"""
from visprof.base.lazy_names import lazy_names as _lazy_names

__all__ = [
    "run_sweep",
    "open_store",
    "ResultStore",
    "Reference",
    "SweepPlan",
    "Cell",
    "SweepSummary",
    "select_models",
    "export_store",
    "SCHEMA_VERSION",
]

_LAZY = {
    "run_sweep": ("visprof.sweep.run", "run_sweep"),
    "open_store": ("visprof.store.result_store", "open_store"),
    "ResultStore": ("visprof.store.result_store", "ResultStore"),
    "Reference": ("visprof.store.references", "Reference"),
    "SweepPlan": ("visprof.sweep.plan", "SweepPlan"),
    "Cell": ("visprof.sweep.plan", "Cell"),
    "SweepSummary": ("visprof.sweep.summary", "SweepSummary"),
    "select_models": ("visprof.sweep.selection", "select_models"),
    "export_store": ("visprof.store.export", "export_store"),
    "SCHEMA_VERSION": ("visprof.store.schema", "SCHEMA_VERSION"),
}


__getattr__, __dir__ = _lazy_names(__name__, _LAZY)
