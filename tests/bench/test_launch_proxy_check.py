"""bench/launch_proxy_check.py: the launch-size proxies from a kernel-family table."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import launch_proxy_check  # noqa: E402


def family(name, calls, time_ms):
    return SimpleNamespace(family=name, calls=calls, time_ms=time_ms)


FAMILIES = [family("nvjet_tst", 10, 1.0),  # 100 us a launch
            family("at::native::elementwise_kernel", 100, 0.4),  # 4 us
            family("layer_norm", 50, 0.6),  # 12 us
            family("[memcpy]", 1000, 5.0)]  # copies have no launch shape: left out


def test_mean_launch_leaves_copies_out():
    assert launch_proxy_check.mean_launch_us(FAMILIES) == pytest.approx(math.log(2.0 * 1e3 / 160))


@pytest.mark.parametrize("bound, share", [(5, 0.2), (10, 0.2), (20, 0.5), (200, 1.0)])
def test_short_share_counts_families_under_the_bound(bound, share):
    assert launch_proxy_check.short_share(bound)(FAMILIES) == pytest.approx(share)


def test_no_kernels_is_nan():
    assert math.isnan(launch_proxy_check.mean_launch_us([family("[memset]", 3, 1.0)]))
    assert math.isnan(launch_proxy_check.short_share(5)([]))


def test_missing_store_is_one_line(tmp_path, capsys):
    assert launch_proxy_check.main([str(tmp_path / "none.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("launch_proxy_check.py: not found:")
