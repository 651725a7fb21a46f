"""visprof.analysis.predict on synthetic profiles with known answers, and on the H200 recordings."""
from __future__ import annotations

import dataclasses

import pytest

from recorded_results import recorded_result
from toy_results import SPEC, toy_result, toy_trace
from visprof.analysis.gpus import GpuTable
from visprof.analysis.group_scaling import (ACHIEVABLE, RATE_SCALINGS, default_rate_scaling, l2_hit_share, predict_group,
                                           rate_ratio)
from visprof.analysis.predict import predict_result, speedup, speedup_band
from visprof.base.errors import BadInputError
from visprof.result import LatencyStats, LaunchSizeRow, RooflineGroup, Timing

FAST_MATH = dataclasses.replace(SPEC, id="fast-math", name="Fast math", match=(), tensor_tflops={"bf16": 200, "fp16": 200},
                                fp32_tflops=20)
FAST_MEMORY = dataclasses.replace(SPEC, id="fast-memory", name="Fast memory", match=(), memory_bandwidth_gbs=2000)
SLOW = dataclasses.replace(SPEC, id="slow", name="Slow GPU", match=(), tensor_tflops={"bf16": 10, "fp16": 10}, fp32_tflops=5,
                           memory_bandwidth_gbs=100)
TABLE = GpuTable([SPEC, FAST_MATH, FAST_MEMORY])
US = 1e-3  # ms


def gemm(**changes) -> RooflineGroup:
    # Two 1 GFLOP GEMMs that ran 20 us each on SPEC: roof 10 us each (tensor), 1 us floor each.
    fields = dict(category="linear", subcategory=None, op="aten.addmm.default", count=2, kernel_count=2, time_ms=40 * US,
                  helper_ms=0.0, flops=1e9, bytes=1e6, param_bytes=6e5, tensor_core="bf16")
    return RooflineGroup(**{**fields, **changes})


def test_floor_plus_roof_over_efficiency():
    # e = 2 x 10 us / (40 - 2) us; on twice the tensor peak: 2 us + 2 x 5 us / e = 21 us
    p = predict_group(gemm(), SPEC, FAST_MATH, excess="bound")
    assert p.time_ms == pytest.approx(21 * US) and p.bound == "tensor"
    assert predict_group(gemm(), SPEC, SPEC, excess="bound").time_ms == pytest.approx(40 * US)  # same GPU: unchanged
    # compute-bound: bandwidth no help
    assert predict_group(gemm(), SPEC, FAST_MEMORY, excess="bound").time_ms == pytest.approx(40 * US)


def test_memory_bound_group_scales_with_bandwidth_only():
    add = gemm(op="aten.add.Tensor", count=1, kernel_count=1, time_ms=8 * US, flops=0.0, bytes=4e6, param_bytes=0.0,
               tensor_core=None)
    # roof 4 us, floor 1 us, e = 4/7: twice the bandwidth gives 1 + 2 x 7/4 = 4.5 us
    assert predict_group(add, SPEC, FAST_MEMORY, excess="bound").time_ms == pytest.approx(4.5 * US)
    assert predict_group(add, SPEC, FAST_MATH, excess="bound").time_ms == pytest.approx(8 * US)
    assert predict_group(add, SPEC, FAST_MEMORY).bound == "memory"


def test_batch_scales_flops_and_activations_not_weights():
    # batch x4: 4 GFLOP -> 40 us roof on SPEC; bytes 0.4 MB x 4 + 0.6 MB = 2.2 MB -> 2.2 us (still tensor-bound)
    p = predict_group(gemm(), SPEC, SPEC, scale=4, excess="bound")
    e = 20 / 38
    assert p.time_ms == pytest.approx(2 * US + 2 * 40 * US / e)
    # a weight-only op (an autocast weight cast) does not grow with the batch
    cast = gemm(op="aten.to.dtype", category="memory", count=1, kernel_count=1, time_ms=3 * US, flops=0.0, bytes=1e6,
                param_bytes=1e6, tensor_core=None)
    for excess in ("clock", "bound", "compute"):
        assert predict_group(cast, SPEC, SPEC, scale=16, excess=excess).time_ms == pytest.approx(3 * US), excess


def test_efficiency_is_capped_at_one_and_helpers_scale_with_bandwidth_and_batch():
    # ran faster than its roof (L2 hits): e = 1, so the target gets the full roof
    quick = gemm(time_ms=12 * US)
    assert predict_group(quick, SPEC, SPEC).time_ms == pytest.approx(2 * US + 20 * US)
    with_helper = gemm(time_ms=50 * US, helper_ms=10 * US)
    p = predict_group(with_helper, SPEC, FAST_MEMORY, scale=2, excess="bound")
    assert p.helper_ms == pytest.approx(10 * US * 2 / 2)


