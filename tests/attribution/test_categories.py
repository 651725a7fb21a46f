"""The taxonomy table: default rules on timm-shaped module chains, precedence, extension."""
from __future__ import annotations

import json
import re

import pytest

from visprof.attribution.categories import (
    CATEGORIES,
    UNATTRIBUTED,
    CategoryTable,
    Classification,
    Rule,
    conv_kind,
    derived_attrs,
    forward_op_name,
)
from visprof.native.records import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET
from visprof.report.chrome_trace import RESERVED_CNAMES


@pytest.fixture
def table() -> CategoryTable:
    return CategoryTable.default()


def conv(in_channels: int, groups: int, kernel: int) -> dict:
    return {"in_channels": in_channels, "groups": groups, "kernel_size": [kernel, kernel]}


# --- the category list ---------------------------------------------------------------------
def test_default_table_declares_the_stable_categories_with_colours(table):
    assert tuple(table.categories) == CATEGORIES
    assert table.report_order()[-1] == UNATTRIBUTED
    for cat_id in table.report_order():
        cat = table.category(cat_id)
        assert re.fullmatch(r"#[0-9A-Fa-f]{6}", cat.color), cat
        assert cat.argb == 0xFF000000 | int(cat.color[1:], 16)
        assert cat.cname in RESERVED_CNAMES, cat
    assert table.category("attention").subcategories == ("core", "projections")
    assert table.category("convolution").subcategories == ("dense", "depthwise", "pointwise", "weight-std")
    # every category is distinguishable in a trace viewer
    assert len({table.category(c).cname for c in table.report_order()}) == len(table.report_order())


def test_rule_names_are_unique_and_every_rule_names_a_known_category(table):
    names = [r.name for r in table.rules]
    assert len(names) == len(set(names))
    assert {r.category for r in table.rules} <= set(CATEGORIES)


