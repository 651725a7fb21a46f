"""The results store, as the analysis commands use it: one small interface, one adapter.

The store itself is the sweep's (``visprof.sweep.store``: one SQLite file). The analysis
needs four things of it, and nothing else:

    with open_store(path, write=True) as store:
        added = store.add_references(rows)       # reference rows (dicts; timm_csv's shape) -> number new
    with open_store(path) as store:
        store.references(gpu_name=None, model=None, source=None)   # -> rows (objects or dicts)
        store.results(model=None, gpu=None)                        # -> iterator of ProfileResult

``open_store`` returns the sweep's ``ResultStore`` where ``visprof.sweep`` is installed. Until
then (this branch was written beside it) it returns ``FallbackStore``: the same file format
for the two tables the analysis touches (``"references"``, and ``results`` with its
zlib-compressed ``result_json`` column), so a store written by either can be read by the
other. At merge, the fallback can go: ``open_store`` already prefers the sweep's.
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol

from visprof.errors import BadInputError

SQLITE_HEADER = b"SQLite format 3\x00"
REFERENCE_COLUMNS = ("source", "gpu_name", "model", "img_size", "batch_size", "precision", "samples_per_s",
                     "step_time_ms", "param_count_m", "gmacs", "macts_m")
_REFERENCES_DDL = """
CREATE TABLE IF NOT EXISTS "references" (
    id            INTEGER PRIMARY KEY,
    source        TEXT NOT NULL,
    gpu_name      TEXT NOT NULL,
    model         TEXT NOT NULL,
    img_size      INTEGER NOT NULL,
    batch_size    INTEGER NOT NULL,
    precision     TEXT NOT NULL,
    samples_per_s REAL,
    step_time_ms  REAL,
    param_count_m REAL,
    gmacs         REAL,
    macts_m       REAL,
    extra         TEXT,
    imported_at   TEXT NOT NULL,
    UNIQUE (source, gpu_name, model, img_size, batch_size, precision)
);
CREATE INDEX IF NOT EXISTS references_model ON "references"(model);
"""


class AnalysisStore(Protocol):
    """What the analysis commands need of a results store (see the module doc)."""

    def add_references(self, references: Iterable[Mapping[str, Any]]) -> int: ...

    def references(self, gpu_name: str | None = None, model: str | None = None,
                   source: str | None = None) -> list[Any]: ...

    def results(self, model: str | None = None, gpu: str | None = None) -> Iterator[Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> "AnalysisStore": ...

    def __exit__(self, *exc) -> None: ...


def is_sqlite_file(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def open_store(path: str | Path, *, write: bool = False) -> AnalysisStore:
    """The results store at ``path`` (created when ``write`` and new)."""
    try:
        from visprof.sweep.store import open_store as sweep_open_store
    except ImportError:
        return FallbackStore(path, write=write)
    return sweep_open_store(path, write=write)


def reference_dict(ref: Any) -> dict[str, Any]:
    """A reference row as a plain dict, whether the store gave an object or a dict."""
    if dataclasses.is_dataclass(ref):
        return dataclasses.asdict(ref)
    return dict(ref)


class FallbackStore:
    """The two tables of the sweep's store that the analysis reads and writes (module doc)."""

    def __init__(self, path: str | Path, *, write: bool = False):
        self.path = Path(path)
        self.write = write
        self.conn: sqlite3.Connection | None = None
        _check_store_path(self.path, write)
        self.conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        try:
            if write:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.executescript(_REFERENCES_DDL)
        except sqlite3.DatabaseError as exc:
            self.close()
            raise BadInputError(f"{self.path} is not a usable results store: {exc}") from None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __enter__(self) -> "FallbackStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _tables(self) -> set[str]:
        return {row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def add_references(self, references: Iterable[Mapping[str, Any]]) -> int:
        if not self.write:
            raise BadInputError(f"{self.path} was opened for reading")
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        rows = []
        for ref in references:
            values = reference_dict(ref)
            if not values.get("model") or not values.get("gpu_name") or not values.get("source"):
                raise BadInputError(f"a reference needs a source, a GPU name and a model: {values}")
            rows.append([values.get(c) for c in REFERENCE_COLUMNS] + [json.dumps(values.get("extra") or {}), now])
        if not rows:
            return 0
        names = [*REFERENCE_COLUMNS, "extra", "imported_at"]
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            before = self.conn.total_changes
            self.conn.executemany(f'INSERT OR IGNORE INTO "references" ({", ".join(names)}) '
                                  f'VALUES ({", ".join("?" * len(names))})', rows)
            added = self.conn.total_changes - before
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return added

    def references(self, gpu_name: str | None = None, model: str | None = None,
                   source: str | None = None) -> list[dict[str, Any]]:
        import fnmatch

        if "references" not in self._tables():
            return []
        out = []
        for row in self.conn.execute('SELECT * FROM "references" ORDER BY id'):
            values = {c: row[c] for c in REFERENCE_COLUMNS}
            if any(p is not None and not fnmatch.fnmatchcase(str(values[c]), p)
                   for c, p in (("gpu_name", gpu_name), ("model", model), ("source", source))):
                continue
            values["extra"] = json.loads(row["extra"] or "{}")
            out.append(values)
        return out

    def results(self, model: str | None = None, gpu: str | None = None) -> Iterator[Any]:
        import fnmatch

        from visprof.result import ProfileResult

        tables = self._tables()
        if "results" not in tables:
            return
        columns = {row[1] for row in self.conn.execute('PRAGMA table_info("results")')}
        if "result_json" not in columns:
            raise BadInputError(f"{self.path}: its results table has no result_json column; not a visprof store")
        for row in self.conn.execute("SELECT result_json FROM results ORDER BY id"):
            blob = row[0]
            doc = json.loads(zlib.decompress(blob) if isinstance(blob, bytes) else blob)
            result = ProfileResult.from_dict(doc)
            if model is not None and not fnmatch.fnmatchcase(result.model.name, model):
                continue
            if gpu is not None and not fnmatch.fnmatchcase(str((result.gpu or {}).get("name")), gpu):
                continue
            yield result


def _check_store_path(path: Path, write: bool) -> None:
    from visprof.outputs import check_output_path

    if write:
        check_output_path(path, "--store")
    elif not path.exists():
        raise BadInputError(f"no such store: {path}")
    elif path.is_dir():
        raise BadInputError(f"{path} is a directory, not a results store")
    if path.is_file() and path.stat().st_size > 0 and not is_sqlite_file(path):
        raise BadInputError(f"{path} is not a visprof results store (not an SQLite file)")


__all__ = ["AnalysisStore", "FallbackStore", "REFERENCE_COLUMNS", "is_sqlite_file", "open_store", "reference_dict"]