def test_with_clock_helpers_take_the_longer_of_their_roof_and_their_clock_scaled_time():
    # 2 ops x 0.4 MB of activations, x2 batch: the transforms move 2 x 2 x 0.8 MB = 3.2 MB.
    with_helper = gemm(time_ms=50 * US, helper_ms=10 * US)
    # at 2 TB/s that is 1.6 us, less than 10 us x 2 (same clock): the measured rate holds
    assert predict_group(with_helper, SPEC, FAST_MEMORY, scale=2).helper_ms == pytest.approx(20 * US)
    # at 100 GB/s it is 32 us at the peak, 32 / 0.88 at what memory kernels reach: the roof holds
    assert predict_group(with_helper, SPEC, SLOW, scale=2).helper_ms == pytest.approx(32 * US / ACHIEVABLE["memory"])
    # a faster clock shortens the rate-limited time
    fast_clock = dataclasses.replace(FAST_MEMORY, boost_clock_mhz=2 * SPEC.boost_clock_mhz)
    assert predict_group(with_helper, SPEC, fast_clock, scale=2).helper_ms == pytest.approx(10 * US)


def test_rate_limited_time_scales_by_nothing_the_clock_or_sms_times_clock():
    # twice the clock and 1.5x the SMs of the toy GPU, peaks far above: every group stays rate-limited
    big = dataclasses.replace(FAST_MATH, id="big", boost_clock_mhz=2 * SPEC.boost_clock_mhz, sms=15, memory_bandwidth_gbs=1e5)
    assert [rate_ratio(SPEC, big, s) for s in RATE_SCALINGS] == pytest.approx([0.5, 1.0, 1 / 3])
    with pytest.raises(ValueError, match="rate scaling"):
        rate_ratio(SPEC, big, "bandwidth")
    slow = gemm(time_ms=100 * US)  # 2 x 10 us of roof, 2 us of floors: 98 us off the roof
    times = {s: predict_group(slow, SPEC, big, rate_scaling=s).time_ms for s in RATE_SCALINGS}
    assert times == pytest.approx({"clock": (2 + 49) * US, "latency": (2 + 98) * US, "throughput": (2 + 98 / 3) * US})
    # a group at its roof on the target is not rate-limited: the scaling does not move it
    quick = gemm(time_ms=22 * US)
    assert len({round(predict_group(quick, SPEC, SLOW, rate_scaling=s).time_ms, 12) for s in RATE_SCALINGS}) == 1


def test_a_prediction_carries_its_latency_under_each_scaling_and_a_speedup_band():
    result = toy_result(toy_trace())
    same = predict_result(result, SPEC, table=TABLE)
    assert set(same.latency_by_scaling) == set(RATE_SCALINGS)
    assert same.latency_range_ms == pytest.approx((same.latency_ms, same.latency_ms))  # one GPU: nothing to choose
    big = dataclasses.replace(FAST_MATH, id="big", boost_clock_mhz=2 * SPEC.boost_clock_mhz, sms=15)
    table = GpuTable([SPEC, big])
    on_toy, on_big, ratio = speedup(result, SPEC, "big", table=table)
    lo, hi = speedup_band(on_toy, on_big)
    assert lo <= ratio <= hi and hi > lo
    low, high = on_big.latency_range_ms
    assert low <= on_big.latency_ms <= high and on_big.latency_by_scaling["clock"] == on_big.latency_ms
    assert on_big.to_dict()["latency_range_ms"] == (low, high)
    fits = "" if on_big.fits is None else (", fits" if on_big.fits else ", does NOT fit")
    assert repr(on_big) == (f"<Prediction {on_big.model} toy -> big: batch {on_big.batch_size}, {on_big.precision}, "
                            f"{on_big.latency_ms:.3f} ms (range {low:.3f}-{high:.3f}), {on_big.samples_per_s:,.1f} samples/s{fits}>")
    assert on_big.groups and "GroupPrediction" not in repr(on_big)
    # a pure roofline (fixed efficiency) has no measured rate to scale: no band
    fixed = predict_result(result, "big", table=table, efficiency=1.0)
    assert fixed.latency_by_scaling == {} and fixed.latency_range_ms is None and speedup_band(fixed, fixed) is None
    assert predict_result(result, "big", table=table, excess="bound").latency_range_ms is None