# --- op rules on timm-shaped module chains (innermost first) --------------------------------
SDPA = "aten._scaled_dot_product_flash_attention.default"
OP_CASES = [
    # attention core: any SDPA backend, wherever it runs
    (SDPA, ("Attention", "Block", "VisionTransformer"), None, "attention/core"),
    ("aten._scaled_dot_product_efficient_attention.default", ("EvaAttention",), None, "attention/core"),
    ("aten._scaled_dot_product_cudnn_attention.default", ("WindowAttention",), None, "attention/core"),
    ("aten._scaled_dot_product_flash_attention_for_cpu.default", (), None, "attention/core"),
    # torch's fused nn.MultiheadAttention, and nn.TransformerEncoderLayer (the whole layer, FFN and norms too)
    ("aten._native_multi_head_attention.default", ("MultiheadAttention",), None, "attention/core"),
    ("aten._transformer_encoder_layer_fwd.default", ("TransformerEncoderLayer",), None, "attention/core"),
    # eager flex_attention and its backward: higher-order ops, named without "aten."
    ("flex_attention", (), None, "attention/core"),
    ("flex_attention_backward", ("Mlp",), None, "attention/core"),
    # nn.TransformerEncoder's fast path packs a padded batch into a nested tensor and pads it back
    ("aten._nested_tensor_from_mask.default", ("TransformerEncoder",), None, "memory/layout"),
    ("aten._nested_tensor_from_mask_left_aligned.default", ("TransformerEncoder",), None, "memory/layout"),
    ("aten.to_padded_tensor.default", ("TransformerEncoder",), None, "memory/layout"),
    (SDPA, ("AttentionPoolLatent", "VisionTransformer"), None, "attention/core"),
    # manual attention: q.k^T, masks, softmax (module or op), head merge copies
    ("aten.bmm.default", ("Attention", "Block"), None, "attention/core"),
    ("aten.mul.Tensor", ("Attention", "Block"), None, "attention/core"),
    ("aten.clone.default", ("Attention", "Block"), None, "attention/core"),
    ("aten._softmax.default", ("Softmax", "WindowAttention", "SwinTransformerBlock"), None, "attention/core"),
    ("aten._softmax.default", ("AttentionCl", "PartitionAttentionCl", "MaxxVitBlock"), None, "attention/core"),
    ("aten.bmm.default", ("CascadedGroupAttention", "LocalWindowAttention"), None, "attention/core"),
    ("aten.bmm.default", ("XCA", "XCABlock"), None, "attention/core"),
    # relative-position bias, its MLP included
    ("aten.index.Tensor", ("RelPosBias", "AttentionCl"), None, "attention/core"),
    ("aten.addmm.default", ("Linear", "Mlp", "RelPosMlp", "RelPosAttention"), None, "attention/core"),
    ("aten.index.Tensor", ("RelativePositionBias", "Beit"), None, "attention/core"),
    ("aten.convolution.default", ("Conv2d", "ConvRelPosEnc", "FactorAttnConvRelPosEnc"), conv(64, 64, 3), "attention/core"),
    # window partition/shift in attention blocks
    ("aten.roll.default", ("SwinTransformerBlock", "SwinTransformerStage"), None, "attention/core"),
    ("aten.constant_pad_nd.default", ("SwinTransformerV2Block",), None, "attention/core"),
    ("aten.clone.default", ("PartitionAttentionCl", "MaxxVitBlock"), None, "attention/core"),
    ("aten.clone.default", ("TinyVitBlock",), None, "attention/core"),
    ("aten.add.Tensor", ("SwinTransformerBlock",), None, "elementwise"),  # the residual
    # projections: child linears / 1x1 convs, and F.linear by the attention module itself
    ("aten.addmm.default", ("Linear", "Attention", "Block"), None, "attention/projections"),
    ("aten.mm.default", ("Linear", "WindowAttention"), None, "attention/projections"),
    ("aten.addmm.default", ("Linear", "LinearNorm", "Attention", "LevitBlock"), None, "attention/projections"),
    ("aten.addmm.default", ("EvaAttention", "EvaBlock"), None, "attention/projections"),
    ("aten.addmm.default", ("MultiheadAttention",), None, "attention/projections"),
    ("aten.convolution.default", ("Conv2d", "Attention2d", "MbConvBlock"), conv(64, 1, 1), "attention/projections"),
    ("aten.convolution.default", ("Conv2d", "ConvNormAct", "LiteMLA"), conv(64, 1, 1), "attention/projections"),
    # ...but other convs and norms inside attention keep their own category
    ("aten.convolution.default", ("Conv2d", "MultiScaleAttention"), conv(96, 96, 3), "convolution/depthwise"),
    ("aten.native_layer_norm.default", ("LayerNorm", "Attention", "Block"), None, "normalization/layer"),
    ("aten._to_copy.default", ("Attention", "Block"), None, "memory/cast"),
    # attention *blocks* are not attention modules: their MLPs are linear
    ("aten.addmm.default", ("Linear", "Mlp", "PartitionAttentionCl", "MaxxVitBlock"), None, "linear"),
    ("aten.addmm.default", ("Linear", "Mlp", "LayerScaleBlockClassAttn", "Cait"), None, "linear"),
    ("aten.addmm.default", ("Linear", "Mlp", "SwinTransformerBlock"), None, "linear"),
    ("aten.addmm.default", ("Linear", "Mlp", "Block", "VisionTransformer"), None, "linear"),
    ("aten.addmm.default", ("Linear", "AttentionPoolLatent", "VisionTransformer"), None, "linear"),
    ("aten.bmm.default", ("SpatialGatingUnit", "SpatialGatingBlock"), None, "linear"),
    ("aten.addmm.default", (), None, "linear"),
    ("aten._cudnn_rnn.default", ("LSTM", "RNN2d", "Sequencer2dBlock"), None, "linear"),
    ("aten.mkldnn_rnn_layer.default", ("LSTM", "RNN2d"), None, "linear"),
    # squeeze-excite and CBAM-style gates are not attention
    ("aten.mean.dim", ("SqueezeExcite", "InvertedResidual"), None, "pooling"),
    ("aten.convolution.default", ("Conv2d", "SqueezeExcite"), conv(64, 1, 1), "convolution/pointwise"),
    ("aten.sigmoid.default", ("Sigmoid", "SqueezeExcite"), None, "activation"),
    ("aten.mul.Tensor", ("SqueezeExcite",), None, "elementwise"),
    ("aten.mul.Tensor", ("EcaModule",), None, "elementwise"),
    ("aten.amax.default", ("ChannelAttn", "CbamModule"), None, "pooling"),
    ("aten.add.Tensor", ("ChannelAttn", "CbamModule"), None, "elementwise"),
    ("aten.mul.Tensor", ("SplitAttn", "ResNestBottleneck"), None, "elementwise"),
    ("aten.mul.Tensor", ("CoordAttn",), None, "elementwise"),
    # VOLO's outlook attention: the unfold of v in its nn.Unfold child had been memory/layout, its fold core
    ("aten.im2col.default", ("Unfold", "OutlookAttention", "Outlooker"), None, "attention/core"),
    ("aten.col2im.default", ("OutlookAttention", "Outlooker"), None, "attention/core"),
    ("aten.im2col.default", ("Unfold", "Sequential"), None, "memory/layout"),  # outside attention: a layout op
    # convolutions by shape
    ("aten.convolution.default", ("Conv2d",), conv(3, 1, 7), "convolution/dense"),
    ("aten.convolution.default", ("Conv2d",), conv(128, 32, 3), "convolution/dense"),  # grouped
    ("aten.convolution.default", ("Conv2d",), conv(128, 128, 3), "convolution/depthwise"),
    ("aten.convolution.default", ("Conv2d",), conv(128, 128, 1), "convolution/depthwise"),
    ("aten.convolution.default", ("Conv2d",), conv(128, 1, 1), "convolution/pointwise"),
    ("aten.convolution.default", ("Conv2d",), None, "convolution"),  # capture recorded no shape
    ("aten._conv_depthwise2d.default", (), None, "convolution/depthwise"),
    # norms, activations, pooling, elementwise, memory
    ("aten._native_batch_norm_legit_no_training.default", ("BatchNorm2d",), None, "normalization/batch"),
    ("aten.cudnn_batch_norm.default", ("BatchNormAct2d",), None, "normalization/batch"),
    ("aten.native_group_norm.default", ("GroupNorm",), None, "normalization/group"),
    ("aten.native_batch_norm.default", ("InstanceNorm2d",), None, "normalization/instance"),  # instance norm runs batch_norm
    # a weight-standardized conv standardizes its own weights with batch_norm (BiT, NFNet): no norm of activations
    ("aten.native_batch_norm.default", ("StdConv2d", "Bottleneck"), None, "convolution/weight-std"),
    ("aten._native_batch_norm_legit.no_stats", ("ScaledStdConv2dSame", "NormFreeBlock"), None, "convolution/weight-std"),
    ("aten.batch_norm.default", ("StdConv2dSame",), None, "convolution/weight-std"),
    ("aten.mul.Tensor", ("ScaledStdConv2d",), None, "convolution/weight-std"),
    ("aten.convolution.default", ("StdConv2d", "Bottleneck"), conv(64, 1, 3), "convolution/dense"),
    ("aten.native_batch_norm.default", ("BatchNorm2d", "Bottleneck"), None, "normalization/batch"),
    ("aten.mul.Tensor", ("EvoNorm2dS0",), None, "normalization/other"),
    ("aten._fused_rms_norm.default", ("RmsNorm",), None, "normalization/rms"),
    ("aten.permute.default", ("LayerNorm2d",), None, "normalization/layer"),
    ("aten.permute.default", ("LayerNorm2d",), {"role": "normalization"}, "normalization/layer"),  # dataflow role, module kind
    ("aten.rsqrt.default", ("Block",), {"role": "normalization"}, "normalization/other"),  # a norm written as ops
    # the permutes around a layer norm op that a parent module runs (MambaOut's stem) had been "other"
    ("aten.permute.default", ("Stem",), {"role": "normalization", "norm_kind": "layer"}, "normalization/layer"),
    ("aten.relu_.default", ("BatchNormAct2d",), None, "normalization/batch"),  # fused norm+act module
    ("aten.relu_.default", ("ReLU", "BatchNormAct2d"), None, "activation"),
    ("aten.gelu.default", ("GELU", "Mlp"), None, "activation"),
    ("aten.mul.Tensor", ("QuickGELU", "Mlp"), None, "activation"),
    ("aten.hardswish_.default", ("Hardswish",), None, "activation"),
    ("aten._softmax.default", ("ClassifierHead",), None, "activation"),
    ("aten.adaptive_avg_pool2d.default", ("SelectAdaptivePool2d",), None, "pooling"),
    ("aten.max_pool2d_with_indices.default", ("MaxPool2d",), None, "pooling"),
    ("aten.upsample_bilinear2d.vec", (), None, "pooling"),
    ("aten.mean.dim", ("VisionTransformer",), None, "pooling"),
    # a mean of the whole tensor to a scalar (a hand-written loss's) is a reduction, as sum is, not a pool
    ("aten.mean.default", (), None, "elementwise"),
    ("aten.mean.dtype_out", (), None, "elementwise"),
    ("aten.sum.default", (), None, "elementwise"),
    # x.max(dim) is amax over that dim with indices (CBAM's channel max): a pool as amax is; of a whole
    # tensor, or two tensors' maximum, it is not
    ("aten.max.dim", ("ChannelAttn",), None, "pooling"),
    ("aten.min.dim", (), None, "pooling"),
    ("aten.amax.default", (), None, "pooling"),
    ("aten.max.default", (), None, "elementwise"),
    ("aten.max.other", (), None, "elementwise"),
    # in-place views (nn.GRU's transpose_ on the CPU) and reading a value back (.item(), `if t > 0`) had been "other"
    ("aten.transpose_.default", ("GRU",), None, "memory/layout"),
    ("aten.unsqueeze_.default", (), None, "memory/layout"),
    ("aten.item.default", (), None, "memory/layout"),
    ("aten.is_nonzero.default", (), None, "memory/layout"),
    ("aten.add.Tensor", ("Block",), None, "elementwise"),
    ("aten.clamp_min.default", (), None, "elementwise"),
    ("aten.copy_.default", ("Block",), None, "memory/layout"),
    ("aten.cat.default", ("VisionTransformer",), None, "memory/layout"),
    ("aten.embedding.default", (), None, "memory/layout"),
    ("aten.fill_.Scalar", (), None, "memory/fill"),
    ("aten._to_copy.default", ("Linear", "Mlp"), None, "memory/cast"),
    # a mixed-precision step's GradScaler: pointwise over the gradients, as the optimizer's step (it had been "other")
    ("aten._amp_foreach_non_finite_check_and_unscale_.default", (), None, "elementwise"),
    ("aten._amp_update_scale_.default", (), None, "elementwise"),
    # nn.Dropout(inplace=True) (TNT's) and a RoPE's coordinate grid (qwen3_vit, EVA) had been "other"
    ("aten.dropout_.default", ("Dropout", "Mlp"), None, "elementwise"),
    ("aten.feature_dropout_.default", ("Dropout2d",), None, "elementwise"),
    ("aten.meshgrid.indexing", ("VisionTransformer",), None, "memory/layout"),
    # nothing matched: "other"
    ("aten.frobnicate.default", ("Block",), None, "other"),
]


