"""Bytes moved per op (visprof.capture.op_costs.OpCostCounter), as capture's template forward records them."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.capture.op_costs import OpCostCounter, tensor_bytes, tensor_core_precision
from visprof.native.records import CapturedTrace, OpRecord

aten = torch.ops.aten


def capture(model, x, autocast=False, grad_mode=torch.inference_mode):
    tracker = ModuleTracker(model)
    cap = OpCapture(tracker, nvtx=False, flops=True)
    with grad_mode(), tracker, cap, torch.autocast("cpu", torch.bfloat16, enabled=autocast):
        model(x)
    return cap.to_records()


def test_conv_and_linear_bytes_are_inputs_plus_outputs_with_weights_apart():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(288, 10))
    ops = {op.name: op for op in capture(model, torch.randn(4, 3, 8, 8))}
    conv = ops["aten.conv2d.default"]
    # input 4x3x8x8, weight 8x3x3x3 + bias 8, output 4x8x6x6, fp32
    assert conv.param_bytes == (8 * 3 * 3 * 3 + 8) * 4
    assert conv.bytes == (4 * 3 * 8 * 8 + 8 * 27 + 8 + 4 * 8 * 6 * 6) * 4
    relu = ops["aten.relu.default"]
    assert relu.bytes == 2 * 4 * 8 * 6 * 6 * 4 and relu.param_bytes == 0
    assert ops["aten.flatten.using_ints"].bytes == 0  # a view launches nothing
    linear = ops["aten.linear.default"]
    assert linear.param_bytes == (10 * 288 + 10) * 4
    assert linear.bytes == (4 * 288 + 10 * 288 + 10 + 4 * 10) * 4
    assert linear.flops == 2 * 4 * 288 * 10
    assert conv.tensor_core is None  # fp32 on the CPU: no TF32


def test_autocast_weight_copies_count_as_weights_and_ops_use_bf16_tensor_cores():
    model = torch.nn.Linear(64, 32)
    ops = capture(model, torch.randn(5, 64), autocast=True)
    casts = [op for op in ops if op.name == "aten.to.dtype"]
    linear = next(op for op in ops if op.name == "aten.linear.default")
    weight_cast = next(op for op in casts if op.bytes == 64 * 32 * (4 + 2))
    assert weight_cast.param_bytes == weight_cast.bytes  # fp32 weight read, bf16 copy written
    input_cast = next(op for op in casts if op.bytes == 5 * 64 * (4 + 2))
    assert input_cast.param_bytes == 0
    # the bf16 weight copy and bias copy are weights; the bf16 input and the output are not
    assert linear.param_bytes == (64 * 32 + 32) * 2
    assert linear.bytes == (5 * 64 + 64 * 32 + 32 + 5 * 32) * 2
    assert linear.tensor_core == "bf16"


def test_in_place_op_reads_and_writes_its_tensor():
    counter = OpCostCounter()
    a, b = torch.randn(100), torch.randn(100)
    cost = counter(aten.add_.Tensor, (a, b), {}, a.add_(b))
    assert cost.bytes == 3 * 400  # a read, b read, a written


def test_same_tensor_twice_is_read_once_and_broadcast_reads_its_extent():
    counter = OpCostCounter()
    x = torch.randn(10, 10)
    assert counter(aten.mul.Tensor, (x, x), {}, x * x).bytes == 2 * 400
    bias = torch.randn(10).expand(10, 10)  # stride 0: only 10 floats behind 100 elements
    assert tensor_bytes(bias) == 40
    assert counter(aten.add.Tensor, (x, bias), {}, x + bias).bytes == 400 + 40 + 400


def test_to_same_dtype_and_views_move_nothing_but_a_real_cast_does():
    counter = OpCostCounter()
    x = torch.randn(8, 8)
    assert counter(aten.to.dtype, (x, torch.float32), {}, x.to(torch.float32)).bytes == 0
    assert counter(aten.t.default, (x,), {}, x.t()).bytes == 0
    assert counter(aten.empty.memory_format, ([8, 8],), {}, torch.empty(8, 8)).bytes == 0
    half = x.to(torch.bfloat16)
    assert counter(aten.to.dtype, (x, torch.bfloat16), {}, half).bytes == 64 * 4 + 64 * 2


def test_views_of_parameters_stay_weights():
    counter = OpCostCounter()
    weight = torch.nn.Parameter(torch.randn(16, 8))
    with torch.no_grad():
        transposed = weight.t()
        counter(aten.t.default, (weight,), {}, transposed)
        x = torch.randn(4, 8)
        cost = counter(aten.mm.default, (x, transposed), {}, x @ transposed)
    assert cost.param_bytes == 16 * 8 * 4
    assert cost.bytes == (4 * 8 + 16 * 8 + 4 * 16) * 4


@pytest.mark.parametrize("dtype, expected", [(torch.float16, "fp16"), (torch.bfloat16, "bf16"), (torch.float32, None)])
def test_tensor_core_precision_by_dtype(dtype, expected):
    x, w = torch.randn(2, 8, dtype=dtype), torch.randn(8, 8, dtype=dtype)
    assert tensor_core_precision(aten.mm.default, [x, w]) == expected


def test_depthwise_convolution_is_not_tensor_core_work():
    x = torch.randn(1, 16, 8, 8, dtype=torch.bfloat16)
    depthwise = torch.randn(16, 1, 3, 3, dtype=torch.bfloat16)
    dense = torch.randn(16, 16, 3, 3, dtype=torch.bfloat16)
    assert tensor_core_precision(aten.conv2d.default, [x, depthwise]) is None
    assert tensor_core_precision(aten.conv2d.default, [x, dense]) == "bf16"


def test_records_round_trip_costs_and_old_recordings_load_without_them(tmp_path):
    op = OpRecord(1, "aten.addmm.default", 0, flops=2.0, bytes=12, param_bytes=4, tensor_core="bf16")
    import numpy as np

    from visprof.native.records import KERNEL_DTYPE

    trace = CapturedTrace(np.zeros(0, dtype=KERNEL_DTYPE), [], [op], [])
    path = tmp_path / "t.json.gz"
    trace.save(path)
    assert CapturedTrace.load(path).ops[0] == op
    old = {k: v for k, v in dataclasses.asdict(op).items() if k not in ("bytes", "param_bytes", "tensor_core")}
    legacy = OpRecord(**old)
    assert (legacy.bytes, legacy.param_bytes, legacy.tensor_core) == (0, 0, None)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 8), (6, 7, 8), (2, 3, 7, 8)])
def test_attention_flops_for_any_number_of_leading_dims(shape):
    """NesT and Hiera attend over 5-d tensors, SAM's ViT over 3-d ones; 4-d is torch's own formula."""
    from torch.utils.flop_counter import flop_registry

    from visprof.capture.op_costs import op_flops

    q, k, v = (torch.randn(shape) for _ in range(3))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    heads = 1
    for d in shape[:-2]:
        heads *= d
    q4, k4, v4 = (t.reshape(1, heads, *shape[-2:]) for t in (q, k, v))
    expected = flop_registry[aten._scaled_dot_product_efficient_attention](q4, k4, v4, None, False,
                                                                             out_val=(out.reshape(q4.shape),))
    assert expected == 2 * heads * 7 * 7 * 8 * 2  # two GEMMs of 7 x 7 x 8 per slice
    assert op_flops(aten.scaled_dot_product_attention.default, (q, k, v), {}, out) == expected


def test_attention_flops_count_the_value_width_apart_from_the_query_width():
    """softmax(q k^T) @ v is a GEMM over v's head width, not q's: an attention whose v is wider or
    narrower than q and k (a decoupled value projection) would get its FLOPs and TFLOP/s wrong."""
    from torch.utils.flop_counter import FlopCounterMode

    from visprof.capture.op_costs import op_flops

    q, k, v = torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 16)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    # 6 slices: q k^T is 7 x 7 x 8 MACs, softmax @ v 7 x 7 x 16
    expected = 2 * 2 * 3 * 7 * 7 * (8 + 16)
    with FlopCounterMode(display=False) as counter:  # torch's count of the same call
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert counter.get_total_flops() == expected
    assert op_flops(aten.scaled_dot_product_attention.default, (q, k, v), {}, out) == expected


@pytest.mark.parametrize("equation, shapes, macs", [
    ("bnd,hkd->bnhk", [(2, 5, 8), (3, 4, 8)], 2 * 5 * 8 * 3 * 4),  # MobileNetV4's query projection
    ("bnhk,bmk->bnhm", [(2, 5, 3, 4), (2, 6, 4)], 2 * 5 * 3 * 4 * 6),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)], 2 * 3 * 4 * 5 * 6),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (5, 6)], 2 * 3 * 4 * 5 * 6),  # ellipses of two ranks broadcast
    ("ij->ji", [(4, 5)], 0)])
def test_einsum_flops_are_its_matrix_products(equation, shapes, macs):
    from visprof.capture.op_costs import op_flops

    operands = [torch.randn(s) for s in shapes]
    out = torch.einsum(equation, *operands)
    assert op_flops(aten.einsum.default, (equation, operands), {}, out) == 2 * macs
    if len(operands) == 2:  # the same work as a matmul of the same product, which torch counts
        with torch.utils.flop_counter.FlopCounterMode(display=False) as counter:
            torch.einsum(equation, *operands)
        assert counter.get_total_flops() == 2 * macs


@pytest.mark.parametrize("equation", ["bij,bjk->bik", "...ij,...jk->...ik"])
def test_an_einsum_dim_broadcast_from_size_one_counts_at_its_full_size(equation):
    """The last operand's batch dim is 1 and broadcasts against the first's 3: counting the dim at the
    size its last operand gives (1) would undercount the einsum's FLOPs 3x."""
    from torch.utils.flop_counter import FlopCounterMode

    from visprof.capture.op_costs import op_flops

    operands = [torch.randn(3, 4, 5), torch.randn(1, 5, 6)]
    out = torch.einsum(equation, *operands)
    assert out.shape == (3, 4, 6)
    expected = 2 * 3 * 4 * 5 * 6  # b=3 after the broadcast, i=4, j=5, k=6
    with FlopCounterMode(display=False) as counter:
        torch.einsum(equation, *operands)
    assert counter.get_total_flops() == expected
    assert op_flops(aten.einsum.default, (equation, operands), {}, out) == expected


