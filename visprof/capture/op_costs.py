"""FLOPs of one aten op from its argument shapes, and (``OpCostCounter``) the bytes it moves.

torch.utils.flop_counter's formulas cover the ops autograd leaves behind (convolution, mm,
addmm, bmm, the CUDA SDPA backends and their backward). Under torch.inference_mode the dispatch
mode sees the composite ops before they decompose (aten.conv2d, aten.linear, aten.matmul,
aten.scaled_dot_product_attention), the CPU runs SDPA backends of its own (forward and backward),
and nn.MultiheadAttention and nn.TransformerEncoderLayer have fused fast paths, so those are
mapped onto the same formulas here.

With a ``src_key_padding_mask`` in eval under no_grad, ``nn.TransformerEncoder`` packs the batch
into a nested tensor (each sequence at its own length, padding dropped) before its fused layers,
and a nested tensor has no shape or strides to read (``t.shape`` raises), only its element count
and its buffer: FLOPs and bytes of nested tensors are counted from those.
"""
from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

import torch
from torch.utils.flop_counter import flop_registry

from visprof.base.tf32_switches import tf32_in_use
from visprof.capture.higher_order import FLEX_ATTENTION, FLEX_ATTENTION_BACKWARD

aten = torch.ops.aten
_CONV_ND = {aten.conv1d, aten.conv2d, aten.conv3d}
_CONV_TRANSPOSE_ND = {aten.conv_transpose1d, aten.conv_transpose2d, aten.conv_transpose3d}


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(t.shape)


def _conv_nd(args, kwargs, out) -> float:
    x, w = args[0], args[1]
    groups = args[6] if len(args) > 6 else kwargs.get("groups", 1)
    stride = args[3] if len(args) > 3 else 1
    return flop_registry[aten.convolution](x, w, None, stride, 0, 1, False, [0], groups, out_val=out)


def _conv_transpose_nd(args, kwargs, out) -> float:
    """``conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)``:
    torch's formula for a transposed convolution, a multiply-add per input element and weight of its
    group. It had counted 0 (lowformer's upsampling: 8% of lowformer_b0's FLOPs)."""
    x, w = args[0], args[1]
    groups = args[6] if len(args) > 6 else kwargs.get("groups", 1)
    return flop_registry[aten.convolution](x, w, None, 1, 0, 1, True, [0], groups, out_val=out)


def _linear(args, kwargs, out) -> float:
    """Each output element is a dot product over ``in_features``; numel, not the shape, so a nested
    output (packed sequences) counts its real elements."""
    in_features = args[1].shape[1]
    return 2.0 * out.numel() * in_features


def _matmul(args, kwargs, out) -> float:
    return 2.0 * out.numel() * args[0].size(-1)


def _sdpa(args, kwargs, out) -> float:
    """q @ k^T and its softmax @ v: 2 L S E + 2 L S Ev per (batch, head, ...) slice. SDPA takes any
    number of leading dims: NesT and Hiera pass 5-d (batch, heads, windows, tokens, dim) tensors,
    SAM's ViT 3-d (batch x heads, tokens, dim); torch's own formula reads 4-d only, so it counted 0
    for them (20 architectures of the H200 store; 63-67% of NesT's op-group time in its latest
    profiles; bench/results/h200-profiles/README.md)."""
    q, k, v = args[:3]
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        return 0.0
    *batch, length, width = _shape(q)
    keys, value_width = k.shape[-2], v.shape[-1]
    return 2.0 * math.prod(batch) * length * keys * (width + value_width)