@pytest.mark.parametrize("op, chain, attrs, expected", OP_CASES, ids=[f"{c[0]}@{'/'.join(c[1][:2])}" for c in OP_CASES])
def test_classify_op_on_timm_module_chains(table, op, chain, attrs, expected):
    assert table.classify_op(op, chain, attrs).key == expected


def test_unmatched_op_is_other_without_rule_name(table):
    c = table.classify_op("aten.frobnicate.default", ("Block",))
    assert c == Classification("other", None, "")


# --- a training step: backward ops belong to their forward op's category --------------------
# Backward ops run outside every module (the forward hooks have returned): no chain.
BACKWARD_CASES = [
    ("aten.convolution_backward.default", conv(128, 128, 3), "convolution/depthwise"),
    ("aten.convolution_backward.default", conv(128, 1, 1), "convolution/pointwise"),
    ("aten.convolution_backward.default", conv(3, 1, 7), "convolution/dense"),
    ("aten.convolution_backward.default", None, "convolution"),
    ("aten._slow_conv2d_backward.output_mask", None, "convolution"),
    ("aten.native_batch_norm_backward.default", None, "normalization/batch"),
    ("aten.cudnn_batch_norm_backward.default", None, "normalization/batch"),
    ("aten.native_layer_norm_backward.default", None, "normalization/layer"),
    ("aten.native_group_norm_backward.default", None, "normalization/group"),
    ("aten._fused_rms_norm_backward.default", None, "normalization/rms"),
    ("aten.threshold_backward.default", None, "activation"),  # ReLU's backward
    ("aten.gelu_backward.default", None, "activation"),
    ("aten.hardswish_backward.default", None, "activation"),
    ("aten.log_sigmoid_backward.default", None, "activation"),
    ("aten._softmax_backward_data.default", None, "activation"),
    ("aten.max_pool2d_with_indices_backward.default", None, "pooling"),
    ("aten.avg_pool2d_backward.default", None, "pooling"),
    ("aten._adaptive_avg_pool2d_backward.default", None, "pooling"),
    ("aten._scaled_dot_product_flash_attention_backward.default", None, "attention/core"),
    ("aten._scaled_dot_product_efficient_attention_backward.default", None, "attention/core"),
    ("aten.mm.default", None, "linear"),  # a linear layer's backward is GEMMs
    ("aten.native_dropout_backward.default", None, "elementwise"),
    ("aten.embedding_dense_backward.default", None, "memory/layout"),  # an explicit entry: not "embedding_dense"
    ("aten.slice_backward.default", None, "memory/layout"),
    # the loss and the optimizer step: pointwise arithmetic and reductions
    ("aten.nll_loss_forward.default", None, "elementwise"),
    ("aten.nll_loss_backward.default", None, "elementwise"),
    ("aten._foreach_add_.List", None, "elementwise"),
    ("aten._fused_adamw_.default", None, "elementwise"),
]