def test_the_capture_counts_einsum_and_5d_attention_flops():
    class Net(torch.nn.Module):
        def forward(self, x):
            y = torch.einsum("bnd,bmd->bnm", x, x)  # 2 x 4 x 4 x 8 MACs
            q = x.reshape(2, 1, 1, 4, 8)  # (batch, heads, windows, tokens, dim), as NesT attends
            return y.sum() + torch.nn.functional.scaled_dot_product_attention(q, q, q).sum()

    ops = {op.name: op for op in capture(Net(), torch.randn(2, 4, 8))}
    assert ops["aten.einsum.default"].flops == 2 * 2 * 4 * 4 * 8
    assert ops["aten.scaled_dot_product_attention.default"].flops == 2 * 2 * 4 * 4 * (8 + 8)


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
def test_the_fused_multi_head_attention_of_nn_multiheadattention_counts_its_flops(grad_mode):
    """In eval under inference_mode or no_grad a batch_first nn.MultiheadAttention runs one fused op,
    aten._native_multi_head_attention, which counted 0 FLOPs: the roofline lost the layer's work."""
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):  # self-attention: the fast path's condition
            return self.mha(x, x, x, need_weights=False)[0]

    batch, queries, width = 2, 5, 16
    keys = queries
    tracker = ModuleTracker(Net())
    with grad_mode(), tracker, OpCapture(tracker, flops=True) as cap:
        tracker.root(torch.randn(batch, queries, width))
    ops = {op.name: op for op in cap.to_records()}
    fused = ops["aten._native_multi_head_attention.default"]
    projections = 2 * batch * width * width * (queries + 2 * keys + queries)  # q, k, v in; out
    attention = 2 * 2 * batch * queries * keys * width  # q k^T and softmax @ v, over all heads
    assert fused.flops == projections + attention


