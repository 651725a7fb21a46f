"""bench/h100_transfer_check.py: the H200 row it pairs, the scores, per-family sums and the library's DRAM share."""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import h100_transfer_check as check  # noqa: E402


def small_store(path: Path, rows: list[tuple], families: list[tuple]) -> Path:
    """A store with the columns the check reads: results (id, model, img, precision, batch, busy_ms)
    and kernel families (result id, family, category, time)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY, model TEXT, img_height INTEGER, precision TEXT, "
                 "batch_size INTEGER, busy_ms REAL, latency_median_ms REAL, kernel_ms REAL)")
    conn.execute("CREATE TABLE result_kernel_families (result_id INTEGER, family TEXT, category TEXT, time_ms REAL)")
    conn.executemany("INSERT INTO results VALUES (?,?,?,?,?,?,?,?)", rows)
    conn.executemany("INSERT INTO result_kernel_families VALUES (?,?,?,?)", families)
    conn.commit()
    conn.close()
    return path


def test_the_newest_h200_row_of_the_same_cell_is_paired(tmp_path):
    store = small_store(tmp_path / "h200.db", [
        (1, "resnet50", 224, "bf16", 64, 10.0, 11.0, 10.0),
        (2, "resnet50", 224, "bf16", 64, 9.0, 9.5, 9.0),     # newer: this one
        (3, "resnet50", 224, "bf16", 256, 30.0, 31.0, 30.0),  # another batch
        (4, "resnet50", 288, "bf16", 64, 15.0, 16.0, 15.0),   # another size
    ], [])
    found = check.h200_rows(store, [("resnet50", 224, "bf16", 64), ("vit_base_patch16_224", 224, "bf16", 64)])
    assert list(found) == [("resnet50", 224, "bf16", 64)]
    assert found[("resnet50", 224, "bf16", 64)]["id"] == 2


def test_a_model_list_keeps_only_its_models_rows(tmp_path):
    store = small_store(tmp_path / "h100.db", [(1, "resnet50", 224, "bf16", 64, 10.0, 11.0, 10.0),
                                               (2, "vit_base_patch16_224", 224, "bf16", 64, 9.0, 9.5, 9.0),
                                               (3, "deit_small_patch16_224", 224, "bf16", 64, None, 4.0, 3.0)], [])
    assert len(check.h100_rows(store)) == 2  # the row without a timing pass is never scored
    assert list(check.h100_rows(store, {"vit_base_patch16_224", "convnext_tiny"})) == [
        ("vit_base_patch16_224", 224, "bf16", 64)]


def test_a_kernel_family_is_summed_over_the_categories_each_run_named(tmp_path):
    """The same kernel is 'activation' in one run and 'elementwise' in the other: per family both
    sides count it, so no ratio comes from one side only."""
    fast = small_store(tmp_path / "h200.db", [(1, "m", 224, "bf16", 64, 1, 1, 1)],
                       [(1, "vec_elementwise", "activation", 30.0), (1, "gemm", "linear", 10.0)])
    slow = small_store(tmp_path / "h100.db", [(7, "m", 224, "bf16", 64, 1, 1, 1)],
                       [(7, "vec_elementwise", "elementwise", 36.0), (7, "gemm", "linear", 10.5)])
    a = check.grouped_times(fast, [1], "result_kernel_families", "family")
    b = check.grouped_times(slow, [7], "result_kernel_families", "family")
    assert b["vec_elementwise"] / a["vec_elementwise"] == pytest.approx(1.2)
    assert b["gemm"] / a["gemm"] == pytest.approx(1.05)
    by_category = check.grouped_times(slow, [7], "result_kernel_families", "category")
    assert "activation" not in by_category  # what the per-category key would have compared with nothing


def test_scores_are_spearman_and_median_ratio_error():
    rho, err = check.score([1.1, 1.2, 1.3], [1.0, 1.1, 1.4])
    assert rho == pytest.approx(1.0)
    assert err == pytest.approx(1.2 / 1.1 - 1)
    rho, err = check.score([1.0, 1.0, 1.0], [1.0, 1.1, 1.2])
    assert rho is None and err == pytest.approx(0.1 / 1.1)  # a constant has no ranking


def test_library_dram_is_weighted_by_kernel_time_over_categories(tmp_path):
    path = tmp_path / "lib.json"
    path.write_text(json.dumps({"entries": [
        {"family": "k", "category": "activation", "dram_pct": 80.0, "weight_ns": 3.0},
        {"family": "k", "category": "memory", "dram_pct": 40.0, "weight_ns": 1.0},
        {"family": "j", "category": "linear", "dram_pct": None, "weight_ns": 5.0},   # no reading: left out
    ]}))
    assert check.library_dram(path) == {"k": pytest.approx(70.0)}


def test_a_missing_store_is_one_line_and_not_created(tmp_path):
    with pytest.raises(SystemExit) as stop:
        check.h100_rows(tmp_path / "h100.db")
    assert str(stop.value) == f"h100_transfer_check.py: not found: {tmp_path / 'h100.db'}"
    assert not (tmp_path / "h100.db").exists()  # sqlite3.connect would have made an empty one