@pytest.mark.parametrize("op, attrs, expected", BACKWARD_CASES, ids=[f"{c[0]}:{c[2]}" for c in BACKWARD_CASES])
def test_a_backward_op_is_in_its_forward_ops_category(table, op, attrs, expected):
    """A traced training step filed convolution_backward, native_batch_norm_backward, ... under
    "other": two thirds of resnet18's step, while the coverage check said 1.0."""
    assert table.classify_op(op, (), attrs).key == expected


@pytest.mark.parametrize("op, forward", [
    ("aten.convolution_backward.default", "aten.convolution.default"),
    ("aten._softmax_backward_data.out", "aten._softmax.out"),
    ("aten._convolution_double_backward.default", "aten._convolution.default"),
    ("aten.batch_norm_backward_elemt.default", "aten.batch_norm.default"),
    ("aten.convolution.default", None),
    ("aten._backward.default", None),  # Tensor.backward itself
    ("aten.backward.default", None),
])
def test_forward_op_name(op, forward):
    assert forward_op_name(op) == forward


def test_a_backward_op_says_which_forward_rule_classified_it(table):
    c = table.classify_op("aten.convolution_backward.default", (), conv(128, 128, 3))
    assert c.rule == "backward-as-forward:depthwise-conv"


def test_a_rule_naming_a_backward_op_wins_over_its_forward_op(table):
    table.add_rule(name="conv-grad", op=r"^aten\.convolution_backward\.", category="other", front=False)
    assert table.classify_op("aten.convolution_backward.default").rule == "conv-grad"
    assert table.classify_op("aten.convolution.default").key == "convolution"


