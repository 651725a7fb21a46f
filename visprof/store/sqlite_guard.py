"""SQLite as the results store uses it: damaged files named as such, one writer at a time.

A file that is not a whole database (truncated, overwritten) makes SQLite raise a bare
``DatabaseError`` at whatever query first touches the damage, possibly a row fetched long after
the query ran. ``StoreConnection`` (``sqlite3.connect(..., factory=StoreConnection)``) turns each of
them into one ``DamagedStoreError`` naming the file. ``lock_for_writing`` takes the exclusive
``flock`` that keeps a second sweep out of a store (released by the kernel when the writer dies,
however it dies).
"""
from __future__ import annotations

import functools
import os
import sqlite3
from pathlib import Path

from visprof.base.errors import BadInputError
from visprof.base.spelling import option

__all__ = ["DamagedStoreError", "StoreBusyError", "StoreConnection", "StoreCursor", "held_by_a_writer", "lock_for_writing"]


# SQLite's result codes for a file that is not a whole database: SQLITE_CORRUPT, SQLITE_NOTADB.
_DAMAGE_CODES = (11, 26)


class StoreBusyError(BadInputError):
    """Another sweep is writing to this store."""


class DamagedStoreError(BadInputError):
    """SQLite finds the store's file damaged (truncated, overwritten): at opening or at any query."""

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path} is a damaged results store ({reason}); visprof left it as it is: restore a copy, "
                         f"or salvage what is readable with `sqlite3 {path} .recover | sqlite3 recovered.db`")


def _raise_if_damaged(conn: sqlite3.Connection, exc: sqlite3.DatabaseError) -> None:
    code = getattr(exc, "sqlite_errorcode", None)
    damaged = (code & 0xFF) in _DAMAGE_CODES if code is not None else type(exc) is sqlite3.DatabaseError
    if damaged:
        raise DamagedStoreError(getattr(conn, "store_path", "the results store"), str(exc)) from exc


def _named_damage(method):
    """``method`` of a cursor, with a damaged-file error turned into DamagedStoreError."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            _raise_if_damaged(self.connection, exc)
            raise

    return guarded


def _storable_text(value):
    """A str SQLite can store: a path or argument with a byte that is not UTF-8 (a Latin-1 folder
    name, which Python keeps as a lone surrogate) made the INSERT raise UnicodeEncodeError after
    the store was created; that byte is kept as ``\\xe9`` text instead."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


def _storable(parameters):
    if isinstance(parameters, dict):
        return {key: _storable_text(value) for key, value in parameters.items()}
    return [_storable_text(value) for value in parameters]


class StoreCursor(sqlite3.Cursor):
    """A cursor whose damaged-file errors, wherever SQLite meets them (a query, a row fetched
    later), are DamagedStoreError; every other error is left as it is. What it stores is text
    SQLite can encode (``_storable_text``)."""

    @_named_damage
    def execute(self, sql, parameters=()):
        return super().execute(sql, _storable(parameters))

    @_named_damage
    def executemany(self, sql, seq_of_parameters):
        return super().executemany(sql, (_storable(parameters) for parameters in seq_of_parameters))
    fetchone = _named_damage(sqlite3.Cursor.fetchone)
    fetchall = _named_damage(sqlite3.Cursor.fetchall)
    __next__ = _named_damage(sqlite3.Cursor.__next__)

    @_named_damage
    def fetchmany(self, size=None):
        return super().fetchmany(self.arraysize if size is None else size)


class StoreConnection(sqlite3.Connection):
    """The store's connection: every cursor is a StoreCursor (``execute`` included)."""

    store_path = "the results store"

    def cursor(self, factory=None):
        return super().cursor(factory or StoreCursor)

    def execute(self, sql, parameters=()):
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql, parameters):
        return self.cursor().executemany(sql, parameters)


def held_by_a_writer(path: Path) -> bool:
    """Whether another process holds ``path``'s writing lock (``lock_for_writing``), asked without taking
    it: a dry run reads the store, and had planned a run that would then be refused as busy."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing lets go of the shared lock, where it was had
    return False


def lock_for_writing(path: Path) -> int:
    """An open descriptor of ``path`` (it must exist: a store is made whole before it is locked)
    holding its exclusive lock; StoreBusyError if another process holds it."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        raise BadInputError(f"{option('store')}: cannot open {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreBusyError(f"another sweep is writing to {path}; wait for it to finish, or give another "
                             f"{option('store')}") from None
    return fd
