"""bench/anchored_spec_variant.py: the spec-only speed-up anchored on the base GPU's measured latency."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from recorded_results import recorded_result
from visprof.analysis.gpus import gpu_table
from visprof.analysis.predict import predict_result

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import anchored_spec_variant as variant  # noqa: E402


@pytest.mark.parametrize("name", ["resnet50", "deit_small_patch16_224"])
def test_anchored_on_the_profiled_gpu_at_its_latency_is_the_fraction_model(name):
    # The base is the profiled GPU and its "published" latency the profile's own: anchoring changes
    # nothing, so the speed-up is the `fraction` model's prediction from the profile.
    table = gpu_table()
    result = recorded_result(name)
    batch = result.model.batch_size
    own = predict_result(result, "h200", table=table, excess="fraction").latency_ms
    expected = own / predict_result(result, "rtx4090", table=table, excess="fraction").latency_ms
    got = variant.anchored_speedup(result, own, batch, table.get("h200"), table.get("rtx4090"), table)
    assert got == pytest.approx(expected, rel=0.02)


def test_a_slower_base_than_predicted_is_time_off_the_roof():
    # A longer latency on the base than predicted: the time added is off every roof, and that time
    # scales with the clocks (H200 1980 MHz -> RTX 4090 2520 MHz: x1.27 faster), where the roofs it
    # was predicted from are far lower on the 4090 (the anchor-free speed-up is about x0.56). So the
    # slower the base, the larger the speed-up, and it stays below the clock ratio.
    table = gpu_table()
    result = recorded_result("resnet50")
    batch = result.model.batch_size
    own = predict_result(result, "h200", table=table, excess="fraction").latency_ms
    base, target = table.get("h200"), table.get("rtx4090")
    free = variant.anchored_speedup(result, own, batch, base, target, table)
    slow = variant.anchored_speedup(result, 2 * own, batch, base, target, table)
    slower = variant.anchored_speedup(result, 20 * own, batch, base, target, table)
    assert free < slow < slower < target.boost_clock_mhz / base.boost_clock_mhz