def _einsum(args, kwargs, out) -> float:
    """A two-operand einsum is one (batched) matrix product: 2 x the product of every index's size
    (the relative position terms of MaxViT, MViTv2 and SAM's ViT, which counted 0). One operand is a
    permutation or reduction, not matrix work; three or more depend on the order torch contracts
    them in, which the shapes do not say: 0 for both (and for an equation without "->")."""
    equation, operands = args[0], args[1]
    if len(operands) != 2 or "->" not in equation:
        return 0.0
    sizes: dict[str, int] = {}
    for labels, tensor in zip(equation.split("->")[0].split(","), operands):
        labels = labels.strip()
        if "..." in labels:  # the dims the letters do not name, numbered from the right as they broadcast
            head, tail = labels.split("...")
            unnamed = tensor.dim() - len(head) - len(tail)
            labels = head + "".join(f"<{i}>" for i in reversed(range(unnamed))) + tail
            letters = re.findall(r"<\d+>|[A-Za-z]", labels)
        else:
            letters = list(labels)
        for letter, size in zip(letters, _shape(tensor)):
            sizes[letter] = max(sizes.get(letter, 1), size)
    return 2.0 * math.prod(sizes.values())


def _sequence_lengths(t: torch.Tensor) -> list[int]:
    """Tokens of each sequence of a (batch, tokens, width) tensor. A nested tensor's sequences each
    have their own (nn.TransformerEncoder's fast path packs a padded batch so)."""
    if t.is_nested:
        return [int(sequence.shape[0]) for sequence in t.unbind()]
    batch, length, _ = _shape(t)
    return [length] * batch


def _attention_layer(length: int, keys: int, width: int) -> float:
    """One sequence through a multi-head attention layer of width E (the heads split E), L queries and
    S keys: projections 2 E^2 (L + 2 S) + 2 E^2 L, attention 2 L S E for q k^T and as much for its
    softmax times v."""
    return 2.0 * width * (width * (2 * length + 2 * keys) + 2 * length * keys)


def _native_mha(args, kwargs, out) -> float:
    """nn.MultiheadAttention's fused fast path (eval, batch_first, no grad): one op runs the q, k, v
    projections, the attention and the output projection, which counted 0 FLOPs. A nested input counts
    each sequence at its own length, the work its tokens need (as torch's FlopCounterMode counts nested
    attention), not at the longest's."""
    query, key = args[0], args[1]
    if query.dim() != 3 or key.dim() != 3:
        return 0.0
    width = query.size(-1)
    return sum(_attention_layer(length, keys, width)
               for length, keys in zip(_sequence_lengths(query), _sequence_lengths(key)))


def _transformer_encoder_layer(args, kwargs, out) -> float:
    """nn.TransformerEncoderLayer's fused fast path (eval, batch_first, no grad): one op,
    aten._transformer_encoder_layer_fwd, runs the whole layer, which counted 0 FLOPs. Its self-attention
    counts as _native_mha's (src attends to itself: qkv and out projections, q k^T, softmax times v); its
    feed-forward block's two linears 2 x tokens x their weight's elements each. The norms, the activation
    and the residual adds count none, as they do as ops of their own."""
    # the op's schema: src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
    # norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
    # ffn_weight_2, ffn_bias_2, mask, mask_type
    src, ffn_weight_1, ffn_weight_2 = args[0], args[14], args[16]
    if src.dim() != 3:
        return 0.0
    width, feed_forward = src.size(-1), ffn_weight_1.numel() + ffn_weight_2.numel()
    return sum(_attention_layer(length, length, width) + 2.0 * length * feed_forward
               for length in _sequence_lengths(src))


def _flex_attention_backward(args, kwargs, out) -> float:
    """flex_attention's backward takes (q, k, v, out, logsumexp, grad_out, ...): as an SDPA backward,
    five GEMMs of the size of the forward's two (torch's own formula, where it has one, counts as much).
    Eager flex_attention computes every score, masked or not, so neither counts a block mask's sparsity."""
    return 2.5 * _sdpa(args[:3], kwargs, out)


def _rnn_gemms(x: torch.Tensor, weights) -> float:
    """Per token, each layer's and direction's GEMMs of its input and hidden weights against the
    gates (and an LSTM's projection): the weights' matrices are the 2-D tensors, the 1-D ones biases.
    ``x`` is (T, B, F), (B, T, F) or packed (tokens, F)."""
    tokens = x.numel() // x.shape[-1]
    return 2.0 * tokens * sum(w.numel() for w in weights if isinstance(w, torch.Tensor) and w.dim() == 2)


