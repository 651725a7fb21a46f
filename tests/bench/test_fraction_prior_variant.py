"""bench/fraction_prior_variant.py: the calibration's prior moved to the ``fraction`` spec model."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from visprof.analysis.calibrate import COVARIATE_SCALE, fit_calibration, make_fleet

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import fraction_prior_variant as variant  # noqa: E402


def fleet(n=40, seed=0):
    rng = np.random.default_rng(seed)
    clock = np.exp(rng.normal(0.4, 0.1, n))
    fraction = np.exp(rng.normal(0.3, 0.1, n))
    fraction_or_none = [None if i == 3 else float(v) for i, v in enumerate(fraction)]
    buckets = [{"cat:linear": s, "idle": 1 - s} for s in rng.uniform(0, 1, n)]
    obs = fraction * np.exp(rng.normal(0, 0.01, n))  # the published speed-up is what fraction says
    return make_fleet([f"m{i}" for i in range(n)], [f"f{i % 8}" for i in range(n)], buckets, clock, obs,
                      features=["cat:linear", "idle"], covariates={"spec": np.log(clock)},
                      spec_variants={"fraction": fraction_or_none}), clock, fraction


def test_the_prior_and_its_covariate_become_the_fraction_model():
    base, clock, fraction = fleet()
    moved = variant.anchored_at(base, "fraction")
    want = np.log(np.where(np.arange(len(clock)) == 3, clock, fraction))  # model 3 has no fraction: keeps clock
    assert moved.log_spec == pytest.approx(want)
    cov = moved.X[:, moved.features.index("cov:spec")]
    assert cov == pytest.approx((want - want.mean()) / want.std() * COVARIATE_SCALE)
    assert moved.X[:, :2] == pytest.approx(base.X[:, :2]) and base.log_spec == pytest.approx(np.log(clock))
    # where the published numbers are what fraction says, the fit on it needs (almost) no correction
    fit = fit_calibration(moved, lam=1.0)
    assert abs(fit.intercept) < 0.02 and np.all(np.abs(fit.delta) < 0.05)


def test_the_fleet_it_builds_carries_the_prior_whatever_spec_excess_asks(monkeypatch):
    base, _, _ = fleet()
    asked = []

    def default(comparison, profiles, table=None, spec_excess=()):
        asked.append(list(spec_excess))
        return base, 0

    monkeypatch.setattr(variant, "_default_fleet", default)
    got, missing = variant.fleet_with_prior(None, [], None, spec_excess=[])
    assert asked == [["fraction"]] and missing == 0
    assert got.log_spec == pytest.approx(variant.anchored_at(base, "fraction").log_spec)
