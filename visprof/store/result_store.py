"""The results store: one SQLite file (WAL), written by one process, read by any.

    from visprof.sweep import open_store
    with open_store("results.db") as store:
        for result in store.results(model="vit_*"):   # ProfileResult objects
            ...
        frame = store.dataframe()                      # flattened rows, one per result (pandas)

Every result goes in with its category and memory rows in one transaction, so a killed
writer leaves whole rows or none. A store is written by one sweep at a time (an exclusive
``flock`` on the file, released by the kernel when the writer dies, however it dies).
A new store's file appears whole, with its schema, or not at all (``store_file.create_store_file``).
The schema is in ``visprof.store.schema`` and docs/sweep.md.

A file that is not a whole visprof store (truncated, overwritten, empty, another program's
SQLite file) is one ``BadInputError`` naming the file and what is wrong with it, whether SQLite
notices at opening or at a later query (``DamagedStoreError``); the file is left as it is.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from visprof.base.errors import BadInputError, OutputWriteError, VisprofWarning
from visprof.base.inputs import SQLITE_HEADER, input_path
from visprof.base.output_paths import refuse_a_name_without_room_for_side_files, sqlite_side_files
from visprof.base.pandas_import import import_pandas
from visprof.base.spelling import option
from visprof.store.flatten import (category_rows, compact_json, flatten_result, kernel_family_category_rows,
                                   kernel_family_rows, memory_rows, normalize_gpu_uuid, op_type_rows)
from visprof.store.category_columns import with_category_columns
from visprof.store.model_filter import model_globs
from visprof.store.cell import Cell, canonical_key, img_size_text
from visprof.store.references import (Reference, differing_references, insert_reference_rows, read_references,
                                      reference_rows, references_frame)
from visprof.store.schema import ADDED_COLUMNS, DDL, IDENTITY, SCHEMA_VERSION
from visprof.store.store_file import create_store_file, create_tables, sql_statements, utc_now
from visprof.store.sqlite_guard import DamagedStoreError, StoreBusyError, StoreConnection, lock_for_writing
from visprof.store.versions import SoftwareVersions

if TYPE_CHECKING:
    from visprof.result import ProfileResult

__all__ = ["ResultStore", "open_store", "Reference", "CellState", "StoreBusyError", "DamagedStoreError", "NotAStoreYet",
           "device_name"]

_FAILURE_KINDS = ("error", "oom", "timeout", "crash")
# SQLite's words for a store that cannot take a write (not a bug in the SQL).
_STORAGE_ERRORS = ("disk is full", "readonly", "disk I/O error", "unable to open", "database is locked")


class NotAStoreYet(BadInputError):
    """An empty file, or an SQLite file without tables, opened for reading: writing would make it
    a new store (a sweep's dry run reads it as one that holds nothing)."""


# A result's or failure's device as ``--gpu`` patterns match it and messages name it: the GPU's
# name, or "cpu" for a CPU row (which has no GPU name), so the name a message offers is one a
# pattern can select, and "*" keeps the CPU rows.
_DEVICE_NAME_SQL = "COALESCE(gpu_name, device_kind)"


def device_name(row: Mapping[str, Any]) -> str:
    """``_DEVICE_NAME_SQL`` of a row read from the results or failures table."""
    return str(row.get("gpu_name") or row.get("device_kind"))


# The tables every store has had since schema version 1 (later ones are created when missing).
_REQUIRED_TABLES = ("meta", "runs", "results", "result_categories", "result_memory", "failures", "references")


def open_store(path: str | Path, *, write: bool = False) -> "ResultStore":
    """Opens a results store: for reading (it must exist), or for writing (created if new)."""
    return ResultStore(path, write=write)


@dataclass(frozen=True)
class CellState:
    """What a store knows of a cell under given versions: "ok", or "failed" with its attempts."""

    status: str  # "ok" | "failed"
    attempts: int = 0
    final: bool = True
    kind: str | None = None  # failures: "error" | "oom" | "timeout" | "crash"


class ResultStore:
    def __init__(self, path: str | Path, *, write: bool = False):
        self.path = input_path(path, "store")  # None or a number: one line, not pathlib's TypeError
        self.write = write
        self._lock_fd: int | None = None
        self.conn: sqlite3.Connection | None = None
        self._check_path()
        try:
            if write:
                create_store_file(self.path)
                self._lock_fd = lock_for_writing(self.path)
            self._connect()
            try:
                self._prepare()
            except sqlite3.OperationalError as exc:
                if write or not _needs_write_access(exc):
                    raise
                self._connect_immutable()
                self._prepare()
        except BaseException:
            self.close()
            raise

    def _connect(self, uri: str | None = None) -> None:
        # absolute: a store named ":memory:" is that file, not an in-memory database that keeps nothing
        self.conn = sqlite3.connect(uri or str(self.path.absolute()), timeout=60, isolation_level=None, factory=StoreConnection,
                                    uri=uri is not None)
        self.conn.store_path = str(self.path)
        self.conn.row_factory = sqlite3.Row

    def _connect_immutable(self) -> None:
        """A WAL store is read through a -shm file beside it, which a reader must be able to create:
        in a folder the user cannot write to (a shared mount, a colleague's runs) even reading
        failed. Such a store is opened as immutable, which needs no file beside it, and is then
        read as it was at its last checkpoint: rows still in its -wal file are left out, and said so."""
        import warnings
        from urllib.parse import quote

        self.conn.close()
        self._connect(f"file:{quote(str(self.path.resolve()))}?immutable=1")
        wal = self.path.with_name(self.path.name + "-wal")
        if _size(wal) > 0:
            warnings.warn(f"{self.path}'s folder is read-only to you, so the rows in {wal.name} (written since the "
                          "store's last checkpoint, or by a sweep still running) are not read", VisprofWarning, stacklevel=2)

    # --- opening ---------------------------------------------------------------------
    def _check_path(self) -> None:
        self.check_path(self.path, self.write)

    @staticmethod
    def check_path(path: str | Path, write: bool) -> None:
        """BadInputError unless ``path`` can hold a store (for writing: a new file can be
        made there, an empty file is there, or a whole visprof store that it reads first);
        writes nothing."""
        from visprof.base.output_paths import check_output_path, refuse_a_store_named_as_a_side_file

        path = Path(path)
        if write:
            check_output_path(path, option("store"))
            refuse_a_name_without_room_for_side_files(path, option("store"))
            refuse_a_store_named_as_a_side_file(path, option("store"))
        elif not path.exists():
            raise BadInputError(f"no such store: {path}")
        elif path.is_dir():
            raise BadInputError(f"{path} is a directory, not a results store")
        elif not path.is_file():  # SQLite reads by seeking, and finds a pipe "unable to open", /dev/zero "empty"
            raise BadInputError(f"{path} is not a file on disk (a pipe or a device?): a results store is an SQLite "
                                "file; give its path")
        if path.is_file() and path.stat().st_size > 0:
            try:
                with open(path, "rb") as fh:
                    header = fh.read(len(SQLITE_HEADER))
            except OSError as exc:
                raise BadInputError(f"cannot read the store {path}: {exc.strerror}") from None
            if header != SQLITE_HEADER:
                raise BadInputError(f"{path} is not a visprof results store (not an SQLite file: damaged, or a file "
                                    "of another kind)")
            if write:  # a damaged or foreign file is refused now, before the sweep's minutes of work
                try:
                    store = ResultStore(path)
                except NotAStoreYet:
                    return  # an SQLite file with no tables yet: it becomes the store
                try:
                    store.check_intact()
                finally:
                    store.close()

    def check_intact(self) -> None:
        """DamagedStoreError where SQLite's quick_check finds damage that opening does not touch
        (a broken index page): a writer learns it before its work, not when it writes its first
        row after a cell's minutes. A tenth of a second on a 140 MB store."""
        rows = self.conn.execute("PRAGMA quick_check(1)").fetchall()  # damage it trips on: DamagedStoreError
        answer = str(rows[0][0]) if rows else "no answer"
        if answer != "ok":
            lines = [line for line in answer.splitlines() if line.strip() and not line.startswith("***")]
            raise DamagedStoreError(self.path, f"SQLite's check: {(lines or [answer])[0]}")

    def _prepare(self) -> None:
        conn = self.conn
        conn.execute("PRAGMA foreign_keys = ON")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "meta" not in tables:
            raise BadInputError(f"{self.path} is an SQLite file but not a visprof results store (no meta table)")
        if not tables:
            if not self.write:
                empty = self.path.stat().st_size == 0
                raise NotAStoreYet(f"{self.path} is {'empty (0 bytes)' if empty else 'an SQLite file with no tables'}, "
                                "not a visprof results store")
            # An empty file someone made (a new store is made whole by create_store_file): it becomes the store.
            conn.execute("PRAGMA journal_mode = WAL")
            with self.transaction():
                create_tables(conn)
        version = self.schema_version
        if version < 1:  # no visprof wrote it: version 0 (or below) was read as if it were the current one
            raise BadInputError(f"{self.path} has store schema version {version}, which no visprof writes (versions "
                                "start at 1): the file is damaged or not a visprof results store")
        if version > SCHEMA_VERSION:
            raise BadInputError(f"{self.path} has store schema version {version}; this visprof reads "
                                f"version {SCHEMA_VERSION} (upgrade visprof)")
        missing = [t for t in _REQUIRED_TABLES if t not in tables]
        if tables and missing and not self.write:
            raise BadInputError(f"{self.path} is not a visprof results store (it has a meta table but no "
                                f"{', '.join(missing)} table{'s' if len(missing) > 1 else ''})")
        if self.write:
            conn.execute("PRAGMA journal_mode = WAL")
            with self.transaction():  # tables and columns added within the schema version
                for statement in sql_statements(DDL):
                    conn.execute(statement)
                for table, column, sql_type in ADDED_COLUMNS:
                    if column not in self.columns(table):
                        conn.execute(f'ALTER TABLE "{table}" ADD COLUMN "{column}" {sql_type}')
            # FULL: a commit is on disk before the next cell is recorded; at seconds per cell
            # the fsync costs nothing, and a power cut loses no committed row.
            conn.execute("PRAGMA synchronous = FULL")

    @property
    def schema_version(self) -> int:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError as exc:  # e.g. "no such column: value": another program's meta table
            raise BadInputError(f"{self.path} is an SQLite file but not a visprof results store (its meta table "
                                f"is not visprof's: {exc})") from None
        if row is None:
            raise BadInputError(f"{self.path} is not a visprof results store (no schema version)")
        try:
            return int(row[0])
        except (TypeError, ValueError):
            raise BadInputError(f"{self.path} is not a visprof results store (schema version {row[0]!r} is not "
                                "a number)") from None

    def meta(self) -> dict[str, str]:
        return {row[0]: row[1] for row in self.conn.execute("SELECT key, value FROM meta")}

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        # After the connection: closing any descriptor of the file drops SQLite's POSIX locks.
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __repr__(self) -> str:
        if self.conn is None:
            return f"<ResultStore {self.path}: closed>"
        counts = ", ".join(f"{self.count(table):,} {table}" for table in ("results", "failures", "references", "runs"))
        return f"<ResultStore {self.path}{'' if self.write else ' (read-only)'}: {counts}>"

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; ROLLBACK on any exception, Ctrl-C included. A full
        disk or a store made read-only meanwhile becomes OutputWriteError (one line)."""
        self._require_write()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if any(text in str(exc) for text in _STORAGE_ERRORS):
                # the store is there, with every row committed before this one ("no file was created" was wrong)
                raise OutputWriteError(self.path, str(exc), previous_kept=True,
                                       left=f"the rows stored before are kept in it; {self._what_to_do(exc)} "
                                            "and run the same command again to go on") from exc
            raise

    def _what_to_do(self, exc: sqlite3.OperationalError) -> str:
        """The advice for a write the store refused, by its cause."""
        if "locked" in str(exc):  # another program's transaction held it past the 60 s wait
            return ("another program (an SQLite shell or browser, a script) holds a transaction on it: "
                    "end that transaction")
        side = [f for f in sqlite_side_files(self.path) if f.exists() and not os.access(f, os.W_OK)]
        if side and os.access(self.path, os.W_OK):
            # SQLite makes them with the store's mode: a read while the store was read-only leaves them so
            return (f"{', '.join(f.name for f in side)} beside it read-only (left by a read while the store was): "
                    "make them writable too")
        return "make room (or make it writable)"

    def _require_write(self) -> None:
        if not self.write:
            raise RuntimeError("this store was opened for reading; open_store(path, write=True) to write")

    # --- runs ------------------------------------------------------------------------
    def start_run(self, argv: str, executor: str, planned: int, skipped: int) -> int:
        with self.transaction() as conn:
            # A writer holds the store's lock, so a run still "running" has no driver left: one
            # killed outright (kill -9, a lost machine) stayed "running" with 0 cells done forever.
            conn.execute("UPDATE runs SET status = 'killed', "
                         "cells_done = (SELECT COUNT(*) FROM results WHERE results.run_id = runs.id), "
                         "cells_failed = (SELECT COUNT(*) FROM failures WHERE failures.run_id = runs.id) "
                         "WHERE status = 'running'")
            cursor = conn.execute(
                "INSERT INTO runs (started_at, status, argv, host, executor, cells_planned, cells_skipped,"
                " cells_done, cells_failed) VALUES (?, 'running', ?, ?, ?, ?, ?, 0, 0)",
                (utc_now(), argv, socket.gethostname(), executor, planned, skipped))
            return int(cursor.lastrowid)

    def end_run(self, run_id: int, status: str, done: int, failed: int, elapsed_s: float,
                startup_s: float | None = None) -> None:
        """``startup_s``: from the run's start until its first worker was ready."""
        with self.transaction() as conn:
            conn.execute("UPDATE runs SET ended_at = ?, status = ?, cells_done = ?, cells_failed = ?, elapsed_s = ?,"
                         " startup_s = ? WHERE id = ?", (utc_now(), status, done, failed, elapsed_s, startup_s, run_id))

    def runs(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self.conn.execute("SELECT * FROM runs ORDER BY id")]

    # --- writing results and failures ------------------------------------------------
    def add_result(self, cell: Cell, doc: Mapping[str, Any], *, run_id: int | None = None,
                   batch_sizes_tried: Iterable[int] = (), wall_s: float | None = None, attempts: int = 1,
                   host: str | None = None) -> int | None:
        """Records one result (a ``ProfileResult.to_dict()``) of ``cell``, with its category and
        memory rows, in one transaction; clears the cell's failure on the same device.

        Returns the new row id, or None when the store already holds this (cell, GPU,
        versions): rows are never overwritten."""
        identity = _identity(cell, doc)
        row = {
            **_cell_columns(cell),
            **identity,
            "device_kind": "gpu" if doc.get("gpu") is not None else "cpu",
            "gpu_name": (doc.get("gpu") or {}).get("name"),
            "host": host,
            **flatten_result(doc),
            "batch_sizes_tried": compact_json(list(batch_sizes_tried)),
            "wall_s": wall_s,
            "attempts": attempts,
            "run_id": run_id,
            "result_json": zlib.compress(compact_json(doc).encode(), 6),
        }
        with self.transaction() as conn:
            names = list(row)
            cursor = conn.execute(
                f"INSERT OR IGNORE INTO results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [row[n] for n in names])
            if cursor.rowcount == 0:
                return None
            result_id = int(cursor.lastrowid)
            _insert_many(conn, "result_categories", [{"result_id": result_id, **r} for r in category_rows(doc)])
            _insert_many(conn, "result_memory", [{"result_id": result_id, **r} for r in memory_rows(doc)])
            _insert_many(conn, "result_op_types", [{"result_id": result_id, **r} for r in op_type_rows(doc)])
            _insert_many(conn, "result_kernel_families",
                         [{"result_id": result_id, **r} for r in kernel_family_rows(doc)])
            _insert_many(conn, "result_kernel_family_categories",
                         [{"result_id": result_id, **r} for r in kernel_family_category_rows(doc)])
            conn.execute(f"DELETE FROM failures WHERE {' AND '.join(f'{c} = ?' for c in IDENTITY)}",
                         [identity[c] for c in IDENTITY])
        return result_id

    def add_failure(self, cell: Cell, *, versions: SoftwareVersions, gpu: Mapping[str, Any] | None, kind: str,
                    error_class: str, message: str, detail: str = "", batch_sizes_tried: Iterable[int] = (),
                    attempts: int = 1, final: bool = True, run_id: int | None = None,
                    host: str | None = None, cpu: Mapping[str, Any] | None = None) -> None:
        """Records a failed attempt (or ``attempts`` of them) at ``cell``; attempts add up
        across runs. ``gpu`` is the device's identity (None: the CPU, ``cpu`` its identity,
        ``hardware.cpu_identity``); ``final`` says that the cell is not to be tried again."""
        if kind not in _FAILURE_KINDS:
            raise ValueError(f"failure kind must be one of {_FAILURE_KINDS}, got {kind!r}")
        now = utc_now()
        row = {
            **_cell_columns(cell),
            "cell_key": cell.key,
            "gpu_uuid": normalize_gpu_uuid(gpu, cpu),
            **versions.columns(),
            "device_kind": "gpu" if gpu is not None else "cpu",
            "gpu_name": (gpu or {}).get("name"),
            "host": host,
            "kind": kind,
            "error_class": error_class,
            "message": message,
            "detail": detail or None,
            "batch_sizes_tried": compact_json(list(batch_sizes_tried)),
            "attempts": attempts,
            "final": int(final),
            "first_at": now,
            "last_at": now,
            "run_id": run_id,
        }
        names = list(row)
        updated = [n for n in names if n not in IDENTITY and n not in ("first_at", "attempts")]
        with self.transaction() as conn:
            conn.execute(
                f"INSERT INTO failures ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
                f" ON CONFLICT ({', '.join(IDENTITY)}) DO UPDATE SET attempts = attempts + excluded.attempts, "
                + ", ".join(f"{n} = excluded.{n}" for n in updated),
                [row[n] for n in names])

    # --- what is done ----------------------------------------------------------------
    def cell_states(self, versions: SoftwareVersions, devices: Iterable[str] | None = None,
                    gpu_names: Iterable[str] = ()) -> dict[str, CellState]:
        """{cell key: state} of the cells measured (or failed) under ``versions`` on one of
        ``devices`` (normalized GPU uuids or "cpu"; None: on any device) or on a GPU named as
        one of ``gpu_names`` (another card of the same model: the store resumed on another
        machine). A result wins over a failure of the same cell on another device. Keys are read
        as ``Cell.key`` writes them now (``canonical_key``), so rows of older keys count."""
        states: dict[str, CellState] = {}
        where, params = _version_filter(versions, devices, gpu_names)
        for row in self.conn.execute(
                f"SELECT cell_key, attempts, final, kind FROM failures WHERE {where} ORDER BY last_at", params):
            states[canonical_key(row["cell_key"])] = CellState("failed", int(row["attempts"]), bool(row["final"]),
                                                               row["kind"])
        for row in self.conn.execute(f"SELECT cell_key, attempts FROM results WHERE {where}", params):
            states[canonical_key(row["cell_key"])] = CellState("ok", int(row["attempts"] or 1), True, None)
        return states

    # --- reading ---------------------------------------------------------------------
    def rows(self, model: str | None = None, gpu: str | None = None) -> list[dict[str, Any]]:
        """The flattened result rows (every column but the compressed result), oldest first.
        ``model`` and ``gpu`` (the GPU's name, "cpu" for the CPU's rows) filter with shell
        patterns such as ``vit_*``."""
        columns = [c for c in self.columns("results") if c != "result_json"]
        where, params = _pattern_filter(model, gpu)
        query = f"SELECT {', '.join(columns)} FROM results WHERE {where} ORDER BY id"
        return [dict(row) for row in self.conn.execute(query, params)]

    def results(self, model: str | None = None, gpu: str | None = None) -> Iterator["ProfileResult"]:
        """The stored results as ``ProfileResult`` objects, oldest first (filters as ``rows``)."""
        from visprof.result import ProfileResult

        for doc in self.result_documents(model, gpu):
            yield ProfileResult.from_dict(doc)

    def result_documents(self, model: str | None = None, gpu: str | None = None) -> Iterator[dict[str, Any]]:
        """The stored results as the dicts ``ProfileResult.to_dict()`` made (filters as ``rows``)."""
        where, params = _pattern_filter(model, gpu)
        for row in self.conn.execute(f"SELECT id, result_json FROM results WHERE {where} ORDER BY id", params):
            try:
                doc = json.loads(zlib.decompress(row[1]))
            except (zlib.error, TypeError, ValueError) as exc:  # ValueError: JSON or UTF-8
                raise DamagedStoreError(self.path, f"result {row[0]} cannot be read: {exc}") from None
            yield doc

    def category_rows(self) -> list[dict[str, Any]]:
        """result_categories joined with each result's identity columns (long form)."""
        query = ("SELECT r.id AS result_id, r.model, r.gpu_name, r.gpu_uuid, r.cell_key, c.category, c.subcategory,"
                 " c.time_ms, c.share, c.kernel_count, c.flops, c.tflops, c.live_bytes_at_peak,"
                 " c.transient_peak_bytes FROM result_categories c JOIN results r ON r.id = c.result_id"
                 " ORDER BY r.id, c.rowid")
        return [dict(row) for row in self.conn.execute(query)]

    def op_type_rows(self) -> list[dict[str, Any]]:
        """result_op_types joined with each result's identity columns (long form)."""
        return self._long_rows("result_op_types", ("op_type", "category", "subcategory", "calls", "kernels", "time_ms",
                                                   "share", "gflop", "mb"))

    def kernel_family_rows(self) -> list[dict[str, Any]]:
        """result_kernel_families joined with each result's identity columns (long form)."""
        return self._long_rows("result_kernel_families", ("family", "category", "subcategory", "calls", "time_ms",
                                                          "share", "gflop", "mb", "blocks", "threads"))

    def kernel_family_category_rows(self) -> list[dict[str, Any]]:
        """result_kernel_family_categories (each kernel family's time by the category of its
        kernels) joined with each result's identity columns (long form)."""
        return self._long_rows("result_kernel_family_categories", ("family", "category", "subcategory", "time_ms"))

    def _long_rows(self, table: str, columns: Sequence[str]) -> list[dict[str, Any]]:
        """Rows of a per-result table; a column the store does not have yet (a store written
        before it was added, opened read-only) reads as None."""
        present = set(self.columns(table))
        if not present:  # a store written before the table was added, opened read-only
            return []
        selected = ", ".join(f't."{c}"' if c in present else f'NULL AS "{c}"' for c in columns)
        query = (f"SELECT r.id AS result_id, r.model, r.gpu_name, r.gpu_uuid, r.cell_key, {selected}"
                 f" FROM {table} t JOIN results r ON r.id = t.result_id ORDER BY r.id, t.rowid")
        return [dict(row) for row in self.conn.execute(query)]

    def failures(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self.conn.execute("SELECT * FROM failures ORDER BY id")]

    def count(self, table: str = "results") -> int:
        if table not in ("results", "failures", "runs", "references"):
            raise ValueError(f"unknown table {table!r}")
        return int(self.conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])

    def device_names(self) -> list[str]:
        """The GPU names (or "cpu") of the store's results and failures, sorted."""
        rows = self.conn.execute(f"SELECT {_DEVICE_NAME_SQL} FROM results UNION SELECT {_DEVICE_NAME_SQL} FROM failures")
        return sorted(str(name) for (name,) in rows if name)

    def table_rows(self, model: str | None = None, gpu: str | None = None,
                   categories: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
        """(columns, rows): the flattened rows and, with ``categories``, one column per
        category and figure (``time_ms.attention``, ``share.attention``, ``flops.attention``,
        ``live_bytes.attention``, ``reserved_bytes.attention``; sub-categories summed)."""
        columns = [c for c in self.columns("results") if c != "result_json"]
        rows = self.rows(model, gpu)
        if not categories or not rows:
            return columns, rows
        return columns + with_category_columns(self.conn, rows), rows

    def dataframe(self, model: str | None = None, gpu: str | None = None, categories: bool = True):
        """A pandas DataFrame of ``table_rows``: one row per result."""
        pd = import_pandas("store.dataframe()")
        columns, rows = self.table_rows(model, gpu, categories)
        return pd.DataFrame(rows, columns=columns)

    def columns(self, table: str) -> list[str]:
        """The column names of a table of the store."""
        return [row[1] for row in self.conn.execute(f'PRAGMA table_info("{table}")')]

    # --- references (visprof.store.references) --------------------------------------
    def add_references(self, references: Iterable[Reference | Mapping[str, Any]]) -> int:
        """Adds measurements made elsewhere, in one transaction; returns how many were new
        (a row with the same source, GPU, model, size, batch and precision is kept as it was)."""
        rows = reference_rows(references)
        if not rows:
            return 0
        with self.transaction() as conn:
            return insert_reference_rows(conn, rows)

    def differing_references(self, references: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], float]]:
        """(reference, stored samples/s) for each of ``references`` the store holds already (same
        source, GPU, model, size, batch and precision) with another throughput: add_references
        keeps the stored one."""
        return differing_references(self.conn, references)

    def references(self, gpu_name: str | None = None, model: str | None = None,
                   source: str | None = None) -> list[Reference]:
        """Stored references; each filter is a shell pattern (``*4090*``, ``vit_*``)."""
        return read_references(self.conn, gpu_name=gpu_name, model=model, source=source)

    def references_dataframe(self, **filters):
        """A pandas DataFrame of ``references(**filters)``: one row per published measurement."""
        return references_frame(self.references(**filters))