def _fused_rnn(args, kwargs, out) -> float:
    """An RNN run whole (``aten.lstm``/``gru``/``rnn_*`` under inference_mode, cuDNN's, MIOpen's): its
    weights are the tensor lists among its arguments (the hidden state's tensors there are 3-D).
    ``nn.LSTM`` (sequencer2d's) had counted 0 FLOPs, though an nn.GRU run as GEMMs was counted."""
    return _rnn_gemms(args[0], [w for a in args[1:] if isinstance(a, (list, tuple)) for w in a])


def _rnn_cell(args, kwargs, out) -> float:
    """One step of an RNN cell (``lstm_cell``/``gru_cell``/``rnn_*_cell(input, hx, w_ih, w_hh, ...)``),
    the composite nn.LSTMCell/GRUCell/RNNCell call under inference_mode: it had counted 0, where
    under no_grad the same cell's addmm GEMMs counted in full."""
    return _rnn_gemms(args[0], args[2:4])


def _rnn_backward(input_at: int, weights_at: int, mask_at: int | None):
    """An RNN's backward (a training step's): the gradient through every step's GEMMs (the hidden state's
    recurrence needs it whatever the input asks), and the weights' where asked (cuDNN's and MIOpen's
    ``output_mask[3]``; oneDNN's layer returns them always), each as many FLOPs as the forward's.
    It had counted 0, where its forward counted in full."""
    def flops(args, kwargs, out) -> float:
        weights = args[weights_at]
        weights = weights if isinstance(weights, (list, tuple)) else args[weights_at:weights_at + 4]
        forward = _rnn_gemms(args[input_at], weights)
        return forward * (1 + (bool(args[mask_at][3]) if mask_at is not None else True))
    return flops


def _rnn_layer(args, kwargs, out) -> float:
    """oneDNN's one RNN layer on the CPU: weight0-3 (input and hidden matrices, their biases)."""
    return _rnn_gemms(args[0], args[1:5])


def _conv_backward(args, kwargs, out) -> float:
    """``convolution_backward(grad_out, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask)``: the input's gradient and the weight's each
    take the forward's multiply-adds. torch's formula counts the weight's gradient as a convolution
    of every channel with every other, ``groups`` times too many: a depthwise layer's backward was
    65x its forward."""
    grad_out, x, weight, transposed, mask = args[0], args[1], args[2], args[7], args[10]
    # multiply-adds per output element (per input element of a transposed convolution)
    forward = 2.0 * (x.numel() if transposed else grad_out.numel()) * weight[0].numel()
    return forward * (bool(mask[0]) + bool(mask[1]))


def _torch_formula(packet):
    """torch's own formula for ``packet``, for an op whose leading arguments are the same tensors."""
    formula = flop_registry[packet]
    return lambda args, kwargs, out: formula(*args, **kwargs, out_val=out)


# Every SDPA backend's backward takes (grad_out, query, key, value, ...) first, as the flash and efficient
# backward that torch counts do, so torch's formula counts those it leaves out too: the scores recomputed,
# then the gradients of the scores, v, q and k, five GEMMs where the forward runs two.
_sdpa_backward = _torch_formula(aten._scaled_dot_product_flash_attention_backward)

