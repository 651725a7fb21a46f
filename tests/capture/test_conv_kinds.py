"""A convolution's kind (dense, depthwise, pointwise, grouped) from what the op capture records,
whichever overload of the op the module calls."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from visprof.attribution.categories import default_table
from visprof.attribution.op_types import op_type
from visprof.capture.op_capture import ModuleTracker, OpCapture


def captured_kinds(model: nn.Module, x: torch.Tensor) -> list[tuple[str, str]]:
    """(op type, category key) of every convolution of one forward on the CPU."""
    model.eval()
    table, tracker = default_table(), ModuleTracker(model)
    capture = OpCapture(tracker, table, nvtx=False)
    with tracker, capture, torch.inference_mode():
        model(x)
    return [(op_type(op.name, op.attrs, 1.0, 1.0), table.classify_op(op.name, tracker.classes(op.module), op.attrs).key)
            for op in capture.to_records() if ".conv" in op.name]


@pytest.mark.parametrize("padding", [1, "same"])
def test_every_conv_overload_keeps_its_kind(padding):
    # padding="same" calls aten.conv2d.padding (convmixer): its kind was unknown, 71-79% of convmixer's
    # time on the H200 under "convolution" with no sub-category
    overload = "padding" if padding == "same" else "default"
    model = nn.Sequential(nn.Conv2d(8, 8, 3, padding=padding, groups=8), nn.Conv2d(8, 16, 1),
                          nn.Conv2d(16, 16, 3, padding=padding), nn.Conv2d(16, 16, 3, padding=padding, groups=4))
    got = captured_kinds(model, torch.randn(1, 8, 12, 12))
    op = f"aten.conv2d.{overload}"
    pointwise_op = "aten.conv2d.default"  # an int padding of 0: the default overload either way
    assert got == [(f"{op} [depthwise]", "convolution/depthwise"), (f"{pointwise_op} [pointwise]", "convolution/pointwise"),
                   (f"{op} [dense]", "convolution/dense"), (f"{op} [grouped]", "convolution/dense")]


def test_conv1d_and_conv3d_with_same_padding_have_kinds():
    got1 = captured_kinds(nn.Conv1d(4, 4, 3, padding="same", groups=4), torch.randn(1, 4, 10))
    got3 = captured_kinds(nn.Conv3d(4, 8, 3, padding="same"), torch.randn(1, 4, 6, 6, 6))
    assert got1 == [("aten.conv1d.padding [depthwise]", "convolution/depthwise")]
    assert got3 == [("aten.conv3d.padding [dense]", "convolution/dense")]


def captured_with_flop_counter(model: nn.Module, x: torch.Tensor):
    """(the one op of ``model``'s forward as the capture records it, FlopCounterMode's total FLOPs)."""
    from torch.utils.flop_counter import FlopCounterMode

    tracker = ModuleTracker(model.eval())
    capture = OpCapture(tracker, default_table(), nvtx=False, flops=True)
    with torch.inference_mode():
        with FlopCounterMode(display=False) as counter:
            model(x)
        with tracker, capture:
            model(x)
    (op,) = capture.to_records()
    return op, tracker, counter.get_total_flops()


@pytest.mark.parametrize("groups, kind", [(1, "dense"), (8, "depthwise"), (4, "grouped")])
def test_a_transposed_convolution_has_its_kind_and_torchs_flops(groups, kind):
    """nn.ConvTranspose2d (lowformer's upsampling, decoders) had no kind (`convolution` with no
    sub-category) and 0 FLOPs: 8% of lowformer_b0's FLOPs, which FlopCounterMode counts."""
    op, tracker, flops = captured_with_flop_counter(nn.ConvTranspose2d(8, 8, 4, stride=2, padding=1, groups=groups),
                                                    torch.randn(2, 8, 6, 6))
    category = "convolution/dense" if kind == "grouped" else f"convolution/{kind}"
    assert (op_type(op.name, op.attrs, 1.0, 1.0), default_table().classify_op(op.name, tracker.classes(op.module), op.attrs).key) \
        == (f"aten.conv_transpose2d.input [{kind}]", category)
    assert op.flops == flops > 0


def test_conv_transpose1d_and_3d_have_kinds_and_flops():
    for model, x, name in ((nn.ConvTranspose1d(4, 6, 3), torch.randn(1, 4, 10), "conv_transpose1d.default"),
                           (nn.ConvTranspose3d(4, 4, 2, groups=4), torch.randn(1, 4, 3, 3, 3), "conv_transpose3d.input")):
        op, _, flops = captured_with_flop_counter(model, x)
        assert op.name == f"aten.{name}" and op.flops == flops > 0
        assert op.attrs["in_channels"] == 4 and op.attrs["groups"] == model.groups