def test_one_sm_design_scales_rate_limited_time_with_sms_times_clock():
    hopper = dataclasses.replace(SPEC, compute_capability="9.0")
    fewer_sms = dataclasses.replace(hopper, id="fewer", name="Fewer SMs", match=(), sms=5)
    ada = dataclasses.replace(fewer_sms, id="ada", compute_capability="8.9")
    assert default_rate_scaling(hopper, fewer_sms) == "throughput"
    assert default_rate_scaling(hopper, ada) == "clock" and default_rate_scaling(SPEC, SPEC) == "clock"  # unknown design
    assert default_rate_scaling(None, hopper) == "clock"
    slow = gemm(time_ms=100 * US)  # 98 us off the roof; half the SMs of one design: twice that, at the same clock
    assert predict_group(slow, hopper, fewer_sms).time_ms == pytest.approx((2 + 2 * 98) * US)
    assert predict_group(slow, hopper, ada).time_ms == pytest.approx((2 + 98) * US)  # another design: the clock
    result = toy_result(toy_trace())
    table = GpuTable([hopper, fewer_sms, ada])
    on_fewer = predict_result(result, "fewer", source=hopper, table=table)
    assert on_fewer.rate_scaling == "throughput" and on_fewer.latency_ms == on_fewer.latency_by_scaling["throughput"]
    assert list(on_fewer.latency_by_scaling) == list(RATE_SCALINGS)
    on_ada = predict_result(result, "ada", source=hopper, table=table)
    assert on_ada.rate_scaling == "clock" and on_ada.latency_ms == on_ada.latency_by_scaling["clock"]


def test_copies_are_predicted_from_their_bytes_not_scaled_as_helper_time():
    """25 copies of 64 bytes, 1 us each (floor-bound): at 16x the batch on a slower GPU they
    still take ~1 us each; a large copy (64 MB of activations) scales with batch and bandwidth."""
    tiny = gemm(category="memory", op="[memcpy]", count=25, kernel_count=25, time_ms=25 * US, helper_ms=25 * US,
                flops=0.0, bytes=64.0, param_bytes=0.0, tensor_core=None)
    for excess in ("clock", "bound", "none"):
        p = predict_group(tiny, SPEC, SLOW, scale=16, excess=excess)
        # 25 floors, and 25 roofs of 64 B x 16 at 100 GB/s; with clock the 1 KB copies are in L2
        roofs = 0.0 if excess == "clock" else 25 * 64 * 16 / 100e9 * 1e3
        assert p.time_ms == pytest.approx(25 * US + roofs) and p.helper_ms == 0.0, excess
        assert p.bound == "memory"
    big = gemm(category="memory", op="[memcpy]", count=1, kernel_count=1, time_ms=65 * US, helper_ms=65 * US,
               flops=0.0, bytes=64e6, param_bytes=0.0, tensor_core=None)
    # roof 64 us on SPEC (1000 GB/s); x16 on SLOW (100 GB/s): 1 us + 16 x 640 us, less the 1 MB
    # of the 1 GB that SLOW's L2 holds; it ran at its roof here, so it does there too
    dram = 16 * 640 * (1 - 1e6 / (16 * 64e6))
    assert predict_group(big, SPEC, SLOW, scale=16).time_ms == pytest.approx((1 + dram) * US)
    assert predict_group(big, SPEC, SLOW, scale=16, excess="bound").time_ms == pytest.approx((1 + 16 * 640) * US)


def test_l2_holds_what_fits_and_a_share_of_what_does_not():
    assert l2_hit_share(0.5e6, SPEC) == 1.0 and l2_hit_share(4e6, SPEC) == pytest.approx(0.25)
    assert l2_hit_share(0.0, SPEC) == 0.0 and l2_hit_share(1e6, dataclasses.replace(SPEC, l2_mb=0)) == 0.0
    # only clock reads it: an op of 4 MB of activations that ran at its roof on the toy GPU, on a
    # GPU of a tenth of the bandwidth and the same 1 MB of L2: 3 MB from DRAM, at the roof still
    add = gemm(op="aten.add.Tensor", count=1, kernel_count=1, time_ms=5 * US, flops=0.0, bytes=4e6, param_bytes=0.0,
               tensor_core=None)
    assert predict_group(add, SPEC, SLOW, excess="none").time_ms == pytest.approx((1 + 40) * US)
    assert predict_group(add, SPEC, SLOW).time_ms == pytest.approx((1 + 30) * US)
    # one that ran at half its roof gets the share of the bandwidth memory kernels reach
    slow_add = dataclasses.replace(add, time_ms=9 * US)
    assert predict_group(slow_add, SPEC, SLOW).time_ms == pytest.approx((1 + 30 / ACHIEVABLE["memory"]) * US)


