"""bench/same_cells.py: both outputs keep, per cell both inputs have, the newest row, and nothing else."""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import same_cells  # noqa: E402


def store(path: Path, rows: list[tuple]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY, model TEXT, img_height INTEGER, precision TEXT, "
                 "batch_size INTEGER)")
    conn.execute("CREATE TABLE result_op_types (result_id INTEGER, op_type TEXT)")
    conn.execute('CREATE TABLE "references" (id INTEGER PRIMARY KEY, model TEXT)')  # a keyword name, no result_id
    conn.executemany("INSERT INTO results VALUES (?,?,?,?,?)", rows)
    conn.executemany("INSERT INTO result_op_types VALUES (?, 'aten::add')", [(r[0],) for r in rows])
    conn.commit()
    conn.close()
    return path


def ids(path: Path, table: str = "results", column: str = "id") -> list[int]:
    return [i for (i,) in sqlite3.connect(path).execute(f"SELECT {column} FROM {table} ORDER BY 1")]


def test_only_shared_cells_stay_each_at_its_newest_row(tmp_path):
    first = store(tmp_path / "h100.db", [(1, "a", 224, "bf16", 64), (2, "b", 224, "bf16", 64)])
    second = store(tmp_path / "h200.db", [(1, "a", 224, "bf16", 64), (2, "a", 224, "bf16", 64),  # 2 is newer
                                          (3, "a", 224, "bf16", 256), (4, "c", 224, "bf16", 64)])
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    assert same_cells.main([str(first), str(second), str(a), str(b)]) == 0
    assert ids(a) == [1] and ids(a, "result_op_types", "result_id") == [1]
    assert ids(b) == [2] and ids(b, "result_op_types", "result_id") == [2]
    assert ids(first) == [1, 2] and ids(second) == [1, 2, 3, 4]  # the inputs are untouched


def test_an_existing_output_is_refused_in_one_line(tmp_path, capsys):
    first = store(tmp_path / "h100.db", [(1, "a", 224, "bf16", 64)])
    taken = tmp_path / "a.db"
    taken.write_text("mine")
    assert same_cells.main([str(first), str(first), str(taken), str(tmp_path / "b.db")]) == 2
    assert taken.read_text() == "mine"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not overwritten" in err[0]


def test_one_file_named_for_both_outputs_is_refused(tmp_path, capsys):
    first = store(tmp_path / "h100.db", [(1, "a", 224, "bf16", 64)])
    out = tmp_path / "out.db"
    assert same_cells.main([str(first), str(first), str(out), str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "name two files" in err[0]
