"""Two stores cut down to the cells both have, so that a calibration from each differs only in the GPU.

    python bench/same_cells.py /tmp/h100.db /tmp/profiles.db /tmp/h100-sub.db /tmp/h200-sub.db

A cell is (model, image size, precision, batch). Each output keeps, per cell that both inputs have,
the newest row of its input (what visprof predict and the calibration read at that batch), and
nothing else. The inputs are not changed; an output that exists is refused, and one is
written whole or not at all.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
from pathlib import Path

CELL = "model, img_height, precision, batch_size"


def newest_by_cell(conn: sqlite3.Connection) -> dict[tuple, int]:
    """{cell: id of its newest row}."""
    found = {}
    for row in conn.execute(f"SELECT id, {CELL} FROM results ORDER BY id"):
        found[tuple(row[1:])] = row[0]
    return found


def keep_only(path: Path, ids: set[int]) -> int:
    """Deletes every result of ``path`` not in ``ids``, and its rows in the per-result tables."""
    conn = sqlite3.connect(path)
    drop = [(i,) for (i,) in conn.execute("SELECT id FROM results") if i not in ids]
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
              if t != "results" and "result_id" in {c[1] for c in conn.execute(f'PRAGMA table_info("{t}")')}]
    for table in tables:
        conn.executemany(f'DELETE FROM "{table}" WHERE result_id=?', drop)
    conn.executemany("DELETE FROM results WHERE id=?", drop)
    conn.commit()
    conn.execute("VACUUM")
    left = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    conn.close()
    return left


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("first_out", type=Path)
    parser.add_argument("second_out", type=Path)
    args = parser.parse_args(argv)
    for path in (args.first, args.second):
        if not path.is_file():
            print(f"same_cells.py: not found: {path}", file=sys.stderr)
            return 2
    if args.first_out.resolve() == args.second_out.resolve():
        print(f"same_cells.py: both outputs are {args.first_out}; name two files", file=sys.stderr)
        return 2
    for path in (args.first_out, args.second_out):
        if path.exists():
            print(f"same_cells.py: {path} exists; it is not overwritten", file=sys.stderr)
            return 2
    cells = []
    for path in (args.first, args.second):
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        cells.append(newest_by_cell(conn))
        conn.close()
    shared = cells[0].keys() & cells[1].keys()
    for source, out, by_cell in ((args.first, args.first_out, cells[0]), (args.second, args.second_out, cells[1])):
        partial = out.with_name(out.name + ".partial")  # renamed into place only when whole
        try:
            shutil.copyfile(source, partial)
            left = keep_only(partial, {by_cell[c] for c in shared})
            os.replace(partial, out)
        finally:
            partial.unlink(missing_ok=True)
        print(f"{out}: {left} results, one per shared cell (of {len(by_cell)} cells in {source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
