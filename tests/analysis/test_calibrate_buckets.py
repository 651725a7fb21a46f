"""visprof.analysis.calibration_buckets.buckets_of: a profile's time as the calibration's bucket shares."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from visprof.analysis.calibration_buckets import buckets_of
from visprof.result import CategoryRow, KernelFamilyRow

SHARED = "at::native::vectorized_elementwise_kernel"


def profile(families, idle_ms=4.0):
    """8 ms of profiled time: 3 ms of casts, 1 ms of activation, ``idle_ms`` idle; ``families`` as rows."""
    categories = [CategoryRow("memory", "cast", 3.0, 0.75, 10, 0.0, None),
                  CategoryRow("activation", None, 1.0, 0.25, 5, 0.0, None)]
    return SimpleNamespace(categories=categories, timing=SimpleNamespace(idle_ms=idle_ms), roofline=None,
                           kernel_families=families)


def family(category, subcategory, by_category=None, time_ms=4.0):
    return KernelFamilyRow(family=SHARED, category=category, subcategory=subcategory, calls=15, time_ms=time_ms,
                           share=1.0, by_category=by_category)


def test_a_shared_kernel_counts_under_each_class_its_kernels_ran_as():
    out = buckets_of(profile([family("memory", "cast", {"memory/cast": 3.0, "activation": 1.0})]))
    assert out[f"kf:memory/cast/{SHARED}"] == pytest.approx(3 / 8)
    assert out[f"kf:activation/-/{SHARED}"] == pytest.approx(1 / 8)
    assert out["cat:memory"] == pytest.approx(3 / 8) and out["sub:memory/cast"] == pytest.approx(3 / 8)
    assert out["cat:activation"] == pytest.approx(1 / 8) and out["idle"] == pytest.approx(4 / 8)


def test_the_rows_label_does_not_decide_the_buckets_once_the_split_is_known():
    parts = {"memory/cast": 2.0, "activation": 2.0}
    as_cast, as_activation = family("memory", "cast", parts), family("activation", None, parts)
    assert buckets_of(profile([as_cast])) == buckets_of(profile([as_activation]))


def test_a_profile_without_the_split_counts_the_family_under_its_label():
    out = buckets_of(profile([family("memory", "cast")]))
    assert out[f"kf:memory/cast/{SHARED}"] == pytest.approx(4 / 8)
    assert not any(k.startswith("kf:activation") for k in out)
