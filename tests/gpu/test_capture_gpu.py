"""The capture's newer paths on a GPU, where kernels, not host times, are attributed: eager
flex_attention (a higher-order op, visprof/capture/higher_order.py) forward and backward, and
nn.TransformerEncoder's nested-tensor fast path under a padding mask. The CPU side is
tests/capture/test_higher_order.py and tests/profiler/test_profile_cpu.py."""
from __future__ import annotations

import pytest
import torch

import visprof
from visprof.capture.higher_order import FLEX_ATTENTION
from small_modules import ConvAttention, FlexMixer, Hybrid, PaddedEncoder, ThreeConvolutionKinds

pytestmark = [
    pytest.mark.gpu,
    # eager flex_attention says once per process that it runs unfused: these tests mean it to
    pytest.mark.filterwarnings("ignore:.*flex_attention called without torch.compile"),
    # the padded encoder's fast path packs into torch's strided nested tensors, which torch calls a prototype
    pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage"),
]
needs_flex = pytest.mark.skipif(FLEX_ATTENTION is None, reason="this torch has no flex_attention")


def _classified(session) -> dict[str, set[tuple[str, str | None]]]:
    out: dict[str, set] = {}
    for i, op in enumerate(session.trace.ops):
        c = session.attribution.op_classification(i)
        out.setdefault(op.name, set()).add((c.category, c.subcategory))
    return out


@needs_flex
def test_a_flex_attention_training_step_is_attention_forward_and_backward():
    """Forward and backward of eager flex_attention: one op each, their kernels attention/core, every
    kernel of the step attributed."""
    model = FlexMixer().cuda()
    images = torch.randn(4, 3, 8, 8, device="cuda")
    with visprof.trace(model) as session:
        model(images).square().mean().backward()
    classified = _classified(session)
    print(sorted(classified.items()))
    assert classified["flex_attention"] == {("attention", "core")}
    # the backward traces its score_mod on FakeTensors: tracing, not recorded (prim.device had been "other")
    assert ("other", None) not in set().union(*classified.values())
    backward = [name for name in classified if "flex_attention_backward" in name]
    assert backward and all(classified[name] == {("attention", "core")} for name in backward)
    # with autograd on, linear reaches the capture as addmm (forward) and mm (backward): q, k, v and the output
    # projection, all of them found by the dataflow from flex_attention's operands
    gemms = {name for name in classified if name in ("aten.addmm.default", "aten.mm.default", "aten.linear.default")}
    assert gemms and all(classified[name] == {("attention", "projections")} for name in gemms)
    rows = {(r.category, r.subcategory): r for r in session.category_rows()}
    assert rows[("attention", "core")].time_ms > 0 and ("other", None) not in rows
    assert session.summary().coverage == pytest.approx(1.0)


@needs_flex
def test_a_flex_attention_model_profiles_with_every_self_check():
    result = visprof.profile(FlexMixer().eval(), batch_size=8, img_size=16, iterations=5, warmup=2,
                             progress=False, search_batch=False)
    rows = {(row.category, row.subcategory): row for row in result.categories}
    print(visprof.text_report(result))
    assert rows[("attention", "core")].time_ms > 0 and rows[("attention", "core")].flops > 0
    assert not result.failed_checks
    assert not result.attribution.other_ops


@pytest.mark.parametrize("grad_mode", ["inference_mode", "no_grad"])
def test_a_padding_masked_encoder_profiles_on_the_gpu(grad_mode):
    """The fused encoder layers run on packed (nested) sequences: attention/core with FLOPs, the packing
    memory/layout, nothing in other, every self-check passed."""
    result = visprof.profile(PaddedEncoder().eval(), batch_size=4, img_size=8, iterations=5, warmup=2,
                             grad_mode=grad_mode, progress=False, search_batch=False)
    rows = {(row.category, row.subcategory): row for row in result.categories}
    print(visprof.text_report(result))
    assert rows[("attention", "core")].time_ms > 0 and rows[("attention", "core")].flops > 0
    assert not result.failed_checks
    assert not result.attribution.other_ops


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
def test_a_recurrent_layer_on_the_gpu_counts_its_gate_gemms_once(grad_mode):
    """On a GPU nn.LSTM runs as cuDNN's _cudnn_rnn, where the CPU runs aten.lstm or oneDNN's layer
    (tests/capture/test_op_bytes.py): its FLOPs are each layer's and direction's gate GEMMs, counted
    once whichever op the capture sees, and its kernels are linear, every one attributed."""
    hidden, features, batch, steps, layers = 32, 16, 2, 10, 2
    lstm = torch.nn.LSTM(features, hidden, num_layers=layers, bidirectional=True, batch_first=True).cuda()
    x = torch.randn(batch, steps, features, device="cuda")
    with grad_mode(), visprof.trace(lstm) as session:
        lstm(x)
    widths = [features] + [2 * hidden] * (layers - 1)  # what each layer reads: the two directions' outputs after the first
    expected = sum(2 * batch * steps * 2 * 4 * hidden * (width + hidden) for width in widths)
    counted = [(op.name, op.flops) for op in session.trace.ops if op.flops]
    print(counted)
    assert sum(flops for _, flops in counted) == expected, counted
    classified = _classified(session)
    recurrent = [name for name in classified if "rnn" in name or "lstm" in name]
    assert recurrent and all({category for category, _ in classified[name]} == {"linear"} for name in recurrent), classified
    assert session.summary().coverage == pytest.approx(1.0)


