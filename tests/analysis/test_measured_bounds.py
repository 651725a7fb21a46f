"""Bounds measured by Nsight Compute pooled per kernel family, and a profile's share on them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from visprof.analysis.measured_bounds import (BoundLibrary, CounterSet, build_library, counter_bound, counter_set,
                                              coverage)
from visprof.base.errors import BadInputError
from visprof.result import KernelCounters, KernelFamilyRow, ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
GELU = ("_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_"
        "8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2EEEEviT0_T1_")
ADD = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIN3c108BFloat16ES4_S4_NS0_15binary_"
       "internal10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_")


def kernel(name, category, weight, duration, sm, dram, tensor=0.0):
    return KernelCounters(name=name, category=category, launches=2, weight=weight,
                          metrics={"duration": duration, "sm": sm, "dram": dram, "tensor": tensor})


def recorded_vit() -> CounterSet:
    doc = json.loads((DATA / "ncu" / "h200-vit_base_patch16_224.kernel-counters.json").read_text())
    return CounterSet(model=doc["model"], gpu=doc["gpu"], tool=doc["tool"],
                      kernels=[KernelCounters(**k) for k in doc["kernels"]])


@pytest.mark.parametrize("sm, dram, bound", [(69.3, 55.2, "compute"), (16.6, 86.8, "memory"), (35.4, 29.0, "latency"),
                                             (39.9, 40.0, "memory"), (None, 50.0, None)])
def test_the_bound_is_the_unit_nearer_its_peak_or_latency_below_forty_percent(sm, dram, bound):
    assert counter_bound(sm, dram) == bound


def test_kernels_of_one_family_and_category_pool_across_models_weighted_by_their_time():
    a = CounterSet("model_a", "NVIDIA H200", "ncu 2025.3", [kernel(GELU, "activation", 12.0, 50_000, 70.0, 55.0)])
    b = CounterSet("model_b", "NVIDIA H200", "ncu 2025.3", [kernel(ADD, "activation", 4.0, 25_000, 40.0, 85.0),
                                                              kernel(ADD, "elementwise", 1.0, 10_000, 10.0, 90.0)])
    library = build_library([a, b])
    entries = library.lookup()
    assert set(entries) == {("at::native::vectorized_elementwise_kernel", "activation"),
                            ("at::native::vectorized_elementwise_kernel", "elementwise")}
    act = entries[("at::native::vectorized_elementwise_kernel", "activation")]
    w_a, w_b = 12.0 * 50_000, 4.0 * 25_000  # each kernel stands for weight launches of its duration
    assert act.models == ["model_a", "model_b"] and act.launches == 4 and act.weight_ns == w_a + w_b
    assert act.sm_pct == pytest.approx((w_a * 70.0 + w_b * 40.0) / (w_a + w_b))
    assert act.dram_pct == pytest.approx((w_a * 55.0 + w_b * 85.0) / (w_a + w_b))
    assert act.dram_pct_range == (55.0, 85.0) and act.bound == "compute"
    assert entries[("at::native::vectorized_elementwise_kernel", "elementwise")].bound == "memory"


def test_counters_of_two_gpus_make_no_library():
    a = CounterSet("m", "NVIDIA H200", "ncu", [kernel(GELU, "activation", 1.0, 1.0, 50.0, 50.0)])
    b = CounterSet("m", "NVIDIA H100 80GB HBM3", "ncu", [kernel(GELU, "activation", 1.0, 1.0, 50.0, 50.0)])
    with pytest.raises(BadInputError, match="a bound library is of one GPU; these results are of 2"):
        build_library([a, b])


def vit_profile() -> ProfileResult:
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    result.kernel_families = [  # the shape of a newer profile's table (the recording predates it)
        KernelFamilyRow("nvjet_sm90_tst", "linear", None, 49.0, 2.0, 0.5),
        KernelFamilyRow("at::native::vectorized_elementwise_kernel", "activation", None, 12.0, 0.6, 0.15),
        KernelFamilyRow("at::native::vectorized_layer_norm_kernel", "normalization", "layer", 25.0, 0.9, 0.2),
        KernelFamilyRow("at::native::elementwise_kernel", "attention", "core", 24.0, 0.5, 0.15),  # not measured there
    ]
    return result


def test_a_profile_takes_the_measured_bound_of_each_family_the_library_has():
    library = build_library([recorded_vit()])
    assert library.gpu == "NVIDIA H200" and library.tool.startswith("ncu ")
    cov = coverage(library, vit_profile())
    assert cov.kernel_ms == pytest.approx(4.0)
    assert cov.measured_ms == pytest.approx(3.5)  # the elementwise kernel of attention was not measured there
    assert cov.by_bound_ms == pytest.approx({"compute": 2.0 + 0.6 + 0.9})  # as ncu measured them on ViT-B/16
    assert cov.unmeasured == [("at::native::elementwise_kernel", "attention", 0.5)]
    assert cov.line() == ("bounds: 88% of kernel time on bounds measured by Nsight Compute (compute 88%), "
                          "12% estimated from tensor sizes")


def test_a_family_in_two_categories_takes_each_ones_measured_bound():
    """The library is keyed by family and category; coverage had looked up only a row's largest category,
    so ATen's vectorized kernel (activation: compute-bound here, memory: latency-bound) took one bound for
    both, as did nvjet's GEMMs as attention projections and as linear."""
    library = build_library([recorded_vit()])
    profile = vit_profile()
    profile.kernel_families[1].by_category = {"activation": 0.4, "memory/cast": 0.2}
    cov = coverage(library, profile)
    assert cov.by_bound_ms == pytest.approx({"compute": 2.0 + 0.4 + 0.9, "latency": 0.2})
    assert cov.measured_ms == pytest.approx(3.5) and cov.kernel_ms == pytest.approx(4.0)
    profile.kernel_families[1].by_category = {"activation": 0.4, "pooling": 0.2}  # a part the library lacks
    assert ("at::native::vectorized_elementwise_kernel", "pooling", pytest.approx(0.2)) in coverage(library, profile).unmeasured