# --- helpers -------------------------------------------------------------------------------

def _insert_many(conn: sqlite3.Connection, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    names = list(rows[0])
    conn.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                     [[row[n] for n in names] for row in rows])


def _cell_columns(cell: Cell) -> dict[str, Any]:
    return {
        "cell_key": cell.key,
        "model": cell.model,
        "batch_size_requested": cell.batch_size,
        "img_size_requested": img_size_text(cell.img_size),
        "precision": cell.precision,
        "channels_last": int(cell.channels_last),
        "passes": ",".join(cell.passes),
        "options": compact_json(dict(cell.options)),
    }


def _identity(cell: Cell, doc: Mapping[str, Any]) -> dict[str, str]:
    return {"cell_key": cell.key, "gpu_uuid": normalize_gpu_uuid(doc.get("gpu"), (doc.get("environment") or {}).get("cpu")),
            **SoftwareVersions.of_result(doc).columns()}


def _version_filter(versions: SoftwareVersions, devices: Iterable[str] | None,
                    gpu_names: Iterable[str] = ()) -> tuple[str, list[Any]]:
    columns = versions.columns()
    clauses = [f"{name} = ?" for name in columns]
    params: list[Any] = list(columns.values())
    if devices is not None:
        devices, gpu_names = list(devices), [name for name in gpu_names if name]
        on_device = f"gpu_uuid IN ({', '.join('?' * len(devices))})" if devices else "0"
        of_model = f"gpu_name IN ({', '.join('?' * len(gpu_names))})" if gpu_names else "0"
        clauses.append(f"({on_device} OR {of_model})")
        params += devices + gpu_names
    return " AND ".join(clauses), params


