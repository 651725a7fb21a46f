"""bench/launch_covariate_variant.py: the small-launch share as a fourth calibration covariate."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from visprof.analysis.calibrate import COVARIATE_SCALE, make_fleet
from visprof.base.errors import BadInputError

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import launch_covariate_variant as variant  # noqa: E402


def fleet_args(n=40):
    rng = np.random.default_rng(0)
    spec = np.exp(rng.normal(0.4, 0.1, n))
    obs = spec * np.exp(rng.normal(0, 0.05, n))
    obs[-2:] = np.nan  # profiled, not published: they do not count toward the coverage
    buckets = [{"cat:linear": s, "idle": 1 - s} for s in rng.uniform(0, 1, n)]
    return ([f"m{i}.tag" for i in range(n)], [f"f{i % 8}" for i in range(n)], buckets, spec, obs)


def test_the_share_joins_as_a_covariate_and_missing_rows_get_the_fleet_median():
    models, families, buckets, spec, obs = fleet_args()
    shares = {f"m{i}": 0.01 * i for i in range(38)}  # every published row; the two unpublished have none
    lines = []
    make = variant.with_covariate(make_fleet, shares, log=lines.append)
    fleet = make(models, families, buckets, spec, obs, features=["cat:linear", "idle"], covariates={"spec": np.log(spec)})
    assert fleet.features == ["cat:linear", "idle", "cov:spec", f"cov:{variant.COVARIATE}"]
    want = np.array([0.01 * i for i in range(38)] + [np.median([0.01 * i for i in range(38)])] * 2)
    got = fleet.X[:, -1]
    assert got == pytest.approx((want - want.mean()) / want.std() * COVARIATE_SCALE)
    assert lines == ["launch sizes: 38 of 38 published rows (100.0%), 38 of 40 fleet rows"]


def test_a_pair_below_the_coverage_is_refused_unless_allowed():
    models, families, buckets, spec, obs = fleet_args()
    shares = {f"m{i}": 0.1 for i in range(30)}  # 30 of 38 published rows
    make = variant.with_covariate(make_fleet, shares, log=lambda line: None)
    with pytest.raises(BadInputError, match="78.9% of the published rows"):
        make(models, families, buckets, spec, obs, features=["cat:linear", "idle"])
    allowed = variant.with_covariate(make_fleet, shares, allow_partial=True, log=lambda line: None)
    fleet = allowed(models, families, buckets, spec, obs, features=["cat:linear", "idle"])
    assert fleet.features[-1] == f"cov:{variant.COVARIATE}"


def test_the_newest_profile_with_launch_sizes_gives_the_share(monkeypatch, tmp_path):
    def profile(model, made, share):
        result = SimpleNamespace(created_at=made, launch_share_below=lambda bound: share)
        return SimpleNamespace(model=model, arch=model.split(".")[0], result=result)

    loaded = SimpleNamespace(profiles=[profile("a", "2026-12-05T10", 0.3), profile("a.tag", "2026-12-01T10", 0.9),
                                       profile("a", "2026-12-06T10", None),  # newer, without launch sizes
                                       profile("b", "2026-12-01T10", 0.2)])
    monkeypatch.setattr(variant.sources, "load", lambda paths: loaded)
    assert variant.launch_shares(tmp_path / "s.db") == {"a": 0.3, "b": 0.2}


def test_a_missing_store_is_one_line(tmp_path, capsys):
    assert variant.main(["--pair", "r.db", "a", "b", "--store", str(tmp_path / "none.db"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("launch_covariate_variant.py: --store: not found")


def test_the_fallback_store_fills_only_architectures_the_store_lacks(monkeypatch, tmp_path):
    own, other = tmp_path / "h200.db", tmp_path / "h100.db"
    by_store = {own: {"a": 0.3, "b": 0.2}, other: {"a": 0.9, "c": 0.5}}
    monkeypatch.setattr(variant, "launch_shares", lambda store: by_store[store])
    assert variant.shares_with_fallback(own, other) == {"a": 0.3, "b": 0.2, "c": 0.5}
    assert variant.shares_with_fallback(own, None) == {"a": 0.3, "b": 0.2}


def test_a_missing_fallback_store_is_one_line(tmp_path, capsys):
    store = tmp_path / "s.db"
    store.write_bytes(b"")
    assert variant.main(["--store", str(store), "--launch-fallback", str(tmp_path / "none.db"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("launch_covariate_variant.py: --launch-fallback: not found")