def test_a_backward_op_whose_forward_op_is_unknown_stays_other(table):
    assert table.classify_op("aten.frobnicate_backward.default") == Classification("other", None, "")


def test_within_includes_the_innermost_module(table):
    # softmax directly in the attention module (no Softmax child)
    assert table.classify_op("aten._softmax.default", ("Attention",)).rule == "attention-softmax"


# --- row rules ---------------------------------------------------------------------------
KERNEL_CASES = [
    ("Memcpy HtoD (Pageable -> Device)", KIND_MEMCPY, "memory/memcpy"),
    ("anything at all", KIND_MEMSET, "memory/memset"),
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>", KIND_KERNEL, "attention/core"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", KIND_KERNEL, "attention/core"),
    ("triton_poi_fused__native_batch_norm_legit_no_training_relu_0", KIND_KERNEL, "normalization/batch"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", KIND_KERNEL, "normalization/layer"),
    ("void at::native::(anonymous namespace)::group_norm_kernel<float>", KIND_KERNEL, "normalization/group"),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", KIND_KERNEL, "convolution"),
    ("triton_poi_fused_convolution_3", KIND_KERNEL, "convolution"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", KIND_KERNEL, "linear"),
    ("triton_tem_fused_addmm_gelu_0", KIND_KERNEL, "linear"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", KIND_KERNEL, "activation"),
    ("void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>>", KIND_KERNEL, "elementwise"),
    ("void at::native::roll_cuda_kernel<float>", KIND_KERNEL, "memory/layout"),
    ("void at::native::elementwise_kernel<128, 2, direct_copy_kernel_cuda>", KIND_KERNEL, "memory/layout"),
    ("triton_poi_fused_clone_2", KIND_KERNEL, "memory/layout"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", KIND_KERNEL, "memory/fill"),
    ("triton_per_fused_mean_4", KIND_KERNEL, "pooling"),
    ("void at::native::reduce_kernel<512, 1>", KIND_KERNEL, "elementwise"),
]


@pytest.mark.parametrize("name, kind, expected", KERNEL_CASES, ids=[c[0][:40] for c in KERNEL_CASES])
def test_classify_kernel_by_name_and_kind(table, name, kind, expected):
    assert table.classify_kernel(name, kind).key == expected


def test_classify_kernel_returns_none_when_no_rule_matches(table):
    assert table.classify_kernel("mystery_kernel_v2", KIND_KERNEL) is None
    assert table.classify_kernel("mystery_kernel_v2") is None
    # kind rules match the row kind, not the name
    assert table.classify_kernel("Memcpy DtoD", None) is None
    assert table.classify_kernel("Memcpy DtoD", KIND_MEMCPY).key == "memory/memcpy"


def test_row_rules_never_classify_ops_and_op_rules_never_classify_rows(table):
    assert table.classify_op("flash_fwd_kernel", ()).category == "other"
    assert table.classify_kernel("aten.addmm.default", KIND_KERNEL) is None


# --- derived attributes -------------------------------------------------------------------
@pytest.mark.parametrize(
    "attrs, expected",
    [
        (conv(64, 64, 3), "depthwise"),
        (conv(64, 1, 1), "pointwise"),
        (conv(64, 1, 3), "dense"),
        (conv(64, 4, 1), "dense"),
        ({"in_channels": 1, "groups": 1, "kernel_size": [3, 3]}, "dense"),
        ({"in_channels": 8, "groups": 1}, None),
        ({"in_channels": 8, "groups": 2}, "dense"),
        ({"groups": 2}, None),
        ({}, None),
    ],
)
def test_conv_kind(attrs, expected):
    assert conv_kind(attrs) == expected
    assert derived_attrs(attrs).get("conv_kind") == expected


def test_recorded_conv_kind_is_kept():
    assert derived_attrs({"conv_kind": "pointwise", **conv(8, 8, 3)})["conv_kind"] == "pointwise"


# --- precedence and extension -------------------------------------------------------------
def _two_category_table(*rules: Rule) -> CategoryTable:
    from visprof.attribution.categories import Category

    cats = [Category("linear", "linear", "#00FF00", "rail_load"), Category("other", "other", "#777777", "grey")]
    return CategoryTable(cats, rules)


def test_first_matching_rule_wins():
    first = Rule("first", "linear", op=r"^aten\.mm\.")
    second = Rule("second", "other", op=r"^aten\.")
    assert _two_category_table(first, second).classify_op("aten.mm.default").rule == "first"
    assert _two_category_table(second, first).classify_op("aten.mm.default").rule == "second"


def test_user_rule_at_front_overrides_default(table):
    assert table.classify_op("aten.gelu.default", ("GELU",)).category == "activation"
    table.add_rule(name="gelu-is-elementwise", op=r"^aten\.gelu\.", category="elementwise")
    c = table.classify_op("aten.gelu.default", ("GELU",))
    assert (c.category, c.rule) == ("elementwise", "gelu-is-elementwise")
    assert table.rules[0].name == "gelu-is-elementwise"


def test_user_rule_at_back_only_catches_what_defaults_miss(table):
    table.add_rule(name="late", op=r"^aten\.(gelu|frobnicate)\.", category="linear", front=False)
    assert table.classify_op("aten.gelu.default", ("GELU",)).category == "activation"
    assert table.classify_op("aten.frobnicate.default", ()).rule == "late"
    assert table.rules[-1].name == "late"


def test_add_rule_expands_named_patterns(table):
    table.add_rule(name="attn-mm", op=r"^aten\.frobnicate\.", within="${attention_module}", category="attention", subcategory="core")
    assert table.classify_op("aten.frobnicate.default", ("Linear", "WindowAttention")).rule == "attn-mm"
    assert table.classify_op("aten.frobnicate.default", ("Linear", "SqueezeExcite")).category == "other"


def test_default_returns_independent_copies():
    a, b = CategoryTable.default(), CategoryTable.default()
    a.add_rule(name="x", op="frobnicate", category="linear")
    assert len(a.rules) == len(b.rules) + 1
    assert b.classify_op("aten.frobnicate.default").category == "other"


EXTENSION = {
    "categories": [{"id": "custom", "label": "custom ops", "color": "#123456", "cname": "olive"}],
    "patterns": {"my_op": r"^aten\.frobnicate\."},
    "rules": [
        {"name": "frob-in-block", "op": "${my_op}", "module": "^Block$", "category": "custom"},
        {"name": "frob-anywhere", "op": ["${my_op}", r"^aten\.twiddle\."], "category": "elementwise"},
    ],
}


def _write_toml(path, data) -> None:
    """Minimal TOML writer for the EXTENSION shape (tomllib only reads)."""
    def value(v):
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return "'" + v + "'"  # literal string: regex backslashes stay as written

    lines = []
    for section in ("categories", "rules"):
        for item in data[section]:
            lines.append(f"[[{section}]]")
            lines += [f"{k} = {value(v)}" for k, v in item.items()]
    lines.append("[patterns]")
    lines += [f"{k} = {value(v)}" for k, v in data["patterns"].items()]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_extend_from_file(table, tmp_path, fmt):
    path = tmp_path / f"rules.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(EXTENSION))
    else:
        _write_toml(path, EXTENSION)
    added = table.extend_from_file(path)
    assert [r.name for r in added] == ["frob-in-block", "frob-anywhere"]
    # file order is kept, and the file's rules go before the defaults
    assert [r.name for r in table.rules[:2]] == ["frob-in-block", "frob-anywhere"]
    assert table.classify_op("aten.frobnicate.default", ("Block",)).category == "custom"
    assert table.classify_op("aten.frobnicate.default", ("Mlp",)).category == "elementwise"
    assert table.classify_op("aten.twiddle.default", ()).category == "elementwise"
    assert table.category("custom").argb == 0xFF123456
    assert table.report_order()[-2:] == ["custom", UNATTRIBUTED]


def test_whole_table_from_a_json_copy_of_the_default_file(tmp_path):
    from visprof.attribution.categories import DEFAULT_TABLE_PATH
    from visprof.base.inputs import toml_reader

    path = tmp_path / "copy.json"
    path.write_text(json.dumps(toml_reader().loads(DEFAULT_TABLE_PATH.read_text())))
    copy, default = CategoryTable.from_file(path), CategoryTable.default()
    assert [r.name for r in copy.rules] == [r.name for r in default.rules]
    for op, chain, attrs, _ in OP_CASES:
        assert copy.classify_op(op, chain, attrs) == default.classify_op(op, chain, attrs)


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"name": "x", "op": "a", "category": "nope"}, ValueError),
        ({"name": "x", "op": "a", "kernel": "k", "category": "linear"}, ValueError),
        ({"name": "x", "category": "linear"}, ValueError),
        ({"name": "x", "op": "(", "category": "linear"}, ValueError),
        ({"name": "x", "op": "a", "colour": "red", "category": "linear"}, ValueError),
        ({"name": "x", "kind": "dma", "category": "linear"}, ValueError),
        ({"name": "x", "op": "${no_such_pattern}", "category": "linear"}, ValueError),  # one kind of error for every bad rule
    ],
)
def test_invalid_rules_are_rejected(table, fields, error):
    before = len(table.rules)
    with pytest.raises(error):
        table.add_rule(**fields)
    assert len(table.rules) == before


