"""bench/band_quartiles.py: the band's coverage by quartile."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import band_quartiles  # noqa: E402


def test_coverage_per_quartile_of_the_values():
    values = np.arange(8.0)
    inside = np.array([True, True, True, False, False, False, True, False])
    edges, shares = band_quartiles.quartile_coverage(values, inside)
    assert edges == pytest.approx([1.75, 3.5, 5.25])
    assert shares == [1.0, 0.5, 0.0, 0.5]


def test_missing_inputs_are_one_line(tmp_path, capsys):
    assert band_quartiles.main(["--pair", str(tmp_path / "r.db"), "a", "b", "--store", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("band_quartiles.py: not found:")
