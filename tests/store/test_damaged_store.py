"""Issue 24: a damaged results store is one line naming the file and what is wrong, in every
command that opens stores and in the library, never a traceback; the damaged file is left as
it was. Damage made to a real store: truncated to half its size, overwritten with random
bytes, emptied, replaced by text, an SQLite file of another program, a store's page broken
after the part read at opening, a stored result's bytes broken."""
from __future__ import annotations

import hashlib
import json
import pickle
import random
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from visprof.analysis import sources
from visprof.base.child_env import child_env, module_command
from visprof.base.errors import BadInputError
from visprof.store.export import export_store
from visprof.store.result_store import DamagedStoreError, open_store
from visprof.sweep.plan import SweepPlan

DATA = Path(__file__).resolve().parents[1] / "data"
VIT = DATA / "h200-result-vit_base_patch16_224.json"
CSV_4090 = DATA / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("good") / "s.db"
    cell = SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0]
    with open_store(path, write=True) as store:
        store.add_result(cell, json.loads(VIT.read_text()))
    return path


def _half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _random(path: Path) -> None:
    path.write_bytes(random.Random(24).randbytes(path.stat().st_size))


def _zero(path: Path) -> None:
    path.write_bytes(b"")


def _text(path: Path) -> None:
    path.write_text("model,samples_per_sec\nresnet50,3000\n")


