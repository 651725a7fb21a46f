"""bench/software_rows_check.py: the rows software moved, told from one GPU's two tables."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from visprof.analysis.held_out import HeldOut, MethodFigures

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import software_rows_check  # noqa: E402


def series(values: dict) -> pd.Series:
    return pd.Series(values.values(), index=pd.MultiIndex.from_tuples(values.keys(), names=["model", "img_size"]))


def test_the_software_ratio_is_per_model_over_its_sizes_in_both_tables():
    old = series({("a", 224): 100.0, ("a", 288): 50.0, ("a", 384): 20.0, ("b", 224): 10.0, ("c", 224): 5.0})
    new = series({("a", 224): 110.0, ("a", 288): 60.0, ("a", 384): 20.0, ("b", 224): 8.0})
    ratio = software_rows_check.software_ratio(old, new)
    assert set(ratio.index) == {"a", "b"}  # c: only in the old table
    assert ratio["a"] == pytest.approx(math.log(1.1))  # the median of x1.1, x1.2, x1.0
    assert ratio["b"] == pytest.approx(math.log(0.8))


def test_kept_rows_bound_both_ways_and_drop_models_without_a_ratio():
    ratio = pd.Series({"a": math.log(1.04), "b": math.log(0.94), "c": math.log(1.06), "d": 0.0})
    kept = software_rows_check.kept_rows(["a", "b.tv_in1k", "c", "d.ft", "e"], ratio, 0.05)
    # b: x0.94 is 6% slower, beyond log(1.05) either way; e: no software ratio
    assert kept.tolist() == [True, False, False, True, False]


def test_a_held_out_run_is_judged_on_the_kept_rows_only():
    preds = [{"model": m, "speedup": s, "calibrated": c, "spec_fraction": f, "fleet_median": 1.2}
             for m, s, c, f in [("a", 1.0, 1.1, 1.0), ("b", 2.0, 2.0, 1.8), ("c", 1.5, 1.2, 1.5), ("x", 9.0, 1.0, 1.0)]]
    figures = MethodFigures(None, 0.0)
    held = HeldOut(4, 4, 2, figures, figures, figures, figures, 0.8, 0.1, 0.1, [0.1], ["-"], predictions=preds)
    text = software_rows_check.on_rows(held, {"a", "b", "c"})
    lines = text.splitlines()
    assert lines[0] == "  on the 3 kept rows only:"
    calibrated = MethodFigures.of(np.array([1.1, 2.0, 1.2]), np.array([1.0, 2.0, 1.5]))
    assert lines[1].split()[-2:] == [f"{calibrated.spearman:.3f}", f"{calibrated.median_abs_error:.1%}"]
    assert lines[2].startswith("  spec only (fraction)") and lines[2].endswith("0.0%")
    assert lines[3].split()[-2:] == ["-", f"{np.median([0.2, 0.4, 0.2]):.1%}"]
    assert "none of its models" in software_rows_check.on_rows(held, {"zz"})


def test_bad_arguments_are_one_line_and_touch_nothing(tmp_path, capsys):
    store = tmp_path / "profiles.db"
    store.write_bytes(b"kept")
    base = ["--pair", str(tmp_path / "p.db"), "rtx3090", "rtx5090", "--store", str(store),
            "--software", str(tmp_path / "old.csv"), str(tmp_path / "new.csv")]
    with pytest.raises(SystemExit):
        software_rows_check.main(base + ["--max-change", "5"])
    assert "--max-change must be between 0 and 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        software_rows_check.main(base + ["--out", str(store)])
    assert "is one of the inputs" in capsys.readouterr().err
    assert store.read_bytes() == b"kept"
    assert software_rows_check.main(base) == 2  # the software tables do not exist
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("software_rows_check.py: no such file")
