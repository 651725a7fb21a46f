"""A store's file: made whole or not at all, with its schema and meta rows.

``create_store_file(path)`` is how every new store comes to exist: a file that appears at its
name already holds the schema, so a Ctrl-C, a kill or a full disk while a store is made leaves
either no file or a whole, empty store, never an SQLite file without tables. ``ResultStore``
opens what this makes.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from visprof.base.errors import OutputWriteError
from visprof.base.output_paths import describe_os_error, sibling_name
from visprof.store.schema import DDL, SCHEMA_VERSION

__all__ = ["create_store_file", "create_tables", "sql_statements", "utc_now"]


def utc_now() -> str:
    """The time a store records (runs, failures, imports, its creation): UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sql_statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def create_tables(conn: sqlite3.Connection) -> None:
    """The schema and the meta rows of a new store, on an empty database."""
    from visprof.result import visprof_version  # not SoftwareVersions.current(): it imports torch and timm

    for statement in sql_statements(DDL):
        conn.execute(statement)
    conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", [
        ("schema_version", str(SCHEMA_VERSION)),
        ("created_at", utc_now()),
        ("created_by", f"visprof {visprof_version()}"),
    ])


def create_store_file(path: Path) -> None:
    """Makes a new, empty store at ``path`` (unless a file is there): whole or not at all.

    Made in place, the file would exist before its schema did (SQLite writes the header before
    the schema's transaction commits), and a Ctrl-C or a kill in between would leave a file
    that is no store. So the store is made in a temporary file beside ``path``, synced, and
    hard-linked in as ``path``: linking never replaces a file, so a store another writer made
    meanwhile is kept (the writers' lock then decides between the two)."""
    path = Path(os.path.realpath(path))  # a link to a store yet to be made: made where it points
    if os.path.lexists(path):
        return
    temporary = sibling_name(path.parent, path.name, ".new")  # named first: removed by name
    try:
        with contextlib.closing(sqlite3.connect(temporary, isolation_level=None)) as conn:
            conn.execute("PRAGMA journal_mode = OFF")  # a file no one else sees: no journal to roll back to
            conn.execute("BEGIN")
            create_tables(conn)
            conn.execute("COMMIT")
        fd = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(fd)  # on disk before it has the store's name
        finally:
            os.close(fd)
        _link_new(temporary, path)
    except sqlite3.Error as exc:  # e.g. "disk is full"
        raise OutputWriteError(path, str(exc)) from exc
    except OSError as exc:
        raise OutputWriteError(path, describe_os_error(exc)) from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _link_new(temporary: Path, path: Path) -> None:
    """``temporary`` as ``path`` too, unless a file is there by now (another writer made the store
    meanwhile: that one is opened). A file system without hard links gets a rename instead."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        if not os.path.lexists(path):
            os.replace(temporary, path)
