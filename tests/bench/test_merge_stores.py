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


def store_with(path: Path, families: list[dict], *, drop_new_columns: bool = False) -> Path:
    doc = json.loads((DATA / "h200-result-vit_base_patch16_224.json").read_text())
    doc["kernel_families"] = families
    doc["gpu"]["uuid"] = f"GPU-{path.stem}"  # each store measured on its own machine, as sweeps are
    with open_store(path, write=True) as store:
        run = store.start_run("visprof sweep", "local", planned=1, skipped=0)  # a sweep's results have a run
        store.add_result(SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0], doc, run_id=run)
        if drop_new_columns:  # as stores written before the columns were
            for column in NEW_COLUMNS:
                store.conn.execute(f"ALTER TABLE result_kernel_families DROP COLUMN {column}")
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


def test_the_target_is_not_a_source(tmp_path):
    target = store_with(tmp_path / "t.db", [family("k")])
    with pytest.raises(SystemExit):
        merge_stores.main([str(target), str(target)])