@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "gelu")])
def test_the_fused_transformer_encoder_layer_counts_the_whole_layers_flops(norm_first, activation):
    """In eval under no_grad nn.TransformerEncoderLayer runs one op, aten._transformer_encoder_layer_fwd,
    which counted 0 FLOPs though it runs the layer's attention and its feed-forward linears."""
    batch, tokens, width, heads, hidden = 2, 5, 16, 4, 24
    layer = torch.nn.TransformerEncoderLayer(width, heads, dim_feedforward=hidden, batch_first=True,
                                             norm_first=norm_first, activation=activation).eval()
    x = torch.randn(batch, tokens, width)
    (fused,) = capture(layer, x, grad_mode=torch.no_grad)
    assert fused.name == "aten._transformer_encoder_layer_fwd.default"
    projections = 2 * batch * tokens * (3 * width * width + width * width)  # qkv in, out
    attention = 2 * 2 * batch * tokens * tokens * width  # q k^T and softmax @ v, over all heads
    feed_forward = 2 * batch * tokens * (width * hidden + hidden * width)  # linear1, linear2
    assert fused.flops == projections + attention + feed_forward
    # with autograd on the same layer runs op by op (linears, SDPA), and they count as much
    assert sum(op.flops for op in capture(layer, x, grad_mode=torch.enable_grad)) == fused.flops