def test_unknown_groups_scale_as_memory_traffic_and_vanish_with_a_fixed_efficiency():
    unknown = gemm(flops=0.0, bytes=0.0, param_bytes=0.0, tensor_core=None, count=1, kernel_count=1, time_ms=11 * US)
    assert predict_group(unknown, SPEC, FAST_MEMORY).time_ms == pytest.approx(1 * US + 10 * US / 2)
    assert predict_group(unknown, None, FAST_MEMORY, efficiency=1.0).time_ms == 0.0
    # a fixed efficiency is a pure roofline: floor + roof
    assert predict_group(gemm(), None, SPEC, efficiency=1.0).time_ms == pytest.approx(2 * US + 20 * US)


def test_whole_result_adds_idle_and_reports_shares():
    timing = Timing(LatencyStats.from_samples([0.1]), 80_000, 1, busy_ms=0.076, idle_ms=0.024)
    result = toy_result(toy_trace(), timing)
    same = predict_result(result, SPEC, table=TABLE)
    # every toy group is slower than its roof except the two convolutions and the 3 MB copy,
    # which ran exactly at it: capped at e = 1, the convolutions get their floors (1 us per
    # kernel, the bf16 one's layout kernel included) on top, so the same GPU predicts 3 us more
    # busy time. The copy keeps its 3 us: a third of its bytes fit the toy GPU's 1 MB L2, so
    # its DRAM roof (2 us) is no longer above its measured time over the floor.
    assert same.busy_ms == pytest.approx(0.076 + 0.003)
    # more GPU work per iteration: the host's gaps shrink as busy_A / busy_B
    assert same.idle_ms == pytest.approx(0.024 * 0.076 / 0.079)
    assert same.latency_ms == pytest.approx(same.busy_ms + same.idle_ms)
    assert sum(same.shares.values()) == pytest.approx(1.0)
    fast = predict_result(result, "fast-math", table=TABLE)
    assert fast.latency_ms < same.latency_ms and fast.shares["launch"] > same.shares["launch"]
    assert fast.idle_ms == pytest.approx(0.024 * min(1.0, 0.076 / fast.busy_ms))
    small = predict_result(result, SPEC, table=TABLE, batch_size=2)  # a quarter of the batch: less GPU work
    assert small.busy_ms < 0.076 and small.idle_ms == pytest.approx(0.024)  # the gaps stay
    big = predict_result(result, SPEC, table=TABLE, batch_size=80)  # 10x the batch: GPU time ~10x, gaps ~1/10
    assert big.idle_ms == pytest.approx(0.024 * 0.076 / big.busy_ms) and big.idle_ms < 0.0035
    assert fast.source_gpu == "toy" and fast.target_gpu == "fast-math"
    assert fast.measured_latency_ms == pytest.approx(0.1)


def test_a_host_bound_profile_is_not_faster_with_more_gpu_work():
    """80% idle: at twice the batch the GPU time grows and the gaps shrink, but the latency
    stays at least the profile's (the host did not get faster); at 40x, the GPU time rules."""
    timing = Timing(LatencyStats.from_samples([0.4]), 20_000, 1, busy_ms=0.08, idle_ms=0.32)
    result = toy_result(toy_trace(), timing)
    double = predict_result(result, SPEC, table=TABLE, batch_size=16)
    assert double.busy_ms > 0.08 and double.busy_ms + 0.32 * 0.08 / double.busy_ms < 0.4
    assert double.latency_ms == pytest.approx(0.4) and double.idle_ms == pytest.approx(0.4 - double.busy_ms)
    big = predict_result(result, SPEC, table=TABLE, batch_size=320)
    assert big.busy_ms > 0.4 and big.idle_ms == pytest.approx(0.32 * 0.08 / big.busy_ms)
    # on its own GPU at its own batch the idle time is the profile's: not "where the GPU has more work"
    same = predict_result(result, SPEC, table=TABLE)
    assert same.idle_ms == pytest.approx(0.317, abs=5e-4)  # the busy time predicted there is 1% over the measured
    assert same.notes[0].endswith("the host's 0.320 ms of idle GPU per iteration is kept as is")
    for name in ("resnet50", "deit_small_patch16_224", "coatnet_0_rw_224", "mobilevit_s"):  # within 1%: kept
        assert predict_result(recorded_result(name), "h200").notes[0].endswith("idle GPU per iteration is kept as is")