# Ops torch's flop_registry has no formula for.
_COMPOSITES = {
    **{packet: _conv_nd for packet in _CONV_ND},
    **{packet: _conv_transpose_nd for packet in _CONV_TRANSPOSE_ND},
    aten.linear: _linear,
    aten.matmul: _matmul,
    aten.scaled_dot_product_attention: _sdpa,
    aten.einsum: _einsum,
    # The CPU's SDPA backend (what no_grad, unlike inference_mode, dispatches to on the CPU) and its
    # backward (a training step's), which counted 0.
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_backward,
    # An out-of-tree (privateuse1) device's SDPA backend, and the math backend called by name under
    # inference_mode (its GEMMs then run unseen inside it).
    aten._scaled_dot_product_fused_attention_overrideable: _sdpa,
    aten._scaled_dot_product_fused_attention_overrideable_backward: _sdpa_backward,
    aten._scaled_dot_product_attention_math: _sdpa,
    aten._native_multi_head_attention: _native_mha,
    aten._transformer_encoder_layer_fwd: _transformer_encoder_layer,
    **{getattr(aten, name): _fused_rnn for name in ("lstm", "gru", "rnn_tanh", "rnn_relu", "_cudnn_rnn", "miopen_rnn")
       if hasattr(aten, name)},
    **({aten.mkldnn_rnn_layer: _rnn_layer} if hasattr(aten, "mkldnn_rnn_layer") else {}),
    **{getattr(aten, name): _rnn_cell for name in ("lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")},
    **{getattr(aten, name): backward for name, backward in (
        ("mkldnn_rnn_layer_backward", _rnn_backward(0, 1, None)), ("_cudnn_rnn_backward", _rnn_backward(0, 1, 21)),
        ("miopen_rnn_backward", _rnn_backward(0, 1, 20))) if hasattr(aten, name)},
}
if FLEX_ATTENTION is not None:  # an SDPA whose scores a function modifies; torch's formulas (2.14 has them) agree
    _COMPOSITES.update({FLEX_ATTENTION: _sdpa, FLEX_ATTENTION_BACKWARD: _flex_attention_backward})


def _packet(func) -> Any:
    """The overload packet of an aten op; a higher-order op (flex_attention) is its own."""
    return getattr(func, "_overloadpacket", func)


# Ops whose formula in torch's flop_registry is wrong, counted by visprof's own.
_CORRECTED = {aten.convolution_backward: _conv_backward}


def op_flops(func, args: tuple, kwargs: dict, out: Any) -> float:
    """FLOPs of `func(*args, **kwargs) -> out`; 0 for ops no formula covers (elementwise,
    norms: visprof counts matrix and convolution work, as torch's FlopCounterMode does)."""
    packet = _packet(func)
    try:
        if packet in _CORRECTED:
            return float(_CORRECTED[packet](args, kwargs, out))
        formula = flop_registry.get(packet)
        if formula is not None:
            return float(formula(*args, **kwargs, out_val=out))
        composite = _COMPOSITES.get(packet)
        return float(composite(args, kwargs, out)) if composite else 0.0
    except Exception:  # a formula that cannot read these arguments counts nothing
        return 0.0


# --- bytes moved and tensor-core use ----------------------------------------------------------
# The roofline (visprof/analysis/roofline.py) needs, per op, the bytes it moves and whether its
# FLOPs can run on tensor cores. Both are estimated from the op's tensors, where FLOPs are.

class OpCost(NamedTuple):
    """What one op costs, from its argument and result tensors.

    flops        as ``op_flops``;
    bytes        its tensor inputs read once plus its outputs written once (an in-place op's
                 tensor counts as read and as written); 0 for views and other ops that return
                 an alias of an input and launch no kernel;
    param_bytes  the part of ``bytes`` that is parameters, or tensors made from parameters
                 alone (autocast's weight copies, a transposed weight): it does not grow
                 with the batch, the rest does;
    tensor_core  the tensor-core precision its FLOPs can use ("fp16", "bf16", "tf32",
                 "fp8"), or None (no FLOPs, fp32 without TF32, depthwise convolution).
    """

    flops: float = 0.0
    bytes: int = 0
    param_bytes: int = 0
    tensor_core: str | None = None

    def record_fields(self) -> dict[str, Any]:
        """The OpRecord fields this cost fills."""
        return {"flops": self.flops, "bytes": self.bytes, "param_bytes": self.param_bytes,
                "tensor_core": self.tensor_core}