def test_a_training_steps_sdpa_backward_on_the_cpu_counts_its_flops():
    """aten._scaled_dot_product_flash_attention_for_cpu_backward counted 0 FLOPs (torch's flop_registry
    has no entry for it). Like the flash backward torch counts, it recomputes q k^T and runs four more
    GEMMs of that size (the gradients of the scores, v, q and k): 5 x 2 B H L S E, 2.5 x the forward."""
    import visprof

    batch, heads, tokens, width = 2, 3, 5, 8
    q, k, v = (torch.randn(batch, heads, tokens, width, requires_grad=True) for _ in range(3))
    with visprof.trace() as session:
        torch.nn.functional.scaled_dot_product_attention(q, k, v).sum().backward()
    flops = {op.name: op.flops for op in session.trace.ops}
    gemm = 2 * batch * heads * tokens * tokens * width  # one L x S x E product per (batch, head)
    assert flops["aten._scaled_dot_product_flash_attention_for_cpu.default"] == 2 * gemm
    assert flops["aten._scaled_dot_product_flash_attention_for_cpu_backward.default"] == 5 * gemm


@pytest.mark.parametrize("op, backward", [
    (aten._scaled_dot_product_flash_attention_backward.default, True),  # torch's own formula: the reference
    (aten._scaled_dot_product_flash_attention_for_cpu_backward.default, True),
    (aten._scaled_dot_product_fused_attention_overrideable.default, False),  # an out-of-tree device's backend
    (aten._scaled_dot_product_fused_attention_overrideable_backward.default, True),
    (aten._scaled_dot_product_attention_math.default, False),  # the math backend called by name
])
def test_every_sdpa_backend_counts_its_forward_and_backward_flops(op, backward):
    """The SDPA ops of the taxonomy's sdpa_op pattern that torch's flop_registry leaves out counted 0.
    A forward is two GEMMs per (batch, head) slice, q k^T and softmax @ v; a backward five."""
    from visprof.capture.op_costs import op_flops

    batch, heads, queries, keys, width = 2, 3, 5, 7, 8
    q = torch.randn(batch, heads, queries, width)
    k, v = torch.randn(batch, heads, keys, width), torch.randn(batch, heads, keys, width)
    args = (torch.randn(batch, heads, queries, width), q, k, v) if backward else (q, k, v)
    gemm = 2 * batch * heads * queries * keys * width
    assert op_flops(op, args, {}, None) == (5 if backward else 2) * gemm


