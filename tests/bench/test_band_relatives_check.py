"""bench/band_relatives_check.py: both bands of each fit on models held out at random."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import band_relatives_check  # noqa: E402
from calibration_fleets import kin_fleet  # noqa: E402


def test_both_bands_of_each_fold_s_fit_and_their_coverage_by_relatives():
    fleet = kin_fleet()
    bands = band_relatives_check.both_bands(fleet, folds=5, seed=0)
    assert bands["seen"].all() and len(bands["published"]) == len(fleet.models)
    # same point prediction, so each band is centred alike; they differ in width
    assert not np.allclose(bands["high_seen"] / bands["low_seen"], bands["high_plain"] / bands["low_plain"])
    inside = lambda k: np.mean((bands["published"] >= bands[f"low_{k}"]) & (bands["published"] <= bands[f"high_{k}"]))  # noqa: E731
    # the band of unseen families misses its 80% on models with relatives in the fit; theirs does not
    assert abs(inside("seen") - 0.8) < 0.1 < abs(inside("plain") - 0.8)
    lines = band_relatives_check.summary(bands)
    assert lines[0].startswith(f"  family in the fit ({len(fleet.models)} models): with the second band ")
    assert lines[1] == "  family not in the fit: no model"