NO_COST = OpCost()
_TENSOR_CORE_DTYPES = {torch.float16: "fp16", torch.bfloat16: "bf16"}
_TENSOR_CORE_DTYPES.update({getattr(torch, name): "fp8" for name in ("float8_e4m3fn", "float8_e5m2")
                            if hasattr(torch, name)})
_CONVOLUTIONS = {aten.convolution, aten._convolution, *_CONV_ND, *_CONV_TRANSPOSE_ND}


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a kernel must touch to read ``t``: its elements, or less for a broadcast view
    (stride 0), whose memory extent is smaller than its element count. A nested tensor has no
    strides (each sequence has its own): its elements, which its buffer holds."""
    n = t.numel()
    if n == 0:
        return 0
    if t.is_nested:
        return n * t.element_size()
    extent = 1 + sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride()))
    return min(n, extent) * t.element_size()


def _tensors(tree: Any) -> list[torch.Tensor]:
    from torch.utils._pytree import tree_leaves

    return [x for x in tree_leaves(tree) if isinstance(x, torch.Tensor)]


def _holder(t: torch.Tensor) -> torch.Tensor:
    """The tensor whose storage holds ``t``'s elements: ``t``, or for a jagged nested tensor (a Python
    subclass without storage of its own) its values, so that its views are seen to move nothing."""
    if not t.is_nested or t.layout == torch.strided:
        return t
    try:
        return t.values()
    except (RuntimeError, NotImplementedError):  # then it is read as memory of its own
        return t


def _storage_key(t: torch.Tensor) -> tuple[int, int, int]:
    """Identity of the memory ``t`` covers: the same region passed twice is read once."""
    held = _holder(t)
    try:
        ptr = held.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # no storage (sparse, a tensor subclass)
        ptr = id(t)
    return ptr, held.storage_offset(), tensor_bytes(t)


def _storage_ptr(t: torch.Tensor) -> int | None:
    try:
        return _holder(t).untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def tensor_core_precision(func, inputs: list[torch.Tensor]) -> str | None:
    """The tensor-core precision an op with FLOPs would use, from its operands' dtype and
    torch's TF32 switches (read when the op runs)."""
    floats = [t for t in inputs[:2] if t.is_floating_point()]
    if not floats:
        return None
    packet = _packet(func)
    if packet in _CONVOLUTIONS and len(inputs) > 1 and inputs[1].dim() > 2:
        if inputs[1].shape[1] == 1 and inputs[0].dim() > 1 and inputs[0].shape[1] > 1:
            return None  # depthwise: one input channel per filter, no GEMM for tensor cores
    dtype = floats[0].dtype
    if dtype in _TENSOR_CORE_DTYPES:
        return _TENSOR_CORE_DTYPES[dtype]
    if dtype == torch.float32 and floats[0].is_cuda:
        # read through the API torch itself follows: its legacy flag may be refused (a mix of the two APIs)
        return "tf32" if tf32_in_use("conv" if packet in _CONVOLUTIONS else "matmul") else None
    return None


def script_constants(root: torch.nn.Module | None) -> list[torch.Tensor]:
    """The tensors that TorchScript graphs in ``root`` hold as constants: a frozen module's
    (torch.jit.freeze) weights, which it keeps there and not as parameters, and a traced one's
    literals. The interpreter hands ops these very tensor objects, and none grows with the batch."""
    found = []
    for module in root.modules() if root is not None else ():
        if not isinstance(module, torch.jit.ScriptModule):
            continue
        try:  # each module's own graph: a submodule's constants are in its graph
            graph = module.graph
        except RuntimeError:  # a ScriptModule without forward
            continue
        for node in graph.findAllNodes("prim::Constant"):
            if node.output().type().kind() == "TensorType":
                value = node.output().toIValue()
                if isinstance(value, torch.Tensor):  # a 0-dim literal comes back as a Python number
                    found.append(value)
    return found


