"""bench/predicted_share_variant.py: bucket shares of the time predicted on the pair's GPUs."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import predicted_share_variant as variant  # noqa: E402


def group(category, op, time_ms, subcategory=None):
    return SimpleNamespace(category=category, subcategory=subcategory, op=op, flops=0.0, bytes=1e6, time_ms=time_ms)


GEMM = group("linear", "aten.mm.default", 1.0)
NORM = group("normalization", "aten.native_layer_norm.default", 2.0, "layer")


def result():
    """1 ms of GEMM, 2 ms of layer norm (one kernel family) and 1 ms idle on the profiled GPU."""
    cats = [SimpleNamespace(category="linear", subcategory=None, time_ms=1.0),
            SimpleNamespace(category="normalization", subcategory="layer", time_ms=2.0)]
    return SimpleNamespace(categories=cats, timing=SimpleNamespace(idle_ms=1.0),
                           roofline=SimpleNamespace(groups=[GEMM, NORM]),
                           kernel_families=[SimpleNamespace(category="normalization", subcategory="layer",
                                                            family="layer_norm_kernel", time_ms=2.0, by_category=None)])


def prediction(gemm_ms, norm_ms, idle_ms):
    groups = [SimpleNamespace(group=GEMM, time_ms=gemm_ms), SimpleNamespace(group=NORM, time_ms=norm_ms)]
    return SimpleNamespace(groups=groups, busy_ms=gemm_ms + norm_ms, idle_ms=idle_ms,
                           latency_ms=gemm_ms + norm_ms + idle_ms)


@pytest.fixture
def pair(monkeypatch):
    # On the base GPU the GEMM takes 3 of 4 ms, on the target 1 of 2 ms; no idle time on either.
    on = {"base": prediction(3.0, 1.0, 0.0), "target": prediction(1.0, 1.0, 0.0)}
    monkeypatch.setattr(variant, "predict_result", lambda res, gpu, **kw: on[gpu])
    monkeypatch.setitem(variant._pair, "base", "base")
    monkeypatch.setitem(variant._pair, "target", "target")
    monkeypatch.setitem(variant._pair, "batch", 256)
    monkeypatch.setitem(variant._pair, "table", None)
    monkeypatch.setitem(variant._pair, "precision", None)


def test_shares_are_the_mean_of_the_predicted_shares_on_the_two_gpus(pair):
    out = variant.buckets_by_predicted_share(result())
    assert out["cat:linear"] == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert out["cat:normalization"] == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert out["sub:normalization/layer"] == pytest.approx(out["cat:normalization"])
    assert out["op:linear/-/gemm [intensity unknown]"] == pytest.approx(out["cat:linear"])
    # a kernel family takes its sub-category's factor; the idle time its predicted share (none)
    assert out["kf:normalization/layer/layer_norm_kernel"] == pytest.approx(out["cat:normalization"])
    assert out["idle"] == pytest.approx(0.0)


def test_without_a_pair_the_shares_are_the_profiled_ones():
    assert not variant._pair
    out = variant.buckets_by_predicted_share(result())
    assert out["cat:linear"] == pytest.approx(0.25)
    assert out["idle"] == pytest.approx(0.25)