def test_time_in_launches_smaller_than_the_target_is_named_not_modelled():
    result = toy_result(toy_trace())
    assert not any("thread block" in n for n in predict_result(result, SPEC, table=TABLE).notes)  # none recorded
    wide = dataclasses.replace(SPEC, id="wide", name="Wide GPU", match=(), sms=100)
    result.launch_sizes = [LaunchSizeRow(1, 1, 2.0, 0.004, 0.08), LaunchSizeRow(8, 15, 3.0, 0.002, 0.04),
                           LaunchSizeRow(10, 10, 1.0, 0.01, 0.2, one_per_sm=True),  # sized to the GPU it runs on
                           LaunchSizeRow(64, 127, 4.0, 0.034, 0.68)]  # straddles 100 SMs: not counted
    before = predict_result(result, SPEC, table=TABLE)  # 10 SMs: only the one-block launches are below
    assert not any("thread block" in n for n in before.notes)  # 8% of the time, under the note's 10%
    on_wide = predict_result(result, wide, table=GpuTable([SPEC, wide]))
    assert ("12% of its kernel time ran in launches of at most 15 thread blocks, fewer than the wide's 100 SMs: "
            "they leave SMs idle there, which the prediction does not model") in on_wide.notes
    assert on_wide.latency_ms == pytest.approx(predict_result(dataclasses.replace(result, launch_sizes=[]), wide,
                                                              table=GpuTable([SPEC, wide])).latency_ms)
    result.launch_sizes[0] = LaunchSizeRow(1, 1, 2.0, 0.006, 0.12)
    assert any(n.startswith("12% of its kernel time ran in launches of at most 1 thread block, fewer than the "
                            "toy's 10 SMs") for n in predict_result(result, SPEC, table=TABLE).notes)


def test_precision_switch_and_errors():
    result = toy_result(toy_trace())
    assert predict_result(result, SPEC, table=TABLE, precision="fp16").precision == "fp16"
    with pytest.raises(BadInputError, match="can switch between fp16 and bf16"):
        predict_result(result, SPEC, table=TABLE, precision="fp32")
    with pytest.raises(BadInputError, match="unknown GPU 'nope'"):
        predict_result(result, "nope", table=TABLE)
    result.roofline = None
    with pytest.raises(BadInputError, match="has no roofline groups"):
        predict_result(toy_result(toy_trace()).__class__.from_dict(result.to_dict()), SPEC, table=TABLE)


def test_a_gpu_without_a_spec_row_cannot_be_predicted_from():
    result = toy_result(toy_trace(), gpu="Mystery GPU")
    with pytest.raises(BadInputError, match="has no row in the GPU spec table"):
        predict_result(result, SPEC, table=TABLE)


# --- H200 recordings (real kernel times; bytes estimated, see tests/data/make_op_costs.py) -----
@pytest.mark.parametrize("name", ["resnet50", "deit_small_patch16_224", "coatnet_0_rw_224", "mobilevit_s"])
def test_h200_to_itself_reproduces_the_measured_latency(name):
    result = recorded_result(name)
    p = predict_result(result, "h200")
    assert p.latency_ms == pytest.approx(result.timing.latency_ms.median, rel=0.05)


@pytest.mark.parametrize("name", ["resnet50", "coatnet_0_rw_224", "mobilevit_s"])
def test_each_scalings_latency_is_its_groups_predicted_one_by_one(name):
    """predict_result predicts every group under the three RATE_SCALINGS at once; each scaling's
    groups are, to the last bit, predict_group's under it, and its latency in the band their sum
    as step 4 sums them. To an H100 PCIe (the H200's design: SMs x clock) and an RTX 3090 (the
    clock); ResNet-50 has layout transforms, MobileViT groups without FLOPs (legacy: "unknown")."""
    from visprof.analysis.group_scaling import GpuPair, under_each_scaling
    from visprof.analysis.predict import _busy_and_idle, source_spec

    result = recorded_result(name)
    table = GpuTable.default()
    source = source_spec(result, table)
    for target, batch, chosen in (("h100-pcie", 256, "throughput"), ("rtx3090", 1024, "clock")):
        p = predict_result(result, target, batch_size=batch, precision="fp16", table=table)
        assert p.rate_scaling == chosen and len(set(p.latency_by_scaling.values())) == 3
        spec = table.get(target)
        at_once = under_each_scaling(result.roofline.groups, GpuPair(source, spec, batch / 64, "fp16"))
        for scaling in RATE_SCALINGS:
            groups = [predict_group(g, source, spec, batch / 64, "fp16", rate_scaling=scaling) for g in result.roofline.groups]
            assert at_once[scaling] == groups, (target, scaling)
            _, busy, idle = _busy_and_idle(result, groups, measured=True)
            assert p.latency_by_scaling[scaling] == busy + idle, (target, scaling)
        assert p.groups == at_once[chosen] and p.latency_ms == p.latency_by_scaling[chosen]


