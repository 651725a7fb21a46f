"""CSV export of a ``ProfileResult``'s category and module rows (for spreadsheets)."""
from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from visprof.base.outputs import atomic_output
from visprof.result import CategoryRow, ModuleRow, ProfileResult


def _write(path: str | Path, row_type: type, rows: list, result: ProfileResult, kind: str) -> None:
    # model/measurement columns make files from many runs concatenable
    names = ["model", "measurement", *(f.name for f in dataclasses.fields(row_type))]
    with atomic_output(path, kind=kind) as fh:  # newline="" already: csv writes its own line ends
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for row in rows:
            writer.writerow({"model": result.model.name, "measurement": result.measurement, **dataclasses.asdict(row)})


def write_categories_csv(result: ProfileResult, path: str | Path) -> None:
    """One line per (category, sub-category); empty cells for None."""
    _write(path, CategoryRow, result.categories, result, "categories-csv")


def write_modules_csv(result: ProfileResult, path: str | Path) -> None:
    _write(path, ModuleRow, result.modules, result, "modules-csv")
