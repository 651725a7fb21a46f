"""bench/split_family_buckets_variant.py: a kernel family's time by the category of each of its kernels."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import split_family_buckets_variant as variant  # noqa: E402

from visprof.analysis.calibrate import buckets_of  # noqa: E402


def result(families, idle_ms=0.0):
    """A profile of 4 ms of kernels: ``families`` as (family, category, subcategory, ms, by_category)."""
    cats = [SimpleNamespace(category="activation", subcategory=None, time_ms=1.0),
            SimpleNamespace(category="memory", subcategory="cast", time_ms=3.0)]
    return SimpleNamespace(categories=cats, timing=SimpleNamespace(idle_ms=idle_ms), roofline=SimpleNamespace(groups=[]),
                           kernel_families=[SimpleNamespace(family=f, category=c, subcategory=s, time_ms=ms, by_category=by)
                                            for f, c, s, ms, by in families])


def test_a_shared_kernel_counts_under_each_of_its_categories():
    profile = result([("at::native::vectorized_elementwise_kernel", "memory", "cast", 4.0,
                       {"memory/cast": 3.0, "activation": 1.0})], idle_ms=4.0)
    out = variant.split_buckets(profile)
    assert out["kf:memory/cast/at::native::vectorized_elementwise_kernel"] == pytest.approx(3.0 / 8.0)
    assert out["kf:activation/-/at::native::vectorized_elementwise_kernel"] == pytest.approx(1.0 / 8.0)
    kernel_family_total = sum(v for k, v in out.items() if k.startswith("kf:"))
    assert kernel_family_total == pytest.approx(sum(v for k, v in buckets_of(profile).items() if k.startswith("kf:")))
    assert {k: v for k, v in out.items() if not k.startswith("kf:")} == \
        {k: v for k, v in buckets_of(profile).items() if not k.startswith("kf:")}


def test_the_label_no_longer_decides_the_bucket():
    parts = {"memory/cast": 2.0, "activation": 2.0}
    a = variant.split_buckets(result([("k", "memory", "cast", 4.0, parts)]))
    b = variant.split_buckets(result([("k", "activation", None, 4.0, parts)]))
    assert a == b
    assert buckets_of(result([("k", "memory", "cast", 4.0, parts)])) != buckets_of(result([("k", "activation", None, 4.0, parts)]))


def test_rows_without_by_category_count_as_before():
    profile = result([("k", "memory", "cast", 3.0, None), ("nvjet_tst", "activation", None, 1.0, {"activation": 1.0})])
    assert variant.split_buckets(profile) == pytest.approx(buckets_of(profile))