# the strided nested layout is the one nn.TransformerEncoder's fast path makes; torch says it is a prototype
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_a_nested_tensors_bytes_are_its_elements_and_its_views_move_nothing():
    """A nested tensor has no shape or strides to read (``t.shape`` raises for the strided layout and is
    symbolic for the jagged one): counting its bytes raised inside the capture. It holds its elements."""
    packed = torch.nested.nested_tensor([torch.randn(3, 16), torch.randn(5, 16)])
    assert tensor_bytes(packed) == (3 + 5) * 16 * 4
    jagged = torch.nested.nested_tensor([torch.randn(3, 16), torch.randn(5, 16)], layout=torch.jagged)
    assert tensor_bytes(jagged) == (3 + 5) * 16 * 4
    linear = torch.nn.Linear(16, 8)
    with torch.inference_mode():
        out = linear(jagged)
        view = out.transpose(1, 2)
    counter = OpCostCounter()
    cost = counter(aten.linear.default, (jagged, linear.weight, linear.bias), {}, out)
    assert cost.flops == 2 * (3 + 5) * 16 * 8  # the real tokens, not the longest sequence's times the batch
    assert cost.bytes == ((3 + 5) * 16 + 16 * 8 + 8 + (3 + 5) * 8) * 4
    assert counter(aten.transpose.int, (out, 1, 2), {}, view).bytes == 0  # a view of the same values


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
def test_a_padded_batch_through_the_fused_encoder_counts_each_sequence_at_its_length(grad_mode):
    """nn.TransformerEncoder with a src_key_padding_mask (eval, autograd off) packs the batch into a nested
    tensor, which crashed the byte counter; the fused layers' FLOPs read its shape and counted 0."""
    from small_modules import PaddedEncoder

    model = PaddedEncoder().eval()
    images = torch.randn(2, 3, 4, 4)  # 16 tokens per image; the first one's last 8 are padding
    lengths, width = (8, 16), PaddedEncoder.width
    ops = capture(model, images, grad_mode=grad_mode)
    layers = [op for op in ops if op.name == "aten._transformer_encoder_layer_fwd.default"]
    assert len(layers) == PaddedEncoder.layers
    hidden = PaddedEncoder.hidden
    # per sequence of n tokens: qkv and output projections, q k^T and softmax @ v, the two feed-forward linears
    per_sequence = [2 * n * 4 * width * width + 2 * 2 * n * n * width + 2 * n * 2 * width * hidden for n in lengths]
    assert all(op.flops == sum(per_sequence) for op in layers)
    # qkv and output projections, two norms, two feed-forward linears: weights and biases
    weights = 3 * (width + 1) * width + (width + 1) * width + 4 * width + (width + 1) * hidden + (hidden + 1) * width
    assert all(op.bytes == (2 * sum(lengths) * width + weights) * 4 for op in layers)  # packed tokens in and out
    packing = next(op for op in ops if op.name == "aten._nested_tensor_from_mask.default")
    assert packing.bytes == (2 * 16 + sum(lengths)) * width * 4 + 2 * 16  # padded tokens and mask in, packed out


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
@pytest.mark.parametrize("cls, gates, layers, directions", [
    (torch.nn.LSTM, 4, 2, 2), (torch.nn.GRU, 3, 1, 1), (torch.nn.RNN, 1, 1, 2)])
def test_a_recurrent_layer_counts_its_gate_gemms_once_whichever_op_runs_it(cls, gates, layers, directions, grad_mode):
    """nn.LSTM (sequencer2d's) counted 0 FLOPs: under inference_mode capture sees aten.lstm, a oneDNN
    layer (mkldnn_rnn_layer) under no_grad, cuDNN's _cudnn_rnn on a GPU, none with a formula; an
    nn.GRU under no_grad runs GEMMs, which were counted. Each layer and direction multiplies every
    token by its input and hidden weight matrices."""
    hidden, features, tokens = 32, 16, 2 * 10
    rnn = cls(features, hidden, num_layers=layers, bidirectional=directions == 2, batch_first=True)
    ops = capture(rnn, torch.randn(2, 10, features), grad_mode=grad_mode)
    widths = [features] + [hidden * directions] * (layers - 1)  # what each layer reads
    expected = sum(2 * tokens * directions * gates * hidden * (width + hidden) for width in widths)
    assert sum(op.flops for op in ops) == expected, [(op.name, op.flops) for op in ops if op.flops]


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
@pytest.mark.parametrize("cell, gates", [(torch.nn.LSTMCell(16, 24), 4), (torch.nn.GRUCell(16, 24), 3),
                                         (torch.nn.RNNCell(16, 24), 1), (torch.nn.RNNCell(16, 24, nonlinearity="relu"), 1)])
def test_a_recurrent_cell_counts_its_gate_gemms_and_is_linear(cell, gates, grad_mode):
    """Under inference_mode an nn.LSTMCell/GRUCell/RNNCell runs one composite op (lstm_cell, gru_cell,
    rnn_tanh_cell, rnn_relu_cell): they counted 0 FLOPs, and an RNNCell's was "other"; under no_grad
    the same cell's addmm GEMMs counted in full."""
    from visprof.attribution.categories import default_table

    ops = capture(cell, torch.randn(3, 16), grad_mode=grad_mode)
    assert sum(op.flops for op in ops) == 2 * 3 * gates * 24 * (16 + 24)
    table = default_table()
    assert {table.classify_op(op.name, (), op.attrs).category for op in ops if op.flops} == {"linear"}


