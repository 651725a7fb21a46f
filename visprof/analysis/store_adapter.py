"""The results store, as the analysis commands use it.

The store is the sweep's (``visprof.store.result_store``: one SQLite file). The analysis needs three
things of it:

    with open_store(path, write=True) as store:
        added = store.add_references(rows)       # reference rows (dicts; timm_csv's shape) -> number new
    with open_store(path) as store:
        store.references(gpu_name=None, model=None, source=None)   # -> Reference rows
        store.results(model=None, gpu=None)                        # -> iterator of ProfileResult
"""
from __future__ import annotations

import dataclasses
from typing import Any

from visprof.base.output_paths import is_sqlite_file
from visprof.store.result_store import open_store

__all__ = ["open_store", "is_sqlite_file", "reference_dict"]


def reference_dict(ref: Any) -> dict[str, Any]:
    """A reference row as a plain dict, whether the store gave an object or a dict."""
    if dataclasses.is_dataclass(ref):
        return dataclasses.asdict(ref)
    return dict(ref)