def _pattern_filter(model: str | Sequence[str] | None, gpu: str | None) -> tuple[str, list[Any]]:
    clauses, params = ["1"], []
    globs = model_globs(model)
    if globs is not None:
        # whatever the case, as matches_model: lower() on both sides of SQLite's case-sensitive GLOB
        clauses.append("(" + " OR ".join(["lower(model) GLOB ?"] * len(globs) or ["0"]) + ")")
        params += [_as_sql_glob(glob.lower()) for glob in globs]
    if gpu is not None:
        clauses.append(f"{_DEVICE_NAME_SQL} GLOB ?")
        params.append(_as_sql_glob(gpu))
    return " AND ".join(clauses), params


def _as_sql_glob(pattern: str) -> str:
    """A shell-style pattern (fnmatch's, as failures, references and sweeps match them) in SQLite's
    GLOB, which negates a set with [^...] where the shell writes [!...]: GLOB read '[!m]*' as
    'starts with ! or m', the rows the user meant to leave out."""
    return pattern.replace("[!", "[^")


def _size(path: Path) -> int:
    """The file's size; 0 where there is none, or none can be (a store's -wal, where the store's name
    is so long that its -wal's is too long for the file system)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _needs_write_access(exc: sqlite3.OperationalError) -> bool:
    """The errors of a WAL store read where the reader cannot create its -shm file."""
    message = str(exc)
    return "readonly database" in message or "unable to open database file" in message