def test_cudnns_rnn_counts_as_the_cpus_does():
    # a GPU runs nn.LSTM as _cudnn_rnn(input, weights, stride, buf, hx, cx, mode, hidden, ...): same formula
    from visprof.capture.op_costs import op_flops

    x, hx = torch.empty(2, 10, 16, device="meta"), torch.empty(1, 2, 32, device="meta")
    weights = [torch.empty(128, 16, device="meta"), torch.empty(128, 32, device="meta"),
               torch.empty(128, device="meta"), torch.empty(128, device="meta")]
    args = (x, weights, 4, None, hx, hx, 2, 32, 0, 1, True, 0.0, False, False, [], None)
    assert op_flops(aten._cudnn_rnn.default, args, {}, None) == 2 * 20 * 128 * (16 + 32)


def test_a_recurrent_layers_backward_counts_twice_its_forward():
    """A traced LSTM training step: oneDNN's mkldnn_rnn_layer_backward counted 0 FLOPs where its forward
    counted in full; the gradients through the steps and of the weights each take the forward's."""
    import visprof

    lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)
    x = torch.randn(2, 5, 8)
    lstm(x)[0].sum().backward()  # the first step's one-off work, outside the trace
    with visprof.trace(lstm) as session:
        lstm(x)[0].sum().backward()
    forward = [op.flops for op in session.trace.ops if op.flops and not op.attrs.get("backward")]
    backward = [op.flops for op in session.trace.ops if op.flops and op.attrs.get("backward")]
    assert len(forward) == len(backward) == 2 and sum(backward) == 2 * sum(forward) > 0


def test_cudnns_rnn_backward_counts_the_weights_gradient_where_asked():
    from visprof.capture.op_costs import op_flops

    x, hx = torch.empty(2, 10, 16, device="meta"), torch.empty(1, 2, 32, device="meta")
    weights = [torch.empty(128, 16, device="meta"), torch.empty(128, 32, device="meta")]
    forward = 2 * 20 * 128 * (16 + 32)
    for mask, times in (([True, True, True, True], 2), ([False, True, True, False], 1)):
        args = (x, weights, 4, None, hx, hx, x, x, None, None, 2, 32, 0, 1, True, 0.0, True, False, [], None, None, mask)
        assert op_flops(aten._cudnn_rnn_backward.default, args, {}, None) == times * forward


def _captured_conv_step(conv, x):
    """(forward, backward) op records of one captured training step of ``conv`` on ``x``."""
    tracker = ModuleTracker(conv)
    cap = OpCapture(tracker, nvtx=False, flops=True, backward=True)
    with tracker, cap:
        conv(x).sum().backward()
    ops = cap.to_records()
    return (next(op for op in ops if op.name == "aten.convolution.default"),
            next(op for op in ops if op.name == "aten.convolution_backward.default"))


@pytest.mark.parametrize("groups, transposed", [(1, False), (4, False), (8, False), (1, True), (4, True)])
def test_a_convolutions_backward_counts_each_gradient_as_the_forward(groups, transposed):
    """torch's formula counted the weight's gradient of a grouped convolution as if every channel met
    every other: a depthwise layer's backward in a traced training step was 65x its forward. Each of the
    input's and the weight's gradients takes the forward's multiply-adds; the dense case is torch's count."""
    from torch.utils.flop_counter import FlopCounterMode

    cls = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d
    conv = cls(8, 16, 3, groups=groups, padding=1)
    x = torch.randn(2, 8, 12, 12, requires_grad=True)
    forward, backward = _captured_conv_step(conv, x)
    assert forward.flops > 0 and backward.flops == 2 * forward.flops, (forward.flops, backward.flops)
    if groups == 1:
        with FlopCounterMode(display=False) as counter:
            conv(x).sum().backward()
        assert forward.flops + backward.flops == counter.get_total_flops()


def test_a_convolutions_backward_without_the_inputs_gradient_counts_the_weights_only():
    """A stem convolution's input is the image, which needs no gradient (output_mask[0] False): its
    backward is the weight's gradient alone, as many FLOPs as the forward. Counting the input's
    gradient too would double that layer's backward FLOPs in a training-step profile."""
    from torch.utils.flop_counter import FlopCounterMode

    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    x = torch.randn(2, 3, 12, 12)  # no requires_grad: an image
    forward, backward = _captured_conv_step(conv, x)
    # output 2x8x12x12 elements, each 3x3x3 multiply-adds
    assert forward.flops == 2 * (2 * 8 * 12 * 12) * (3 * 3 * 3)
    assert backward.flops == forward.flops, (forward.flops, backward.flops)
    with FlopCounterMode(display=False) as counter:  # torch's count of the same step
        conv(x).sum().backward()
    assert forward.flops + backward.flops == counter.get_total_flops()
