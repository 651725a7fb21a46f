"""bench/family_buckets_variant.py: a kernel family's time in one bucket, whatever category its row names."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import family_buckets_variant as variant  # noqa: E402


def result(families):
    """A profile of 4 ms of kernels: ``families`` as (family, category, subcategory, ms)."""
    cats = [SimpleNamespace(category="activation", subcategory=None, time_ms=2.0),
            SimpleNamespace(category="elementwise", subcategory=None, time_ms=2.0)]
    return SimpleNamespace(categories=cats, timing=SimpleNamespace(idle_ms=0.0), roofline=SimpleNamespace(groups=[]),
                           kernel_families=[SimpleNamespace(family=f, category=c, subcategory=s, time_ms=ms,
                                                            by_category=None)
                                            for f, c, s, ms in families])


def test_two_labels_of_one_kernel_are_one_bucket_and_the_rest_is_unchanged():
    a = variant.buckets_by_family(result([("at::native::vectorized_elementwise_kernel", "activation", None, 3.0),
                                          ("nvjet_tst", "linear", None, 1.0)]))
    b = variant.buckets_by_family(result([("at::native::vectorized_elementwise_kernel", "elementwise", None, 3.0),
                                          ("nvjet_tst", "linear", None, 1.0)]))
    assert a == b  # the label no longer decides the bucket
    assert a["kff:at::native::vectorized_elementwise_kernel"] == pytest.approx(0.75)
    assert a["kff:nvjet_tst"] == pytest.approx(0.25)
    assert a["cat:activation"] == pytest.approx(0.5) and not any(k.startswith("kf:") for k in a)


def test_a_family_name_with_a_slash_is_kept_whole():
    out = variant.buckets_by_family(result([("ns/odd_kernel", "memory", "cast", 4.0)]))
    assert out == {"cat:activation": 0.5, "cat:elementwise": 0.5, "kff:ns/odd_kernel": 1.0}