def test_to_dict_is_asdict_with_the_range():
    """Prediction.to_dict converts its groups by hand (GroupPrediction.to_dict), not by asdict's walk:
    the same dict, keys in the same order, with and without the groups (and the fits column's words)."""
    p = predict_result(recorded_result("resnet50"), "rtx3090", batch_size=256)
    for groups in (True, False):
        expected = {**dataclasses.asdict(p), "latency_range_ms": p.latency_range_ms, "fits_label": p.fits_text}
        if not groups:
            del expected["groups"]
        got = p.to_dict(groups=groups)
        assert got == expected and list(got) == list(expected)
    assert [list(g) for g in p.to_dict(groups=True)["groups"]] == [list(dataclasses.asdict(g)) for g in p.groups]


def test_h200_to_consumer_gpus_orders_vit_above_cnns():
    """The published 3090 -> 4090 speed-ups (timm CSVs, batch 1024): DeiT-S x1.68, ResNet-50
    x1.31, CoAtNet-0 x1.37, MobileViT-S x1.31 (median of all models x1.40)."""
    published = {"deit_small_patch16_224": 1.676, "resnet50": 1.310, "coatnet_0_rw_224": 1.371, "mobilevit_s": 1.308}
    predicted = {}
    for name in published:
        _, _, predicted[name] = speedup(recorded_result(name), "rtx3090", "rtx4090", batch_size=1024, precision="fp16")
    print(predicted)
    assert max(predicted, key=predicted.get) == "deit_small_patch16_224"
    for name, value in published.items():
        assert predicted[name] == pytest.approx(value, rel=0.15), name
    assert all(1.05 < v < 2.33 for v in predicted.values())  # between the bandwidth and the tensor ratio


def test_predicted_peak_memory_and_fit():
    result = recorded_result("resnet50")
    small = predict_result(result, "rtx3090", batch_size=64)
    assert small.fits and small.peak_memory_bytes == pytest.approx(result.timing.max_memory_allocated_bytes)
    huge = predict_result(result, "rtx3090", batch_size=8192)
    assert huge.fits is False and any("more than the 24 GB" in n for n in huge.notes)
    assert huge.memory_share == pytest.approx(huge.peak_memory_bytes / 24e9)


def test_a_profile_of_unknown_parameter_count_says_its_memory_estimate_is_an_upper_bound():
    """A frozen TorchScript module's parameters are unknown: its weights are scaled with the batch."""
    result = recorded_result("resnet50")
    unknown = dataclasses.replace(result, model=dataclasses.replace(result.model, param_count=None))
    larger, known = predict_result(unknown, "rtx3090", batch_size=256), predict_result(result, "rtx3090", batch_size=256)
    assert larger.peak_memory_bytes == pytest.approx(result.timing.max_memory_allocated_bytes * 4)
    assert larger.peak_memory_bytes > known.peak_memory_bytes
    [note] = [n for n in larger.notes if "parameter count is unknown" in n]
    assert note.endswith(f"~{larger.peak_memory_bytes / 1e9:.1f} GB is an upper bound")
    assert not any("parameter count" in n for n in known.notes + predict_result(unknown, "rtx3090", batch_size=64).notes)


def test_a_peak_near_the_cards_memory_is_neither_a_fit_nor_a_miss():
    """Between 0.8x and 1.25x of the card the estimate is wrong about half the time against
    timm's published runs (bench/results/memory-fit-2026-12-06/): fits is None there, with a
    note, and the table says near; outside it yes or NO."""
    result = recorded_result("resnet50")
    weights = result.model.param_count * 4
    per_batch = (result.timing.max_memory_allocated_bytes - weights) / 64

    def at(share: float):
        batch = round((share * 24e9 - weights) / per_batch)
        return predict_result(result, "rtx3090", batch_size=batch)

    assert [at(s).fits for s in (0.75, 0.85, 1.0, 1.2, 1.3)] == [True, None, None, None, False]
    near = at(1.0)
    assert near.memory_share == pytest.approx(1.0, abs=0.01)
    [note] = [n for n in near.notes if "GB at batch" in n]
    assert note.endswith("x the 24 GB of the rtx3090: too near it for the estimate to say whether it fits")
    assert near.fits_text == "near" and at(0.75).fits_text == "yes" and at(1.3).fits_text == "NO"
    # the CSV and JSON had said only fits: null for "near", as for no estimate at all
    assert near.to_dict()["fits_label"] == "near" and at(1.3).to_dict()["fits_label"] == "NO"
    assert "may not fit" in repr(near)
    no_memory = dataclasses.replace(near, peak_memory_bytes=None, memory_share=None, fits=None)
    assert no_memory.fits_text == "-" and no_memory.to_dict()["fits_label"] == "-"


