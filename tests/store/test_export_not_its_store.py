"""export_store, the Python API, refuses an output that is the store it reads, by any name (the
same path, ./x, a symbolic link, a hard link) or one of the store's SQLite side files, before it
reads anything; the store is left byte for byte. Real files."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest

from visprof.base.errors import BadInputError
from visprof.store.export import export_store
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

VIT = Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json"


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_store(tmp_path / "s.db", write=True) as store:
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0], json.loads(VIT.read_text()))
    (tmp_path / "link.db").symlink_to("s.db")
    os.link(tmp_path / "s.db", tmp_path / "hard.db")
    return tmp_path


@pytest.mark.parametrize("output", ["s.db", "./s.db", "{abs}/s.db", "link.db", "hard.db", "s.db-wal", "s.db-shm",
                                    "s.db-journal"])
@pytest.mark.parametrize("fmt", ["csv", "json", "timm"])
def test_the_store_itself_is_refused_as_the_output(here, output, fmt):
    before = snapshot(here)
    with pytest.raises(BadInputError, match=r"^output .*(it is|SQLite's).*overwrite that input") as info:
        export_store("s.db", output.replace("{abs}", str(here)), fmt)
    assert "\n" not in str(info.value)
    assert snapshot(here) == before
    with open_store(here / "s.db") as store:
        assert store.count() == 1


def test_an_open_store_object_is_refused_as_its_own_output(here):
    holder = sqlite3.connect(here / "s.db")  # a reader: the -wal and -shm files exist
    try:
        holder.execute("SELECT COUNT(*) FROM results").fetchone()
        before = snapshot(here)
        with open_store(here / "s.db") as store:
            for output in ("s.db", "s.db-wal", "s.db-shm", "hard.db"):
                with pytest.raises(BadInputError, match="overwrite that input"):
                    export_store(store, output, "json")
        assert snapshot(here) == before
    finally:
        holder.close()


def test_another_file_is_written_from_the_store_by_any_name(here):
    import csv

    before = snapshot(here)
    assert export_store("link.db", "out.csv", "csv") == 1
    (row,) = csv.DictReader((here / "out.csv").open())
    assert row["model"] == "vit_base_patch16_224"
    assert {k: v for k, v in snapshot(here).items() if k != "out.csv"} == before