def _foreign(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (name TEXT, data BLOB)")  # a 'meta' table, not visprof's
    conn.close()


def _meta_only(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.close()


DAMAGE = {
    "half": (_half, "damaged results store (database disk image is malformed)"),
    "random": (_random, "not an SQLite file"),
    "zero": (_zero, "is empty"),
    "text": (_text, "not an SQLite file"),
    "foreign": (_foreign, "not a visprof results store"),
    "meta_only": (_meta_only, "not a visprof results store"),
}


@pytest.fixture
def damaged(request, good, tmp_path):
    kind = request.param
    path = tmp_path / "s.db"
    shutil.copy(good, path)
    DAMAGE[kind][0](path)
    return kind, path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def visprof(cwd: Path, *argv) -> subprocess.CompletedProcess:
    return subprocess.run([*module_command("visprof"), *map(str, argv)], cwd=cwd, capture_output=True,
                          text=True, env=child_env(VISPROF_DEBUG=""), timeout=120)


READERS = {
    "export": ["export", "s.db", "-o", "out.csv"],
    "compare": ["compare", "s.db", str(CSV_4090)],
    "report": ["report", "s.db", "-o", "out.html"],
    "predict": ["predict", "--from", "s.db", "--to", "rtx4090"],
}
WRITERS = {
    "import-timm": ["import-timm", str(CSV_4090), "--store", "s.db"],
    "sweep": ["sweep", "resnet18", "--device", "cpu", "--store", "s.db", "--quiet"],
}


def _assert_one_line(proc, path: Path, message: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[visprof] no models")]
    assert len(lines) == 1 and lines[0].startswith("visprof: error: "), proc.stderr
    assert path.name in lines[0] and message in lines[0], lines[0]
    assert "UnicodeDecodeError" not in lines[0] and "profile result" not in lines[0]


@pytest.mark.parametrize("damaged", list(DAMAGE), indirect=True)
@pytest.mark.parametrize("command", list(READERS))
def test_readers_name_the_damaged_store(damaged, command):
    kind, path = damaged
    before = digest(path)
    proc = visprof(path.parent, *READERS[command])
    _assert_one_line(proc, path, DAMAGE[kind][1])
    assert digest(path) == before
    assert not (path.parent / "out.csv").exists() and not (path.parent / "out.html").exists()
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.db"]  # no side file left behind


@pytest.mark.parametrize("damaged", [k for k in DAMAGE if k != "zero"], indirect=True)
@pytest.mark.parametrize("command", list(WRITERS))
def test_writers_name_the_damaged_store_before_any_work(damaged, command):
    kind, path = damaged
    before = digest(path)
    proc = visprof(path.parent, *WRITERS[command])
    _assert_one_line(proc, path, DAMAGE[kind][1])
    assert digest(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.db"]


def test_an_empty_file_becomes_a_new_store_when_written(good, tmp_path):
    # Nothing to lose in 0 bytes: `touch s.db; visprof import-timm ... --store s.db` makes the store.
    path = tmp_path / "s.db"
    path.write_bytes(b"")
    proc = visprof(tmp_path, *WRITERS["import-timm"])
    assert proc.returncode == 0, proc.stderr
    with open_store(path) as store:
        assert store.count("references") == 60


def test_a_dry_run_reads_an_empty_file_as_a_store_with_nothing_done(tmp_path):
    """`touch s.db; visprof sweep ... --store s.db` makes the store, but its --dry-run said `s.db is empty
    (0 bytes), not a visprof results store`."""
    path = tmp_path / "s.db"
    path.write_bytes(b"")
    proc = visprof(tmp_path, *WRITERS["sweep"], "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "cells: 1 planned, 0 already in the store, 1 to run" in proc.stdout
    assert path.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]  # a dry run writes nothing


# --- in the library: the store layer raises DamagedStoreError, wherever SQLite notices -----------

@pytest.mark.parametrize("damaged", ["half"], indirect=True)
def test_the_library_raises_one_error_class(damaged):
    _, path = damaged
    with pytest.raises(DamagedStoreError, match=r"s\.db is a damaged results store") as info:
        open_store(path)
    assert isinstance(info.value, BadInputError) and "\n" not in str(info.value)
    assert isinstance(pickle.loads(pickle.dumps(info.value)), DamagedStoreError)  # sweep workers pickle errors
    with pytest.raises(DamagedStoreError):
        open_store(path, write=True)
    with pytest.raises(DamagedStoreError):
        sources.load([path])


def _break_table(path: Path, table: str) -> None:
    """Overwrites the root page of ``table`` with noise, leaving the pages read at opening."""
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    conn.close()
    with open(path, "r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(random.Random(root).randbytes(page_size))


@pytest.mark.parametrize("table, fmt", [("results", "csv"), ("result_categories", "csv"), ("references", "json")])
def test_damage_found_at_a_later_query_is_the_same_one_line(good, tmp_path, table, fmt):
    path = tmp_path / "s.db"
    shutil.copy(good, path)
    _break_table(path, table)
    before = digest(path)
    with open_store(path) as store:  # the pages read at opening are whole
        with pytest.raises(DamagedStoreError, match="database disk image is malformed"):
            store.rows()
            list(store.results())
            store.table_rows()
            store.references()
    with pytest.raises(DamagedStoreError):
        export_store(path, tmp_path / "out", fmt)
    assert not (tmp_path / "out").exists()
    proc = visprof(tmp_path, "export", "s.db", "--format", fmt)
    _assert_one_line(proc, path, "is a damaged results store")
    assert digest(path) == before


@pytest.mark.parametrize("command", list(WRITERS))
def test_a_broken_index_is_found_before_a_writer_works(good, tmp_path, command):
    """An index page broken: opening and the reads at opening do not touch it, so a sweep ran its
    cell (a real one here, minutes on a GPU) and only then met the damage, writing the row. Now
    the writers check the store first (SQLite's quick_check) and leave it as it was."""
    path = tmp_path / "s.db"
    shutil.copy(good, path)
    _break_table(path, "results_model")
    before = digest(path)
    with open_store(path) as store:
        assert store.count("results") == 1  # readers that need no index still read it
    proc = visprof(tmp_path, *WRITERS[command])
    _assert_one_line(proc, path, "is a damaged results store (SQLite's check: ")
    assert "worker" not in proc.stderr  # refused before any cell started
    assert digest(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.db"]


@pytest.mark.parametrize("command", list(READERS))
def test_a_broken_index_is_found_by_every_reader(good, tmp_path, command):
    """compare, predict and report read a store whose index page was broken, with exit 0 and no word,
    where export and every writer refuse it."""
    path = tmp_path / "s.db"
    shutil.copy(good, path)
    _break_table(path, "results_model")
    before = digest(path)
    proc = visprof(tmp_path, *READERS[command])
    _assert_one_line(proc, path, "is a damaged results store (SQLite's check: ")
    assert digest(path) == before


def test_a_dry_run_refuses_a_broken_index_as_the_run_would(good, tmp_path):
    """sweep --dry-run planned "1 to run" and exited 0 on a store whose index page was broken, where
    the run it previewed is refused at once."""
    path = tmp_path / "s.db"
    shutil.copy(good, path)
    _break_table(path, "results_model")
    before = digest(path)
    proc = visprof(tmp_path, *WRITERS["sweep"], "--dry-run")
    _assert_one_line(proc, path, "is a damaged results store (SQLite's check: ")
    assert digest(path) == before


@pytest.mark.parametrize("fmt", ["csv", "json", "timm", "parquet"])
def test_an_export_of_a_store_damaged_where_it_does_not_read_is_refused(good, tmp_path, fmt):
    """A broken index page: the export's queries do not touch it, and it had written its file as if the
    store were whole, where every writer refuses the store."""
    path = tmp_path / "s.db"
    shutil.copy(good, path)
    _break_table(path, "results_model")
    before = digest(path)
    with pytest.raises(DamagedStoreError, match="SQLite's check: "):
        export_store(path, tmp_path / "out", fmt)
    assert not (tmp_path / "out").exists() and digest(path) == before
    proc = visprof(tmp_path, "export", "s.db", "--format", fmt, "-o", "out")
    _assert_one_line(proc, path, "is a damaged results store (SQLite's check: ")


def test_a_stored_result_that_cannot_be_decompressed(good, tmp_path):
    path = tmp_path / "s.db"
    shutil.copy(good, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE results SET result_json = ?", (b"\x78\x9c not zlib",))
    conn.close()
    with open_store(path) as store:
        assert len(store.rows()) == 1  # the flat columns are whole
        with pytest.raises(DamagedStoreError, match="result 1 .*cannot be read"):
            list(store.results())
    proc = visprof(tmp_path, "compare", "s.db", CSV_4090)
    _assert_one_line(proc, path, "cannot be read")


@pytest.mark.parametrize("suffix", [".db", ".sqlite", ".sqlite3"])
def test_an_empty_or_random_file_named_as_a_store_is_read_as_one(tmp_path, suffix):
    empty = tmp_path / f"empty{suffix}"
    empty.write_bytes(b"")
    with pytest.raises(BadInputError, match=rf"empty{suffix} is empty .*not a visprof results store"):
        sources.load([empty])
    noise = tmp_path / f"noise{suffix}"
    noise.write_bytes(random.Random(1).randbytes(4096))
    with pytest.raises(BadInputError, match="not a visprof results store.*not an SQLite file"):
        sources.load([noise])


def test_a_pipe_or_a_device_given_as_a_store_is_one_line(good, tmp_path):
    """export <(cat s.db) ended in sqlite3's 'unable to open database file' traceback, and /dev/zero
    was called 'empty (0 bytes)'."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(BadInputError, match=r"is not a file on disk \(a pipe or a device\?\)"):
            export_store(path, tmp_path / "out.csv", "csv")
    assert not (tmp_path / "out.csv").exists()


def test_a_store_that_fills_up_says_its_rows_are_kept(tmp_path):
    """A full disk said 'could not write s.db: database or disk is full; no file was created', of a store
    that was there, holding every row stored before. A page limit stands in for the full disk."""
    from visprof.base.errors import OutputWriteError

    path = tmp_path / "s.db"
    cells = SweepPlan(["vit_base_patch16_224", "resnet50"], "cuda").cells()
    with open_store(path, write=True) as store:
        store.add_result(cells[0], json.loads(VIT.read_text()))
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(OutputWriteError, match=r"database or disk is full; the rows stored before are kept in it; "
                                                   r"make room .* and run the same command again to go on$"):
            store.add_result(cells[1], json.loads(VIT.read_text()))
    with open_store(path) as store:
        assert store.count("results") == 1