# --- cache ---------------------------------------------------------------------------------
def test_cache_is_keyed_by_name_chain_and_matchable_attrs_only(table):
    chain = ("Conv2d", "Block")
    first = table.classify_op("aten.convolution.default", chain, {**conv(64, 1, 3), "input_shape": [8, 64, 56, 56]})
    again = table.classify_op("aten.convolution.default", list(chain), {**conv(64, 1, 3), "input_shape": [8, 64, 28, 28]})
    assert first is again
    assert table.cache_info()["op_entries"] == 1
    # a different derived conv_kind is a different key with a different answer
    assert table.classify_op("aten.convolution.default", chain, conv(64, 64, 3)).subcategory == "depthwise"
    assert table.cache_info()["op_entries"] == 2
    table.classify_kernel("k", KIND_KERNEL)
    table.classify_kernel("k", KIND_KERNEL)
    assert table.cache_info()["row_entries"] == 1


def test_cache_is_invalidated_when_rules_change(table):
    assert table.classify_op("aten.frobnicate.default").category == "other"
    table.add_rule(name="frob", op="frobnicate", category="linear")
    assert table.classify_op("aten.frobnicate.default").category == "linear"
    assert table.classify_kernel("mystery_kernel") is None
    table.extend({"rules": [{"name": "mystery", "kernel": "^mystery", "category": "elementwise"}]})
    assert table.classify_kernel("mystery_kernel").rule == "mystery"