def test_time_above_the_roof_can_scale_with_general_throughput():
    """excess="compute": the 18 us the GEMMs took above their 20 us roof (and 2 us of floors)
    scale with FP32 throughput, not with the tensor peak that bounds them."""
    fast_fp32 = dataclasses.replace(SPEC, id="fast-fp32", fp32_tflops=20)
    assert predict_group(gemm(), SPEC, fast_fp32, excess="bound").time_ms == pytest.approx(40 * US)  # tensor peak unchanged
    assert predict_group(gemm(), SPEC, fast_fp32, excess="compute").time_ms == pytest.approx((2 + 20 + 9) * US)
    assert predict_group(gemm(), SPEC, SPEC, scale=2, excess="compute").time_ms == pytest.approx((2 + 40 + 36) * US)
    with pytest.raises(ValueError, match="excess must be one of"):
        predict_group(gemm(), SPEC, SPEC, excess="magic")


def test_clock_mode_takes_the_longer_of_the_roof_and_the_measured_rate_scaled_by_the_clock():
    """The default: the GEMMs' 38 us above their floors is a rate limit that scales with the
    boost clock; on the target they take the longer of that and their roof."""
    # a GPU with far lower peaks: roof 2 x 100 us at the peak, at the share of it tensor kernels
    # reach 2 x 100 / 0.82 us; the measured rate, 38 us: at its roof
    assert predict_group(gemm(), SPEC, SLOW).time_ms == pytest.approx((2 + 200 / ACHIEVABLE["tensor"]) * US)
    assert predict_group(gemm(), SPEC, SLOW, excess="bound").time_ms == pytest.approx((2 + 200 * 38 / 20) * US)
    # the same GPU: the measured rate holds at any batch, as with the efficiency kept
    for scale in (1, 4):
        same = predict_group(gemm(), SPEC, SPEC, scale=scale).time_ms
        assert same == pytest.approx((2 + 38 * scale) * US)
        assert same == pytest.approx(predict_group(gemm(), SPEC, SPEC, scale=scale, excess="bound").time_ms)
    # a memory op at 4/7 of its roof is rate-limited: twice the bandwidth or twice the SMs do
    # not help it, twice the clock halves it
    add = gemm(op="aten.add.Tensor", count=1, kernel_count=1, time_ms=8 * US, flops=0.0, bytes=4e6, param_bytes=0.0,
               tensor_core=None)
    assert predict_group(add, SPEC, FAST_MEMORY).time_ms == pytest.approx(8 * US)
    assert predict_group(add, SPEC, dataclasses.replace(SPEC, id="x", sms=20, fp32_tflops=20)).time_ms == pytest.approx(8 * US)
    # its roof on the target: 3 of its 4 MB go to DRAM (the toy L2 holds 1 MB), at 0.88 of the
    # bandwidth: 3.4 us. Twice the clock: 7 us / 2 = 3.5 us, still the rate; four times: the roof
    assert predict_group(add, SPEC, dataclasses.replace(SPEC, id="x", boost_clock_mhz=2000)).time_ms == pytest.approx(
        (1 + 3.5) * US)
    assert predict_group(add, SPEC, dataclasses.replace(SPEC, id="x", boost_clock_mhz=4000)).time_ms == pytest.approx(
        (1 + 3 / ACHIEVABLE["memory"]) * US)
    assert predict_group(gemm(), SPEC, SLOW).bound == "tensor"


def test_time_above_the_roof_can_be_dropped():
    """excess="none": on the target the GEMMs take their floors and their roof only, at any
    scale; the 18 us they took above it here are gone."""
    assert predict_group(gemm(), SPEC, SPEC, excess="none").time_ms == pytest.approx((2 + 20) * US)
    assert predict_group(gemm(), SPEC, SPEC, scale=2, excess="none").time_ms == pytest.approx((2 + 40) * US)
    twice_the_tensor_peak = dataclasses.replace(SPEC, id="fast", tensor_tflops={k: 2 * v for k, v in SPEC.tensor_tflops.items()})
    assert predict_group(gemm(), SPEC, twice_the_tensor_peak, excess="none").time_ms == pytest.approx((2 + 10) * US)


def test_predict_cli_modes_are_the_predictors():
    """The CLI's --excess choices are exactly the modes predict_group takes."""
    from visprof.analysis.group_scaling import EXCESS_MODES
    from visprof.cli.app import build_parser

    parser = build_parser()
    predict = next(a for a in parser._subparsers._group_actions[0].choices["predict"]._actions if a.dest == "excess")
    assert tuple(predict.choices) == EXCESS_MODES


