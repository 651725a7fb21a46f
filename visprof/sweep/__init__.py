"""visprof sweep: many models x configurations x GPUs into one resumable results store.

    from visprof.sweep import run_sweep, open_store
    summary = run_sweep(["resnet50", "vit_*"], store="results.db", limit=20)
    with open_store("results.db") as store:
        frame = store.dataframe()

Rooms: ``selection`` (which models), ``plan`` (the cells), ``store``/``schema``/``flatten``
(the SQLite store), ``worker``/``execute`` (one cell in a worker process), ``local`` (a
worker per GPU), ``ray_exec`` (Ray tasks), ``run`` (the driver), ``export``, ``summary``.
See docs/sweep.md.
"""
from __future__ import annotations

import importlib
from typing import Any

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
    "Reference": ("visprof.store.result_store", "Reference"),
    "SweepPlan": ("visprof.sweep.plan", "SweepPlan"),
    "Cell": ("visprof.sweep.plan", "Cell"),
    "SweepSummary": ("visprof.sweep.summary", "SweepSummary"),
    "select_models": ("visprof.sweep.selection", "select_models"),
    "export_store": ("visprof.store.export", "export_store"),
    "SCHEMA_VERSION": ("visprof.store.schema", "SCHEMA_VERSION"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'visprof.sweep' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value
