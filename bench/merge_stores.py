"""Adds the results of a sweep store to the consolidated H200 store, each source run as a new run.

    xz -dc bench/results/h200-profiles/profiles.db.xz > /tmp/profiles.db
    python bench/merge_stores.py /tmp/profiles.db .sweep/optypes557.db
    xz -9e -T2 -c /tmp/profiles.db > bench/results/h200-profiles/profiles.db.xz

Rows keep their columns and child rows (categories, memory, op types, kernel families and their
time by category); a table or column a later visprof added (``visprof.store.schema.DDL``,
``ADDED_COLUMNS``) is added to the target first, as a visprof store opened for writing adds it,
so that no source column is dropped (a source older than a table has no rows of it); ids and
run ids are renumbered after the target's. Runs that measured nothing are not copied. Each
``result_json`` is re-written at zlib level 0 (stored), as the consolidated store keeps them, so
that xz compresses across rows (``bench/results/h200-profiles/README.md``). Nothing is dropped:
which of a model's rows a tool reads is the tool's rule (the latest, in every visprof tool).
Record: bench/results/h200-profiles/README.md.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from visprof.store.schema import ADDED_COLUMNS, DDL  # noqa: E402

CHILD_TABLES = ("result_categories", "result_memory", "result_op_types", "result_kernel_families",
                "result_kernel_family_categories")


def columns(conn: sqlite3.Connection, table: str, schema: str = "main") -> list[str]:
    return [row[1] for row in conn.execute(f'PRAGMA {schema}.table_info("{table}")')]


def merge(target: Path, source: Path) -> tuple[int, int]:
    """(runs, results) copied from ``source`` into ``target``, in one transaction."""
    conn = sqlite3.connect(target)
    # the tables newer visprof added (every one IF NOT EXISTS), before the source is attached so
    # that the DDL's unqualified names can only mean the target's
    conn.executescript(DDL)
    conn.execute("ATTACH DATABASE ? AS src", (str(source),))
    with conn:  # the columns newer visprof added (no WAL here: the file is compressed and read as is)
        for table, column, sql_type in ADDED_COLUMNS:
            if column not in columns(conn, table):
                conn.execute(f'ALTER TABLE main."{table}" ADD COLUMN "{column}" {sql_type}')
    run_columns = [c for c in columns(conn, "runs") if c != "id"]
    result_columns = [c for c in columns(conn, "results") if c not in ("id", "run_id", "result_json")]
    child_columns = {}
    for table in CHILD_TABLES:
        source_columns = columns(conn, table, "src")
        if source_columns:  # a source older than a table has no rows of it to copy
            # a source older than a column has none of it: the target's rows from it read NULL there
            child_columns[table] = [c for c in columns(conn, table) if c != "result_id" and c in source_columns]
    runs = results = 0
    with conn:
        measured = conn.execute("SELECT DISTINCT run_id FROM src.results ORDER BY run_id").fetchall()
        for (old_run,) in measured:
            row = conn.execute(f"SELECT {', '.join(run_columns)} FROM src.runs WHERE id = ?", (old_run,)).fetchone()
            new_run = conn.execute(f"INSERT INTO runs ({', '.join(run_columns)}) VALUES "
                                   f"({', '.join('?' * len(run_columns))})", row).lastrowid
            runs += 1
            for old_id, blob, *values in conn.execute(
                    f"SELECT id, result_json, {', '.join(result_columns)} FROM src.results WHERE run_id = ? ORDER BY id",
                    (old_run,)).fetchall():
                stored = zlib.compress(zlib.decompress(blob), 0)
                new_id = conn.execute(
                    f"INSERT INTO results (run_id, result_json, {', '.join(result_columns)}) VALUES "
                    f"(?, ?, {', '.join('?' * len(result_columns))})", (new_run, stored, *values)).lastrowid
                results += 1
                for table, child in child_columns.items():
                    conn.execute(f"INSERT INTO {table} (result_id, {', '.join(child)}) "
                                 f"SELECT ?, {', '.join(child)} FROM src.{table} WHERE result_id = ?", (new_id, old_id))
    conn.execute("DETACH DATABASE src")
    conn.execute("VACUUM")
    conn.close()
    return runs, results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", type=Path, help="the consolidated store (decompressed), changed in place")
    parser.add_argument("sources", type=Path, nargs="+", help="sweep stores to add")
    args = parser.parse_args(argv)
    for path in (args.target, *args.sources):
        if not path.is_file():
            parser.error(f"no such store: {path}")
    if any(source.resolve() == args.target.resolve() for source in args.sources):
        parser.error("a source is the target store itself")
    for source in args.sources:
        runs, results = merge(args.target, source)
        print(f"{source}: {results} results in {runs} runs added to {args.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
