"""Roofline groups, bound classification and time shares (visprof.analysis.roofline)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures import TraceBuilder, cpu_trace
from toy_results import costed, toy_result, toy_trace
from visprof.analysis import roofline
from visprof.analysis.gpus import GpuTable
from visprof.attribution.attribute import attribute
from visprof.native.records import CapturedTrace
from visprof.report.table import render
from visprof.result import LatencyStats, ModelInfo, ProfileResult, RunConfig, Timing, category_totals

DATA = Path(__file__).resolve().parents[1] / "data"

# Round numbers: 100 tensor TFLOP/s (= 100 FLOP/ps), 10 FP32 TFLOP/s, 1000 GB/s (= 1 byte/ps).












@pytest.mark.parametrize("iterations", [1, 3])
def test_groups_collapse_repeats_and_count_per_iteration(iterations):
    groups = roofline.op_groups(attribute(toy_trace(iterations)))
    by_op = {(g.op, g.flops): g for g in groups}
    gemm = by_op[("aten.addmm.default", 1e9)]
    assert gemm.count == 2 and gemm.kernel_count == 2
    assert gemm.time_ms == pytest.approx(0.040)
    assert (gemm.bytes, gemm.param_bytes, gemm.tensor_core) == (1_000_000, 600_000, "bf16")
    assert ("aten.view.default", 0.0) not in by_op
    memcpy = by_op[("[memcpy]", 0.0)]
    assert memcpy.bytes == 3_000_000 and memcpy.helper_ms == pytest.approx(0.003) and memcpy.category == "memory"
    assert by_op[("aten.convolution.default", 1e9)].helper_ms == pytest.approx(0.005)


def test_bounds_and_efficiencies_on_known_roofline_times():
    summary = toy_result(toy_trace()).roofline
    by_op = {(g.op, g.flops): g for g in summary.groups}
    assert by_op[("aten.addmm.default", 1e9)].bound == "tensor"
    assert by_op[("aten.addmm.default", 1e9)].efficiency == pytest.approx(0.5)
    assert by_op[("aten.add.Tensor", 0.0)].bound == "memory"
    assert by_op[("aten.add.Tensor", 0.0)].efficiency == pytest.approx(0.5)
    assert by_op[("aten.convolution.default", 1e8)].bound == "compute"
    assert by_op[("aten.convolution.default", 1e8)].efficiency == pytest.approx(1.0)
    conv16 = by_op[("aten.convolution.default", 1e9)]
    assert conv16.bound == "tensor" and conv16.efficiency == pytest.approx(1.0)  # the helper is not main time
    # kernel time by bound, in ms: tensor 40 + 10, memory 8 + 5 + 3, compute 10
    assert summary.bound_ms == pytest.approx({"tensor": 0.050, "memory": 0.016, "compute": 0.010})
    assert summary.basis == "kernel time"
    assert sum(summary.shares.values()) == pytest.approx(1.0) and "launch" not in summary.shares
    assert summary.ceilings == {"tensor_tflops": 100, "fp32_tflops": 10, "bandwidth_gbs": 1000}


def test_shares_are_of_latency_with_idle_as_launch_bound():
    # 76 us of kernels, busy 76 us, idle 24 us: latency 100 us
    timing = Timing(LatencyStats.from_samples([0.1]), 80_000, 1, busy_ms=0.076, idle_ms=0.024)
    shares = toy_result(toy_trace(), timing).roofline.shares
    assert shares["launch"] == pytest.approx(0.24)
    assert shares["tensor"] == pytest.approx(0.50)
    assert shares["memory"] == pytest.approx(0.16)
    assert shares["compute"] == pytest.approx(0.10)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_shares_of_overlapping_kernels_scale_kernel_time_to_busy_time():
    """Kernels on several streams overlap: 76 us of kernel time in 38 us of busy time. Unscaled, the
    bound shares plus launch would add up to 138% of the latency."""
    timing = Timing(LatencyStats.from_samples([0.1]), 80_000, 1, busy_ms=0.038, idle_ms=0.062)
    shares = toy_result(toy_trace(), timing).roofline.shares
    # each bound's kernel time x 38/76 busy per kernel us, over the 100 us latency
    assert shares["tensor"] == pytest.approx(0.050 * 0.5 / 0.1)  # 25%
    assert shares["memory"] == pytest.approx(0.016 * 0.5 / 0.1)  # 8%
    assert shares["compute"] == pytest.approx(0.010 * 0.5 / 0.1)  # 5%
    assert shares["launch"] == pytest.approx(0.62)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_a_category_mostly_fp32_with_a_little_tensor_core_work_has_the_fp32_roof():
    """A category's attainable TFLOP/s is the peak of the math most of its FLOPs are: 1e9 FP32 FLOPs
    and 1e8 on bf16 tensor cores get SPEC's FP32 peak, 10 TFLOP/s. The tensor peak (100) would
    overstate its roof 10x."""
    b = TraceBuilder()
    conv = b.module("conv", "Conv2d")
    costed(b, "aten.convolution.default", conv, [("conv_fp32", 100_000)], flops=1e9, bytes=1_000_000,
           groups=1, in_channels=8, kernel_size=[3, 3])
    costed(b, "aten.convolution.default", conv, [("conv_bf16", 1_000)], flops=1e8, bytes=1_000_000,
           tensor_core="bf16", groups=1, in_channels=16, kernel_size=[3, 3])
    point = next(p for p in toy_result(b.build()).roofline.categories if p.category == "convolution")
    # intensity 1.1e9 / 2e6 = 550 FLOP/byte, past the FP32 ridge (10 FLOP/byte): the roof is the peak
    assert point.flops == pytest.approx(1.1e9) and point.intensity == pytest.approx(550)
    assert point.attainable_tflops == pytest.approx(10)


def test_category_points_place_each_category_against_the_roof():
    points = {p.category: p for p in toy_result(toy_trace()).roofline.categories}
    linear = points["linear"]
    assert linear.flops == 2e9 and linear.bytes == 2e6 and linear.intensity == 1000
    assert linear.tflops == pytest.approx(50.0)  # 2e9 FLOP in 40 us
    assert linear.attainable_tflops == 100  # intensity 1000 is past the ridge (100 FLOP/byte)
    assert linear.bound == "tensor"
    elementwise = points["elementwise"]
    assert elementwise.intensity == 0 and elementwise.gbps == pytest.approx(500.0) and elementwise.bound == "memory"
    conv = points["convolution"]
    assert conv.bound_ms == pytest.approx({"compute": 0.010, "tensor": 0.010, "memory": 0.005})


def test_category_times_match_the_category_table():
    result = toy_result(toy_trace())
    totals = result.category_totals()
    for point in result.roofline.categories:
        assert point.time_ms == pytest.approx(totals[point.category].time_ms)


def test_result_round_trips_with_its_roofline_and_old_files_load_without(tmp_path):
    result = toy_result(toy_trace())
    path = tmp_path / "r.json"
    result.to_json(path)
    again = ProfileResult.load(path)
    assert again.roofline == result.roofline
    data = json.loads(path.read_text())
    del data["roofline"]
    for row in data["categories"]:
        del row["bytes"], row["gbps"]
    old = ProfileResult.from_dict(data)
    assert old.roofline is None and old.categories[0].bytes == 0.0
    assert "Roofline on" not in render(old) and "Roofline on" in render(result)


def test_report_section_lists_bounds_and_categories():
    timing = Timing(LatencyStats.from_samples([0.1]), 80_000, 1, busy_ms=0.076, idle_ms=0.024)
    text = render(toy_result(toy_trace(), timing))
    assert "Roofline on Toy GPU (spec row toy: 100 tensor TFLOP/s, 10 FP32 TFLOP/s, 1000 GB/s)" in text
    assert "Time by bound (of latency): tensor-core 50.0%, memory-bandwidth 16.0%, other-compute 10.0%, launch/host (idle) 24.0%" in text
    line = next(l for l in text.splitlines() if l.startswith("linear") and "tensor" in l)
    assert line.split() == ["linear", "0.040", "2.00", "2.0", "1000.0", "50.0", "50", "50", "tensor"]


def test_gpu_without_a_spec_row_keeps_groups_and_warns():
    result = toy_result(toy_trace(), gpu="NVIDIA Q999 (no such GPU)")
    assert result.roofline.gpu is None and result.roofline.groups and not result.roofline.shares
    assert any("has no row in the GPU spec table" in w for w in result.warnings)
    assert "Roofline on" not in render(result)


def test_cpu_results_keep_groups_without_ceilings():
    trace = cpu_trace()
    attr = attribute(trace)
    result = ProfileResult(ModelInfo("tiny"), RunConfig(), "cpu", categories=attr.category_rows())
    roofline.attach(result, attr)
    assert result.roofline.gpu is None and result.roofline.groups and result.warnings == []


def test_bad_gpu_file_in_the_environment_does_not_cost_the_profile(tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[gpus]]\nid = 1\n")
    monkeypatch.setenv("VISPROF_GPUS", str(bad))
    trace = toy_trace()
    attr = attribute(trace)
    result = ProfileResult(ModelInfo("toy"), RunConfig("bf16", device="cuda:0"), "gpu", gpu={"name": "NVIDIA H200"})
    roofline.attach(result, attr)
    assert result.roofline.gpu == "h200"
    assert any("using the built-in GPU table" in w for w in result.warnings)


# --- recorded H200 traces (bf16, batch 64; recorded before ops carried bytes) -----------------
@pytest.mark.parametrize("name", ["resnet50", "deit_small_patch16_224", "coatnet_0_rw_224", "mobilevit_s"])
def test_recorded_traces_shares_and_category_times(name):
    trace = CapturedTrace.load(DATA / f"{name}.trace.json.gz")
    attr = attribute(trace)
    spec = GpuTable.default().get("h200")
    summary = roofline.summarize(attr, spec, "bf16")
    assert sum(summary.shares.values()) == pytest.approx(1.0)
    totals = category_totals(attr.category_rows())
    for point in summary.categories:
        assert point.time_ms == pytest.approx(totals[point.category].time_ms)
    # Legacy recordings: GEMMs and convolutions are taken to run on bf16 tensor cores, and
    # ops without FLOPs have no bytes recorded, so they are "unknown", never guessed.
    assert all(g.bound == "unknown" for g in summary.groups if g.flops == 0 and g.bytes == 0)
    assert any(g.bound == "tensor" for g in summary.groups)
    # A repeated network collapses: far fewer groups than ops per iteration.
    assert len(summary.groups) < len(trace.ops) / trace.iterations / 3


def test_resnet50_nchw_convolutions_spend_a_third_in_layout_transforms():
    trace = CapturedTrace.load(DATA / "resnet50.trace.json.gz")
    groups = roofline.op_groups(attribute(trace), "bf16")
    conv = [g for g in groups if g.category == "convolution"]
    helper, total = sum(g.helper_ms for g in conv), sum(g.time_ms for g in conv)
    assert 0.9 < helper < 1.2 and 2.8 < total < 3.2