@pytest.mark.parametrize("how", ["script", "trace"])
def test_a_torchscript_modules_convolutions_on_the_gpu_are_split_by_kind(how):
    """A traced graph calls aten._convolution (cuDNN's kernels under it): its convolutions are
    dense/depthwise/pointwise on a GPU as on the CPU (tests/passes/test_torchscript_module.py)."""
    import warnings

    model = ThreeConvolutionKinds().cuda().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated in torch >= 2.10
        module = torch.jit.script(model) if how == "script" else torch.jit.trace(model, torch.randn(2, 3, 16, 16, device="cuda"))
    result = visprof.profile(module, batch_size=4, img_size=16, iterations=3, warmup=1, passes="timing,attributed",
                             progress=False, search_batch=False)
    conv = {row.subcategory: row.time_ms for row in result.categories if row.category == "convolution"}
    assert set(conv) == {"dense", "depthwise", "pointwise"} and all(t > 0 for t in conv.values()), conv
    assert not any("unknown kind" in row.op_type for row in result.op_types)
    assert not result.failed_checks, [c.name for c in result.failed_checks]


def test_a_bf16_module_on_the_gpu_runs_at_bf16_with_its_inputs_cast_once():
    """Without precision=, a bf16 module runs at bf16, model-cast: no per-forward input cast among its
    ops, every self-check passed."""
    result = visprof.profile(ThreeConvolutionKinds().to(torch.bfloat16), batch_size=8, img_size=32, iterations=3, warmup=1,
                             passes="timing,attributed", progress=False, search_batch=False)
    assert result.measurement == "gpu"
    assert (result.config.precision, result.config.autocast) == ("bf16", "model-cast")
    assert any("weights are bf16" in w for w in result.warnings)
    assert not any(row.op_type.startswith(("aten.to.", "aten._to_copy")) for row in result.op_types)
    assert not result.failed_checks, [c.name for c in result.failed_checks]


class _ConvAttentionDecoder(torch.nn.Module):
    """A conv block named attention that computes none, then a transposed-convolution upsampling."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.mhca = ConvAttention(16)
        self.up = torch.nn.ConvTranspose2d(16, 8, 2, stride=2)

    def forward(self, x):
        return self.up(self.mhca(self.stem(x)))


@pytest.mark.parametrize("grad_mode", ["inference_mode", "no_grad"])
def test_a_conv_block_named_attention_and_a_transposed_conv_on_the_gpu(grad_mode):
    """Every pass on a GPU (the replayed timed forwards, the memory pass's allocation tags) reads a
    ConvAttention that computes no attention by its ops, and a transposed convolution has its kind
    and torch's FLOPs (it had 0 and no sub-category). The CPU side is tests/attribution/test_named_attention.py
    and tests/capture/test_conv_kinds.py."""
    from torch.utils.flop_counter import FlopCounterMode

    model = _ConvAttentionDecoder().cuda().eval()
    result = visprof.profile(model, batch_size=4, img_size=16, iterations=3, warmup=1, grad_mode=grad_mode,
                             progress=False, search_batch=False)
    assert result.measurement == "gpu"
    assert "attention" not in {row.category for row in result.categories if row.time_ms > 0}
    assert not any(key.startswith("attention") for key in result.memory.by_category_at_peak)
    transposed = [row for row in result.op_types if "conv_transpose" in row.op_type or "convolution" in row.op_type]
    assert transposed and not any("unknown kind" in row.op_type for row in transposed), transposed
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.randn(4, 3, 16, 16, device="cuda"))
    flops = sum(row.flops or 0 for row in result.categories)
    assert flops == pytest.approx(counter.get_total_flops(), rel=1e-6)
    assert not result.failed_checks, [c.name for c in result.failed_checks]


def test_a_traced_conv_block_named_attention_on_the_gpu_is_read_by_its_ops():
    model = Hybrid().cuda().eval()
    with torch.inference_mode(), visprof.trace(model) as session:
        model(torch.randn(2, 3, 8, 8, device="cuda"))
    found: dict[str, set[str]] = {}
    for i, op in enumerate(session.trace.ops):
        if op.module >= 0:
            found.setdefault(session.trace.modules[op.module].path, set()).add(session.attribution.op_classification(i).key)
    assert found["mhca.projection"] == {"convolution/pointwise"} and found["mhca.norm"] == {"normalization/batch"}
    assert found["attn.qkv"] == found["attn.proj"] == {"attention/projections"}
    assert session.summary().coverage == pytest.approx(1.0)