def test_a_family_launched_with_fewer_blocks_than_sms_is_latency_bound_without_counters():
    library = build_library([recorded_vit()])
    profile = vit_profile()
    unmeasured = profile.kernel_families[-1]
    unmeasured.blocks = 131.0  # one fewer than the H200's 132 SMs
    profile.kernel_families.append(KernelFamilyRow("at::native::upsample_bilinear2d_out_frame", "pooling", None,
                                                    2.0, 1.0, 0.2, blocks=132.0))  # fills every SM: estimated
    profile.kernel_families.append(KernelFamilyRow("nvjet_sm90_tst", "linear", None, 1.0, 0.5, 0.1, blocks=1.0))
    cov = coverage(library, profile)  # a family ncu measured keeps its counters' bound, whatever its launch size
    assert cov.sm_count == 132 and cov.kernel_ms == pytest.approx(5.5)
    assert cov.measured_ms == pytest.approx(4.0) and cov.under_filled_ms == pytest.approx(0.5)
    assert cov.unmeasured == [("at::native::upsample_bilinear2d_out_frame", "pooling", 1.0)]
    assert cov.line() == ("bounds: 73% of kernel time on bounds measured by Nsight Compute (compute 73%), "
                          "9% latency-bound by launch size (fewer thread blocks than the GPU's 132 SMs), "
                          "18% estimated from tensor sizes")
    profile.gpu = {k: v for k, v in profile.gpu.items() if k != "sm_count"}  # an older record: no SM count
    assert coverage(library, profile).under_filled_ms == 0.0


def test_bounds_do_not_carry_to_another_gpu():
    library = build_library([recorded_vit()])
    profile = vit_profile()
    profile.gpu = {**profile.gpu, "name": "NVIDIA GeForce RTX 4090"}
    with pytest.raises(BadInputError, match="measured on NVIDIA H200; the profile ran on NVIDIA GeForce RTX 4090"):
        coverage(library, profile)


def test_a_library_round_trips_and_another_document_is_refused(tmp_path):
    library = build_library([recorded_vit()])
    path = tmp_path / "bounds.json"
    library.save(path)
    assert BoundLibrary.load(path) == library
    path.write_text('{"schema": "visprof.profile/1"}')
    with pytest.raises(BadInputError, match="not a visprof bound library"):
        BoundLibrary.load(path)


def test_a_profile_without_counters_is_refused_in_one_line():
    with pytest.raises(BadInputError, match=r"vit_base_patch16_224: no Nsight Compute counters \(make it with `visprof ncu"):
        counter_set(ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json"))


def test_copies_are_no_family_to_measure_next_and_said_apart():
    """[memcpy] and [memset] ranked 2nd and 8th among the families to give `visprof ncu` next, which
    cannot measure them (they are no kernels), and counted as estimated time."""
    library = build_library([recorded_vit()])
    profile = vit_profile()
    profile.kernel_families.append(KernelFamilyRow("[memcpy]", "memory", "copy", 4.0, 0.5, 0.1))
    cov = coverage(library, profile)
    assert cov.kernel_ms == pytest.approx(4.5) and cov.copies_ms == pytest.approx(0.5)
    assert [family for family, _, _ in cov.unmeasured] == ["at::native::elementwise_kernel"]
    assert cov.line() == ("bounds: 78% of kernel time on bounds measured by Nsight Compute (compute 78%), 11% in "
                          "memcpy/memset (no kernels for ncu), 11% estimated from tensor sizes")
