"""Op-type and kernel-family tables, on recorded H200 traces and fabricated ones."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixtures import TraceBuilder
from visprof.attribution import attribute
from visprof.attribution.op_types import kernel_family, kernel_family_rows, op_type, op_type_rows
from visprof.native.records import CapturedTrace
from visprof.result import ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDED = ["resnet50", "deit_small_patch16_224", "coatnet_0_rw_224", "mobilevit_s"]


@pytest.mark.parametrize("name", RECORDED)
def test_tables_account_for_every_kernel(name):
    attr = attribute(CapturedTrace.load(DATA / f"{name}.trace.json.gz"))
    kernel_ms = sum(r.time_ms for r in attr.category_rows())
    for rows in (op_type_rows(attr), kernel_family_rows(attr)):
        assert sum(r.time_ms for r in rows) == pytest.approx(kernel_ms, rel=1e-9)
        assert sum(r.share for r in rows) == pytest.approx(1.0, rel=1e-9)
        assert [r.time_ms for r in rows] == sorted((r.time_ms for r in rows), reverse=True)


def test_resnet50_splits_convolutions_by_kind_and_names_batch_norm():
    attr = attribute(CapturedTrace.load(DATA / "resnet50.trace.json.gz"))
    rows = {r.op_type: r for r in op_type_rows(attr)}
    dense, pointwise = rows["aten.conv2d.default [dense]"], rows["aten.conv2d.default [pointwise]"]
    # ResNet-50: 53 convolutions a forward, 36 of them 1x1 (3 per bottleneck x 16, minus the 3x3s, plus downsamples)
    assert (dense.calls, pointwise.calls) == (17, 36)
    assert dense.category == pointwise.category == "convolution"
    assert (dense.subcategory, pointwise.subcategory) == ("dense", "pointwise")
    norm = rows["aten.batch_norm.default"]
    assert (norm.category, norm.subcategory, norm.calls) == ("normalization", "batch", 53)


def test_mangled_kernel_names_become_families():
    assert kernel_family("_ZN2at6native33batch_norm_transform_input_kernelIN3c108BFloat16EffLb1EiEEvv") == \
        "at::native::batch_norm_transform_input_kernel"
    assert kernel_family("void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<3, float, int>(int)") \
        == "at::native::conv_depthwise2d_forward_kernel"
    # a launcher is named by the kernel it launches; tile sizes are stripped
    assert kernel_family("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x64_64x4_nn_align8>(Params)") \
        == "cutlass_80_tensorop_bf16_s16816gemm_bf16"
    assert kernel_family("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT") == "nvjet_tst"
    assert kernel_family("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1") == \
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"


def test_op_types_split_gemms_by_intensity_and_convolutions_by_groups():
    assert op_type("aten.mm.default", {}, 1e9, 1e6) == "aten.mm.default [high intensity]"
    assert op_type("aten.mm.default", {}, 1e8, 1e6) == "aten.mm.default [mid intensity]"
    assert op_type("aten.addmm.default", {}, 1e7, 1e6) == "aten.addmm.default [low intensity]"
    assert op_type("aten.mm.default", {}, 0, 0) == "aten.mm.default [intensity unknown]"
    conv = "aten.convolution.default"
    assert op_type(conv, {"groups": 32, "in_channels": 256, "kernel_size": [3, 3]}, 1, 1) == f"{conv} [grouped]"
    assert op_type(conv, {"groups": 256, "in_channels": 256, "kernel_size": [3, 3]}, 1, 1) == f"{conv} [depthwise]"
    assert op_type(conv, {"groups": 1, "in_channels": 256, "kernel_size": [1, 1]}, 1, 1) == f"{conv} [pointwise]"
    assert op_type("aten.native_group_norm.default", {}, 0, 0) == "aten.native_group_norm.default"


def test_group_norm_has_its_own_sub_category_and_rows():
    b = TraceBuilder(iterations=2)
    root = b.module("", "Net")
    gn = b.module("norm", "GroupNorm", root)
    bn = b.module("bn", "BatchNorm2d", root)
    for it in range(2):
        b.iteration = it
        b.op("aten.native_group_norm.default", gn, [("group_norm_kernel", 3_000), ("RowwiseMomentsCUDAKernel", 1_000)])
        b.op("aten.native_batch_norm.default", bn, [("batch_norm_transform_input_kernel", 2_000)])
    attr = attribute(b.build())
    rows = {r.op_type: r for r in op_type_rows(attr)}
    assert rows["aten.native_group_norm.default"].subcategory == "group"
    assert rows["aten.native_group_norm.default"].time_ms == pytest.approx(0.004)
    assert rows["aten.native_group_norm.default"].kernels == 2
    assert rows["aten.native_batch_norm.default"].subcategory == "batch"
    subs = {(r.category, r.subcategory) for r in attr.category_rows()}
    assert {("normalization", "group"), ("normalization", "batch")} <= subs


def test_result_keeps_the_tables_and_old_results_still_load(tmp_path):
    old = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    assert old.op_types == [] and old.kernel_families == []
    attr = attribute(CapturedTrace.load(DATA / "deit_small_patch16_224.trace.json.gz"))
    old.op_types, old.kernel_families = op_type_rows(attr), kernel_family_rows(attr)
    old.to_json(tmp_path / "r.json")
    back = ProfileResult.load(tmp_path / "r.json")
    assert back.op_types == old.op_types and back.kernel_families == old.kernel_families
