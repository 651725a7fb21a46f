"""bench/bandwidth_covariate_variant.py: the measured bandwidth share as a calibration covariate."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from visprof.analysis.calibrate import make_fleet

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import bandwidth_covariate_variant as variant  # noqa: E402


def g(category, op, time_ms, subcategory=None):
    return SimpleNamespace(category=category, subcategory=subcategory, op=op, time_ms=time_ms)


def test_the_share_weighs_b_by_time_over_the_groups_the_table_has():
    table = {("elementwise", None, "aten.add.Tensor"): 0.5, ("convolution", "depthwise", "aten.conv2d.default"): 0.0}
    groups = [g("elementwise", "aten.add.Tensor", 1.0), g("convolution", "aten.conv2d.default", 3.0, "depthwise"),
              g("pooling", "aten.mean.dim", 6.0)]  # not in the table: out of both sums
    assert variant.bandwidth_share(groups, table) == pytest.approx(0.5 * 1.0 / 4.0)
    assert variant.bandwidth_share([g("pooling", "aten.mean.dim", 6.0)], table) is None


def test_the_committed_table_reads_and_holds_shares_in_zero_one():
    table = variant.read_table()
    assert len(table) >= 10 and all(0.0 <= b <= 1.0 for b in table.values())
    assert table[("convolution", "depthwise", "aten.conv2d.default")] < table[("memory", "cast", "aten.to.dtype")]


def test_the_share_joins_the_fleet_as_a_named_covariate():
    rng = np.random.default_rng(1)
    n = 30
    spec = np.exp(rng.normal(0.3, 0.1, n))
    models = [f"m{i}" for i in range(n)]
    buckets = [{"cat:linear": s, "idle": 1 - s} for s in rng.uniform(0, 1, n)]
    lines = []
    make = variant.with_covariate(make_fleet, {f"m{i}": 0.1 * (i % 5) for i in range(n)}, log=lines.append,
                                         name=variant.COVARIATE, what="measured bandwidth shares", needed=0.0)
    fleet = make(models, [f"f{i % 6}" for i in range(n)], buckets, spec, spec * 1.01, features=["cat:linear", "idle"])
    assert fleet.features[-1] == f"cov:{variant.COVARIATE}"
    assert lines == [f"measured bandwidth shares: {n} of {n} published rows (100.0%), {n} of {n} fleet rows"]


def test_a_missing_store_is_one_line(tmp_path, capsys):
    assert variant.main(["--store", str(tmp_path / "none.db"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bandwidth_covariate_variant.py: --store: not found")