def is_frozen_script(module: torch.nn.Module) -> bool:
    """torch.jit.freeze's module (and so torch.jit.optimize_for_inference's): its weights became
    constants of its graph, where no count of the original parameters is kept (freezing folds
    batch norms into convolutions and may pack weights into objects that are not tensors).
    Freezing folds the ``training`` flag into the graph too; where preserved_attrs kept it, a
    module with no parameters whose graph holds weight-sized constants is frozen all the same."""
    if not isinstance(module, torch.jit.ScriptModule):
        return False
    if not hasattr(module, "training"):
        return True
    return next(iter(module.parameters()), None) is None and any(t.dim() > 0 for t in script_constants(module))


class OpCostCounter:
    """Counts ``OpCost`` op by op through one forward (capture's template forward).

    It remembers which tensors were made from parameters alone (weakly, so it keeps no
    tensor alive), which is how autocast's bf16 copy of a weight still counts as weight.
    Module buffers (running statistics, index tables) count as activations: they are
    small in vision models. ``constants`` count as parameters: the tensors a TorchScript
    graph holds (``script_constants``), where a frozen module keeps its weights.

    ``inputs`` (the forward's input tensors), given for a model with a frozen TorchScript graph,
    makes every tensor that no counted op made, and that is not an input, a constant: the graph
    executor folds autocast's casts of a frozen graph's weights into new bf16 constants, which no
    graph visprof can read before the run holds (a frozen resnet18 at bf16 had 0 weight bytes).
    """

    def __init__(self, constants: list[torch.Tensor] = (), inputs: tuple[torch.Tensor, ...] | None = None) -> None:
        from torch.utils.weak import WeakIdKeyDictionary

        self._from_params = WeakIdKeyDictionary()
        for t in constants:
            self._from_params[t] = True
        # the tensors a counted op made, and the inputs: anything else came from the graph (``inputs``)
        self._made = WeakIdKeyDictionary() if inputs is not None else None
        for t in inputs or ():
            self._made[t] = True

    def _is_param(self, t: torch.Tensor) -> bool:
        if isinstance(t, torch.nn.Parameter) or t in self._from_params:
            return True
        return self._made is not None and t not in self._made

    def __call__(self, func, args: tuple, kwargs: dict, out: Any) -> OpCost:
        flops = op_flops(func, args, kwargs, out)
        inputs, outputs = _tensors((args, kwargs)), _tensors(out)
        params = [self._is_param(t) for t in inputs]
        if inputs and all(params):
            for t in outputs:
                self._from_params[t] = True
        elif self._made is not None:
            for t in outputs:
                self._made[t] = True
        tensor_core = tensor_core_precision(func, inputs) if flops > 0 else None
        if not _moves_data(func, inputs, outputs):
            return OpCost(flops, 0, 0, tensor_core)
        read: dict[tuple, bool] = {}
        for t, is_param in zip(inputs, params):
            read.setdefault(_storage_key(t), is_param)
        written = {_storage_key(t): self._is_param(t) for t in outputs}
        total = sum(key[2] for key in read) + sum(key[2] for key in written)
        param = sum(key[2] for key, p in read.items() if p) + sum(key[2] for key, p in written.items() if p)
        return OpCost(flops, total, param, tensor_core)


def _moves_data(func, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> bool:
    """False for ops that only return aliases of their inputs (views, a no-op ``.to``) or
    allocate without writing (``empty``): they launch no kernel."""
    schema = getattr(func, "_schema", None)  # a higher-order op has none, and writes into no input
    if schema is not None and schema.is_mutable:  # in-place and out= ops write into an input
        return True
    if not outputs:
        return False
    if _packet(func) in _NO_KERNEL:
        return False
    in_ptrs = {p for p in map(_storage_ptr, inputs) if p is not None}
    return not all(_storage_ptr(t) in in_ptrs for t in outputs)


# Ops that return fresh tensors without running a kernel. (Views, a `.to` to the same dtype
# and `_unsafe_view` are caught by their result sharing an input's storage.)
_NO_KERNEL = {aten.empty, aten.empty_like, aten.empty_strided, aten.new_empty, aten.new_empty_strided}