def test_fraction_scales_the_roof_share_with_its_resource_and_the_rest_with_the_clock():
    add = gemm(op="aten.add.Tensor", count=1, kernel_count=1, time_ms=8 * US, flops=0.0, bytes=4e6, param_bytes=0.0,
               tensor_core=None)
    no_l2 = dataclasses.replace(SPEC, l2_mb=0)
    double = dataclasses.replace(no_l2, id="double", memory_bandwidth_gbs=2000)
    # roof 4 us of the 7 us above the floor: 1 + 4 / 2 + 3 = 6 us on twice the bandwidth
    assert predict_group(add, no_l2, double, excess="fraction").time_ms == pytest.approx(6 * US)
    # the off-roof 3 us follow the clock: twice the clock, 1 + 4 + 1.5
    fast_clock = dataclasses.replace(no_l2, id="clock2", boost_clock_mhz=2 * no_l2.boost_clock_mhz)
    assert predict_group(add, no_l2, fast_clock, excess="fraction").time_ms == pytest.approx(6.5 * US)
    # on the profiled GPU (L2 hits on both sides) the measured time comes back
    assert predict_group(add, SPEC, SPEC, excess="fraction").time_ms == pytest.approx(8 * US)


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, "64", True])
def test_a_batch_size_that_is_not_a_whole_number_of_one_or_more_is_refused(batch_size):
    """0 meant the profile's own batch, 1.5 was predicted, and "64" raised a TypeError."""
    result = toy_result(toy_trace())
    with pytest.raises(BadInputError, match=r"batch size must be an integer >= 1"):
        predict_result(result, SPEC, table=TABLE, batch_size=batch_size)
    assert predict_result(result, SPEC, table=TABLE, batch_size=None).batch_size == result.model.batch_size


def test_tensor_core_work_without_a_tensor_rate_on_the_target_is_named():
    """bf16 onto a T4 or V100: no bf16 tensor cores there, so the GEMMs are predicted at the
    FP32 rate; the note says why such a prediction is slow and that fp16 has the tensor rate."""
    result = recorded_result("resnet50")  # a bf16 profile
    on_t4 = predict_result(result, "t4")
    [note] = [n for n in on_t4.notes if "tensor cores" in n]
    share = float(note.split(": ")[1].split("%")[0]) / 100
    tensor_ms = sum(g.time_ms for g in result.roofline.groups if g.tensor_core == "bf16")
    assert share == pytest.approx(tensor_ms / sum(g.time_ms for g in result.roofline.groups), abs=0.005) and share > 0.1
    assert note.startswith("the t4 has no bf16 tensor cores") and "FP32 rate (8.1 TFLOP/s)" in note
    assert "(precision='fp16' predicts it on them)" in note
    as_fp16 = predict_result(result, "t4", precision="fp16")
    assert not any("tensor cores" in n for n in as_fp16.notes) and as_fp16.latency_ms < on_t4.latency_ms
    assert not any("tensor cores" in n for n in predict_result(result, "rtx4090").notes)  # bf16 tensor cores there


def test_the_predict_header_counts_models_not_profiles():
    """One model profiled at three sizes was "3 model(s)"; the whole H200 store 1,886 for 1,235 models."""
    from visprof.report.compare_text import format_predictions

    result = recorded_result("resnet50")
    at_sizes = [predict_result(dataclasses.replace(result, model=dataclasses.replace(result.model, img_size=s)), "rtx4090")
                for s in (160, 224, 288)]
    assert format_predictions(at_sizes, "NVIDIA GeForce RTX 4090").startswith(
        "visprof predict: 1 model(s) from 3 profiles (sizes, precisions, GPUs) on NVIDIA GeForce RTX 4090\n")
    assert format_predictions(at_sizes[:1], "X").startswith("visprof predict: 1 model(s) on X\n")


def test_a_loaded_measurement_is_predicted_as_its_profile_and_bad_arguments_are_one_line():
    """From a notebook: sources.load(...).profiles holds measurements, which predict_result took
    into an AttributeError; int8 was sent to "profile it at int8"; excess="banana" a plain ValueError."""
    from visprof.analysis import sources
    from visprof.analysis.gpus import gpu_table

    table = gpu_table()
    result = recorded_result("deit_small_patch16_224")
    measurement = sources.from_result(result, "h200.json", table)
    assert predict_result(measurement, "rtx4090", table=table).latency_ms == \
        pytest.approx(predict_result(result, "rtx4090", table=table).latency_ms)
    with pytest.raises(BadInputError, match="got Measurement without a profile"):
        predict_result(dataclasses.replace(measurement, result=None), "rtx4090", table=table)
    with pytest.raises(BadInputError, match="predicts at fp32, tf32, bf16, fp16"):
        predict_result(result, "rtx4090", precision="int8", table=table)
    with pytest.raises(BadInputError, match="excess must be one of"):
        predict_result(result, "rtx4090", excess="banana", table=table)