def test_a_bad_rules_file_is_a_clear_error_and_changes_nothing(tmp_path):
    from visprof.base.errors import BadInputError

    table = CategoryTable.default()
    before = list(table.rules)
    broken = tmp_path / "broken.toml"
    broken.write_text("this is = not [valid toml\n")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('[[rules]]\nname = "ok"\ncategory = "activation"\nop = "relu"\n'
                       '[[rules]]\nname = "bad"\ncategory = "nonsense"\nop = "gelu"\n')
    pattern = tmp_path / "pattern.toml"
    pattern.write_text('[[rules]]\nname = "mine"\ncategory = "activation"\nop = "${nope}"\n')
    # the report's own rows: a category "total" gave two total rows, "unattributed" a share the check denied
    total = tmp_path / "total.toml"
    total.write_text('[[categories]]\nid = "total"\n[[rules]]\nname = "t"\ncategory = "total"\nop = "relu"\n')
    unattributed = tmp_path / "unattributed.toml"
    unattributed.write_text('[[categories]]\nid = "unattributed"\n')
    for path, words in ((broken, "is not valid TOML"), (unknown, "unknown category 'nonsense'"),
                        (total, "categories[0].id: 'total' is the name of the report's total row"),
                        (unattributed, "'unattributed' is the name of the report's unattributed row"),
                        (pattern, "pattern.toml: rule 'mine'.op: unknown pattern ${nope}; known: ["),
                        (tmp_path / "missing.toml", "no such file")):
        with pytest.raises(BadInputError, match=str(path.name)) as info:
            table.extend_from_file(path)
        assert words in str(info.value)
        assert list(table.rules) == before  # nothing half-added


