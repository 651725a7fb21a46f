"""bench/group_norm_kind_variant.py: one-group norms get an op type of their own."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import group_norm_kind_variant as variant  # noqa: E402


def result(kernels):
    cats = [SimpleNamespace(category="normalization", subcategory="group", time_ms=3.0),
            SimpleNamespace(category="linear", subcategory=None, time_ms=1.0)]
    groups = [SimpleNamespace(category="normalization", subcategory="group", op="aten.native_group_norm.default",
                              flops=0.0, bytes=1e6, time_ms=3.0)]
    return SimpleNamespace(categories=cats, timing=SimpleNamespace(idle_ms=0.0), roofline=SimpleNamespace(groups=groups),
                           kernel_families=[SimpleNamespace(category="normalization", subcategory="group", family=f,
                                                            time_ms=1.5, by_category=None) for f in kernels])


def test_a_group_norm_without_the_generic_apply_kernel_is_one_group():
    one = variant.buckets_by_group_norm_kind(result(["at::native::RowwiseMomentsCUDAKernel"]))
    assert one["op:normalization/group/group_norm [one group]"] == pytest.approx(0.75)
    assert "op:normalization/group/group_norm" not in one
    multi = variant.buckets_by_group_norm_kind(result(["at::native::RowwiseMomentsCUDAKernel",
                                                       "at::native::elementwise_kernel"]))
    assert multi["op:normalization/group/group_norm"] == pytest.approx(0.75)
    unknown = variant.buckets_by_group_norm_kind(result([]))  # no kernel families: the shared type
    assert "op:normalization/group/group_norm" in unknown
