"""bench/batch_compare.py: two calibration runs over the models a later sweep profiled at another batch."""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import batch_compare  # noqa: E402


PUBLISHED = {"a": 1.0, "b": 2.0, "c": 1.5, "d": 1.5}


def held_out(folder: Path, calibrated: dict[str, float]) -> None:
    folder.mkdir()
    rows = [{"model": m, "speedup": PUBLISHED[m], "calibrated": c, "spec_speedup": 1.1 * PUBLISHED[m],
             "spec_fraction": 0.9 * PUBLISHED[m], "fleet_median": 1.0, "low": c - 0.05, "high": c + 0.05}
            for m, c in calibrated.items()]
    for pair in batch_compare.PAIRS:
        pd.DataFrame(rows).to_csv(folder / f"held-out-{pair}.csv.gz", index=False)


def test_only_the_models_profiled_again_are_compared(tmp_path, capsys):
    store = tmp_path / "store.db"
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE results (model TEXT, run_id INTEGER, batch_size_requested INTEGER)")
        db.executemany("INSERT INTO results VALUES (?, ?, ?)",
                       [("a", 3, 256), ("b", 3, 256), ("a", 1, 64), ("c", 1, 256), ("d", 3, 64)])
    # c (batch 256 in an old run) and d (new run, batch 64) are not compared; their errors would show
    held_out(tmp_path / "before", {"a": 1.10, "b": 2.20, "c": 3.0, "d": 3.0})
    held_out(tmp_path / "after", {"a": 1.02, "b": 1.96, "c": 3.0, "d": 3.0})
    assert batch_compare.main([str(store), str(tmp_path / "before"), str(tmp_path / "after"),
                               "--runs-after", "2", "--batch", "256"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("2 models profiled at batch 256 in runs after 2")
    before, after = out[1], out[2]
    assert before.startswith("rtx3090-rtx4090 before 2 rows: calibrated 10.0% / 1.000 (+10.0%)")
    assert after.startswith("rtx3090-rtx4090 after  2 rows: calibrated 2.0% / 1.000 (+0.0%)")
    assert before.endswith("band 0.0%") and after.endswith("band 100.0%")
    assert "spec_fraction 10.0% / " in before and "(-10.0%)" in before


def test_by_family_gives_each_familys_median_ratio_before_and_after(tmp_path, capsys):
    store = tmp_path / "store.db"
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE results (model TEXT, run_id INTEGER, batch_size_requested INTEGER)")
        db.executemany("INSERT INTO results VALUES (?, ?, ?)", [("a", 3, 256), ("b", 3, 256), ("c", 1, 256)])
    for label, calibrated in (("before", {"a": 1.10, "b": 2.20, "c": 3.0}), ("after", {"a": 1.02, "b": 1.96, "c": 3.0})):
        held_out(tmp_path / label, calibrated)
        for pair in batch_compare.PAIRS:  # a and b in one family, c (not profiled again) in another
            path = tmp_path / label / f"held-out-{pair}.csv.gz"
            d = pd.read_csv(path)
            d["family"] = d.model.map({"a": "fam1", "b": "fam1", "c": "fam2"})
            d.to_csv(path, index=False)
    assert batch_compare.main([str(store), str(tmp_path / "before"), str(tmp_path / "after"),
                               "--runs-after", "2", "--batch", "256", "--by-family"]) == 0
    families = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  fam")]
    assert len(families) == 2 and all(line.split()[0] == "fam1" for line in families)  # once per pair
    # a: 1.10 -> 1.02, b: 1.10 -> 0.98 of published; medians 1.100 -> 1.000
    assert "calibrated 1.100 -> 1.000" in families[0]