def test_a_callers_table_is_extended_as_a_copy(table, tmp_path):
    """profile(table=mine, category_file=F) once added F's rules to `mine` itself, again at every
    call; load_table now extends a copy, and a copy is independent of its original."""
    from visprof.passes.setup import load_table

    path = tmp_path / "rules.json"
    path.write_text(json.dumps(EXTENSION))
    before = [r.name for r in table.rules]
    for _ in range(2):
        extended = load_table(table, path)
        assert [r.name for r in extended.rules[:2]] == ["frob-in-block", "frob-anywhere"]
        assert len(extended.rules) == len(before) + 2
    assert [r.name for r in table.rules] == before and "custom" not in table.categories
    assert load_table(table, None) is table  # nothing to add: the caller's own table
    copied = table.copy()
    copied.extend_from_file(path)
    assert [r.name for r in table.rules] == before
    assert copied.classify_op("aten.frobnicate.default", ("Block",)).category == "custom"
    assert table.classify_op("aten.frobnicate.default", ("Block",)).category != "custom"


@pytest.mark.parametrize("entry", ["profile", "trace"])
def test_a_table_that_is_not_a_category_table_is_refused_in_one_line(entry, tmp_path):
    """A path given as table= failed deep inside: 'str' object has no attribute 'report_order'."""
    import torch

    import visprof
    from visprof.base.errors import BadInputError

    model = torch.nn.Conv2d(3, 4, 1)
    # the hint works for both: trace() takes no category_file= (the hint had named it)
    with pytest.raises(BadInputError, match=r"^table must be a CategoryTable \(or None\), not str; a rules file is "
                                            r"table=visprof.CategoryTable.from_file\('rules.toml'\)"):
        if entry == "profile":
            visprof.profile(model, img_size=8, batch_size=1, table="rules.toml", progress=False)
        else:
            with visprof.trace(model, table="rules.toml"):
                model(torch.randn(1, 3, 8, 8))
