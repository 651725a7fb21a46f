"""bench/merge_stores.py: a sweep store added to the consolidated store keeps every column it has."""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import merge_stores  # noqa: E402

DATA = REPO / "tests" / "data"
NEW_COLUMNS = ("gflop", "mb", "blocks", "threads")


def store_with(path: Path, families: list[dict], *, drop_new_columns: bool = False,
               drop_category_table: bool = False) -> Path:
    doc = json.loads((DATA / "h200-result-vit_base_patch16_224.json").read_text())
    doc["kernel_families"] = families
    doc["gpu"]["uuid"] = f"GPU-{path.stem}"  # each store measured on its own machine, as sweeps are
    with open_store(path, write=True) as store:
        run = store.start_run("visprof sweep", "local", planned=1, skipped=0)  # a sweep's results have a run
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0], doc, run_id=run)
        if drop_new_columns:  # as stores written before the columns were
            for column in NEW_COLUMNS:
                store.conn.execute(f"ALTER TABLE result_kernel_families DROP COLUMN {column}")
        if drop_category_table:  # as stores written before the families' time by category
            store.conn.execute("DROP TABLE result_kernel_family_categories")
        store.conn.commit()
    return path


def family(name: str, **work) -> dict:
    return {"family": name, "category": "linear", "subcategory": None, "calls": 48, "time_ms": 2.1,
            "share": 0.28, **work}


def kernel_rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    names = [r[1] for r in conn.execute("PRAGMA table_info(result_kernel_families)")]
    wanted = ["family", *(c for c in NEW_COLUMNS if c in names)]
    return conn.execute(f"SELECT {', '.join(wanted)} FROM result_kernel_families ORDER BY result_id").fetchall()


def test_an_older_target_gains_the_new_columns_and_keeps_the_sources_values(tmp_path):
    target = store_with(tmp_path / "old.db", [family("old_kernel")], drop_new_columns=True)
    source = store_with(tmp_path / "new.db", [family("nvjet_tst", gflop=1200.0, mb=300.0, blocks=132.0, threads=384.0)])
    assert merge_stores.merge(target, source) == (1, 1)
    assert kernel_rows(target) == [("old_kernel", None, None, None, None),
                                   ("nvjet_tst", 1200.0, 300.0, 132.0, 384.0)]
    with open_store(target) as reader:  # still a store visprof reads
        assert len(reader.kernel_family_rows()) == 2


def test_an_older_source_merges_into_a_newer_target_with_nulls(tmp_path):
    target = store_with(tmp_path / "new.db", [family("nvjet_tst", gflop=1.0, mb=2.0, blocks=3.0, threads=32.0)])
    source = store_with(tmp_path / "old.db", [family("old_kernel")], drop_new_columns=True)
    assert merge_stores.merge(target, source) == (1, 1)
    assert kernel_rows(target) == [("nvjet_tst", 1.0, 2.0, 3.0, 32.0), ("old_kernel", None, None, None, None)]


def category_rows(path: Path) -> list[tuple]:
    return sqlite3.connect(path).execute("SELECT r.model, r.gpu_uuid, c.family, c.category, c.subcategory, c.time_ms"
                                         " FROM result_kernel_family_categories c JOIN results r ON r.id = c.result_id"
                                         " ORDER BY c.result_id, c.rowid").fetchall()


SHARED = family("at::native::vectorized_elementwise_kernel", by_category={"activation": 1.5, "memory/cast": 0.6})


def test_a_source_with_the_families_time_by_category_gives_its_rows(tmp_path):
    target = store_with(tmp_path / "a.db", [family("nvjet_tst", by_category={"linear": 2.1})])
    source = store_with(tmp_path / "b.db", [SHARED])
    assert merge_stores.merge(target, source) == (1, 1)
    model = "vit_base_patch16_224"
    assert category_rows(target) == [(model, "a", "nvjet_tst", "linear", "", 2.1),
                                     (model, "b", SHARED["family"], "activation", "", 1.5),
                                     (model, "b", SHARED["family"], "memory", "cast", 0.6)]


def test_a_source_without_the_category_table_merges_without_its_rows(tmp_path):
    target = store_with(tmp_path / "a.db", [family("nvjet_tst", by_category={"linear": 2.1})])
    source = store_with(tmp_path / "b.db", [SHARED], drop_category_table=True)
    assert merge_stores.merge(target, source) == (1, 1)
    assert [row[1:3] for row in category_rows(target)] == [("a", "nvjet_tst")]
    assert kernel_rows(target) == [("nvjet_tst", None, None, None, None), (SHARED["family"], None, None, None, None)]


def test_a_target_without_the_category_table_gains_it(tmp_path):
    target = store_with(tmp_path / "a.db", [family("nvjet_tst", by_category={"linear": 2.1})], drop_category_table=True)
    source = store_with(tmp_path / "b.db", [SHARED])
    assert merge_stores.merge(target, source) == (1, 1)
    assert [row[1:4] for row in category_rows(target)] == [("b", SHARED["family"], "activation"),
                                                           ("b", SHARED["family"], "memory")]
    with open_store(target) as reader:  # still a store visprof reads
        assert len(reader.kernel_family_category_rows()) == 2 and len(reader.kernel_family_rows()) == 2


def test_the_target_is_not_a_source(tmp_path):
    target = store_with(tmp_path / "t.db", [family("k")])
    with pytest.raises(SystemExit):
        merge_stores.main([str(target), str(target)])
