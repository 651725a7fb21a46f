"""Op-type and kernel-family tables, on recorded H200 traces and fabricated ones."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixtures import TraceBuilder
from visprof.attribution import attribute
from visprof.attribution.op_types import kernel_family, kernel_family_rows, launch_size_rows, op_type, op_type_rows
from visprof.native.records import KIND_MEMCPY, KIND_MEMSET, CapturedTrace
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
    old.launch_sizes = launch_size_rows(attr, 132)
    old.to_json(tmp_path / "r.json")
    back = ProfileResult.load(tmp_path / "r.json")
    assert back.op_types == old.op_types and back.kernel_families == old.kernel_families
    assert back.launch_sizes == old.launch_sizes and any(r.one_per_sm for r in back.launch_sizes)
    # the share below a bound leaves the one-per-SM row out, however few blocks it launches
    below = back.launch_share_below(1 << 30)
    assert below == pytest.approx(1.0 - sum(r.share for r in back.launch_sizes if r.one_per_sm)) and below < 1.0
    assert back.launch_share_below(1) == 0.0 and ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")\
        .launch_share_below(256) is None  # no launch sizes: unknown, not 0


GEMM = "sm90_xmma_fprop_implicit_gemm_bf16"
TO_NHWC = "_ZN5cudnn19engines_precompiled16nchwToNhwcKernelI13__nv_bfloat16EEvv"
TO_NCHW = "_ZN5cudnn19engines_precompiled16nhwcToNchwKernelI13__nv_bfloat16EEvv"
BIAS_ADD = "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_15CUDAFunctor_addIN3c108BFloat16EEESt5arrayIPcLm3EEEEviT0_T1_"


def _convolutions(iterations: int = 2) -> TraceBuilder:
    """A small convolution whose layout transforms outlast its GEMM, with a bias add and a memset."""
    b = TraceBuilder(iterations=iterations)
    conv = b.module("conv", "Conv2d", b.module("", "Net"))
    for it in range(iterations):
        b.iteration = it
        external_id = b.op("aten.convolution.default", conv, [(TO_NHWC, 3_000), (GEMM, 2_000), (TO_NCHW, 500),
                                                               (BIAS_ADD, 500)],
                           flops=1e9, in_channels=64, groups=1, kernel_size=[3, 3])
        b.kernel("memset", 400, external_id=external_id, kind=KIND_MEMSET, nbytes=1024)
        b.ops[-1].bytes = 6_000_000
    return b


def test_kernel_families_take_the_flops_of_their_op_on_its_math_kernel_and_its_bytes_by_time():
    attr = attribute(_convolutions().build())
    rows = {r.family: r for r in kernel_family_rows(attr)}
    gemm, to_nhwc, to_nchw = rows[GEMM], rows["cudnn::engines_precompiled::nchwToNhwcKernel"], \
        rows["cudnn::engines_precompiled::nhwcToNchwKernel"]
    bias, memset = rows["at::native::vectorized_elementwise_kernel"], rows["[memset]"]
    assert bias.category == "convolution" and memset.category == "memory"
    # per iteration: the GEMM did the FLOPs, though a layout transform ran longer and the bias add is the op's too
    assert (gemm.gflop, to_nhwc.gflop, to_nchw.gflop, bias.gflop, memset.gflop) == (pytest.approx(1.0), 0, 0, 0, 0)
    # the bytes over the convolution's own kernels by time (3, 2, 0.5, 0.5 of 6 us); none on the memset
    assert (to_nhwc.mb, gemm.mb, to_nchw.mb, bias.mb, memset.mb) == (
        pytest.approx(3.0), pytest.approx(2.0), pytest.approx(0.5), pytest.approx(0.5), 0)
    ops = op_type_rows(attr)
    assert sum(r.gflop for r in rows.values()) == pytest.approx(sum(r.gflop for r in ops))
    assert sum(r.mb for r in rows.values()) == pytest.approx(sum(r.mb for r in ops))


def test_an_op_without_a_kernel_of_its_class_puts_its_work_on_its_longest_kernel():
    b = TraceBuilder()
    root = b.module("", "Net")
    b.op("aten.convolution.default", b.module("conv", "Conv2d", root), [(BIAS_ADD, 700), (BIAS_ADD, 300)],
         flops=4e9, in_channels=64, groups=1, kernel_size=[3, 3])
    b.ops[-1].bytes = 1_000_000
    (row,) = kernel_family_rows(attribute(b.build()))
    assert (row.gflop, row.mb) == (pytest.approx(4.0), pytest.approx(1.0))


@pytest.mark.parametrize("name", RECORDED)
def test_kernel_families_carry_all_the_flops_of_ops_that_launched_kernels(name):
    attr = attribute(CapturedTrace.load(DATA / f"{name}.trace.json.gz"))
    launched = sum(r.gflop for r in op_type_rows(attr) if r.kernels)
    families = kernel_family_rows(attr)
    assert launched > 100 and sum(r.gflop for r in families) == pytest.approx(launched, rel=1e-9)
    # the FLOPs are on math kernels: none on cuDNN's layout transforms or ATen's elementwise kernels
    assert not any(r.gflop for r in families if "nchwToNhwc" in r.family or "elementwise_kernel" in r.family)


def _with_grids(b: TraceBuilder, grids: list[tuple[int, int, int]], blocks: list[tuple[int, int, int]]) -> CapturedTrace:
    for row, grid, block in zip(b.rows, grids, blocks):
        row["grid"], row["block"] = grid, block
    return b.build()


def test_launch_shape_is_the_time_weighted_median_and_launch_sizes_bin_kernel_time_by_blocks():
    b = TraceBuilder()
    root = b.module("", "Net")
    b.op("aten.add.Tensor", root, [("add_kernel", 100), ("add_kernel", 300), ("add_kernel", 50)])
    b.op("aten.mul.Tensor", root, [("mul_kernel", 300), ("mul_kernel", 100)])
    b.kernel("copy", 250, kind=KIND_MEMCPY, nbytes=1 << 20)
    trace = _with_grids(b, [(10, 1, 1), (250, 4, 1), (7, 1, 1), (10, 1, 1), (1000, 1, 1), (0, 0, 0)],
                        [(128, 1, 1), (64, 2, 1), (32, 1, 1), (256, 1, 1), (512, 1, 1), (0, 0, 0)])
    attr = attribute(trace)
    rows = {r.family: r for r in kernel_family_rows(attr)}
    # add: 1000 blocks for 300 of 450 ns, so the median by time is 1000, not the median launch (10)
    assert (rows["add_kernel"].blocks, rows["add_kernel"].threads) == (1000, 128)
    assert (rows["mul_kernel"].blocks, rows["mul_kernel"].threads) == (10, 256)
    assert (rows["[memcpy]"].blocks, rows["[memcpy]"].threads) == (None, None)
    sizes = launch_size_rows(attr)
    by_bin = {(r.blocks_min, r.blocks_max): (r.kernels, r.time_ms) for r in sizes}
    assert by_bin == {(4, 7): (1, pytest.approx(50e-6)), (8, 15): (2, pytest.approx(400e-6)),
                      (512, 1023): (2, pytest.approx(400e-6))}
    assert sum(r.share for r in sizes) == pytest.approx(1.0)  # of kernel time: the copy has no launch shape
    assert sizes[0].share == pytest.approx(50 / 850) and not any(r.one_per_sm for r in sizes)
    # on a GPU of 10 SMs the two 10-block launches are a row of their own, after the 8-15 bin they leave empty
    sized = launch_size_rows(attr, sm_count=10)
    assert [(r.blocks_min, r.blocks_max, r.kernels, r.one_per_sm) for r in sized] == [
        (4, 7, 1, False), (10, 10, 2, True), (512, 1023, 2, False)]
    assert sized[1].time_ms == pytest.approx(400e-6) and sum(r.share for r in sized) == pytest.approx(1.0)


def test_launch_shape_is_the_shape_at_half_the_familys_time_not_an_upper_quantile():
    """Blocks and threads per kernel family are the launch shape at which half the family's time is
    reached. An upper quantile (or the plain median launch) would report a shape most of its time
    does not run at."""
    b = TraceBuilder()
    b.op("aten.add.Tensor", b.module("", "Net"), [("add_kernel", 100), ("add_kernel", 100), ("add_kernel", 150),
                                                  ("add_kernel", 150)])
    trace = _with_grids(b, [(10, 1, 1), (10, 1, 1), (50, 2, 1), (1000, 1, 1)],
                        [(64, 1, 1), (64, 1, 1), (64, 2, 1), (256, 1, 1)])
    (row,) = kernel_family_rows(attribute(trace))
    # by blocks, time reached: 10 -> 200 of 500 ns (40%), 100 -> 350 (70%), 1000 -> 500 (100%).
    # Half the time is reached at 100 blocks; 75% at 1000; the median of the four launches is 10.
    # Threads the same way: 64 -> 40%, 128 -> 70%, 256 -> 100%.
    assert (row.blocks, row.threads) == (100, 128)


def test_results_made_before_the_kernel_family_work_load_with_none():
    doc = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json").to_dict()
    doc["kernel_families"] = [{"family": "nvjet_tst", "category": "linear", "subcategory": None, "calls": 48.0,
                               "time_ms": 2.1, "share": 0.28}]
    result = ProfileResult.from_dict(doc)
    (row,) = result.kernel_families
    assert (row.gflop, row.mb, row.blocks, row.threads) == (None, None, None, None) and result.launch_sizes == []


def _shared_elementwise(iterations: int = 2) -> TraceBuilder:
    """ATen's elementwise kernel launched by a GELU (activation) and a residual add (elementwise),
    and the GEMM of a linear layer (one class)."""
    b = TraceBuilder(iterations=iterations)
    root = b.module("", "Net")
    fc = b.module("fc", "Linear", root)
    for it in range(iterations):
        b.iteration = it
        b.op("aten.addmm.default", fc, [("nvjet_tst_128x256_64x4_2x1_v_bz_TNT", 5_000)], flops=1e9)
        b.op("aten.gelu.default", root, [(BIAS_ADD, 3_000)])
        b.op("aten.add.Tensor", root, [(BIAS_ADD, 1_000)])
    return b


def test_a_shared_kernel_family_keeps_its_time_by_category_and_its_dominant_category():
    attr = attribute(_shared_elementwise().build())
    rows = {r.family: r for r in kernel_family_rows(attr)}
    shared, gemm = rows["at::native::vectorized_elementwise_kernel"], rows["nvjet_tst"]
    # the row is as before: the class with most of its time
    assert (shared.category, shared.subcategory, shared.time_ms) == ("activation", None, pytest.approx(0.004))
    # per iteration: 3 us of GELU, 1 us of add, costliest first
    assert list(shared.by_category) == ["activation", "elementwise"]
    assert shared.by_category == {"activation": pytest.approx(0.003), "elementwise": pytest.approx(0.001)}
    assert gemm.by_category == {"linear": pytest.approx(0.005)}


@pytest.mark.parametrize("name", RECORDED)
def test_kernel_families_time_by_category_adds_up_and_names_the_classes_of_their_kernels(name):
    attr = attribute(CapturedTrace.load(DATA / f"{name}.trace.json.gz"))
    keys = {c.key for c in attr.classes}
    families = kernel_family_rows(attr)
    for row in families:
        assert sum(row.by_category.values()) == pytest.approx(row.time_ms, rel=1e-12, abs=1e-15)
        assert set(row.by_category) <= keys and all(v > 0 for v in row.by_category.values())
        assert list(row.by_category.values()) == sorted(row.by_category.values(), reverse=True)
        key = f"{row.category}/{row.subcategory}" if row.subcategory else row.category
        # the row's category is the key with most of its time
        assert not row.time_ms or row.by_category[key] == max(row.by_category.values())
    # every recorded model runs ATen's elementwise kernel for more than one category
    elementwise = next(r for r in families if r.family == "at::native::vectorized_elementwise_kernel")
    assert len(elementwise.by_category) > 1
    # summed over families, each key's time is the category table's
    by_key: dict[str, float] = {}
    for row in families:
        for key, ms in row.by_category.items():
            by_key[key] = by_key.get(key, 0.0) + ms
    table = {f"{r.category}/{r.subcategory}" if r.subcategory else r.category: r.time_ms for r in attr.category_rows()}
    assert by_key == pytest.approx({k: v for k, v in table.items() if v > 0})


def test_time_by_category_survives_the_result_json_and_older_results_load_without_it(tmp_path):
    result = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json")
    result.kernel_families = kernel_family_rows(attribute(_shared_elementwise().build()))
    result.to_json(tmp_path / "r.json")
    back = ProfileResult.load(tmp_path / "r.json")
    assert back.kernel_families == result.kernel_families
    assert [r.by_category for r in back.kernel_families] == [r.by_category for r in result.kernel_families]
    doc = result.to_dict()
    del doc["kernel_families"][0]["by_category"]  # as results made before it
    assert ProfileResult.from_dict(doc).kernel_families[0].by_category is None


@pytest.mark.parametrize("value, expected", [
    ({"activation": "0.003"}, "kernel_families[0].by_category.activation: expected a number"),
    ("activation", "kernel_families[0].by_category: expected"),
])
def test_a_malformed_time_by_category_is_one_line_naming_the_field(value, expected):
    from visprof.base.errors import BadInputError

    doc = ProfileResult.load(DATA / "h200-result-vit_base_patch16_224.json").to_dict()
    doc["kernel_families"] = [{"family": "nvjet_tst", "category": "linear", "subcategory": None, "calls": 48.0,
                               "time_ms": 2.1, "share": 0.28, "by_category": value}]
    with pytest.raises(BadInputError) as info:
        ProfileResult.from_dict(doc)
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_category_split_over_two_rules_still_names_the_row():
    """mobilevit_s: ATen's elementwise kernel runs attention/core under two rules ("sdpa" and
    "inside-attention-module", 0.28 ms together) and memory/layout under one (0.26 ms). The row is
    attention/core: where most of its time went, not which single rule took most of it."""
    attr = attribute(CapturedTrace.load(DATA / "mobilevit_s.trace.json.gz"))
    row = next(r for r in kernel_family_rows(attr) if r.family == "at::native::elementwise_kernel")
    assert len({c.rule for c in attr.classes if c.key == "attention/core"}) > 1
    assert (row.category, row.subcategory) == ("attention", "core")
    assert list(row.by_category)[:2] == ["attention/core", "memory/layout"]
    assert row.by_category["memory/layout"] > 0.5 * row.by_category["attention/core"]
