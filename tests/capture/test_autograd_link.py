"""A traced training step's backward ops take their forward op's module and role
(visprof/capture/autograd_link.py): an attention's backward is attention, not linear."""
import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import visprof
from visprof.capture.autograd_link import node_stem, op_stem

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path; the GPU path is tests/gpu")


class HandWrittenAttention(torch.nn.Module):
    """q·kᵀ, softmax and attn·v written as ops, as many timm models do: only the dataflow says
    it is attention (the class name says nothing)."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.norm = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        weights = (q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5).softmax(-1)
        return x + self.out((weights @ v).transpose(1, 2).reshape(b, n, c))


def _ops(session):
    """(op name, category, subcategory) per traced op, in order."""
    attribution = session.attribution
    return [(op.name, attribution.op_classification(i).category, attribution.op_classification(i).subcategory)
            for i, op in enumerate(session.trace.ops)]


def _backward_half(ops, first_backward_op="aten.ones_like.default"):
    """The ops from the loss's gradient on."""
    start = next(i for i, op in enumerate(ops) if op[0] == first_backward_op)
    return ops[start + 1:]


def test_an_attentions_backward_is_attention():
    """Before the link, the GEMMs of q·kᵀ, attn·v and the projections in backward were `linear`
    and the softmax's backward `activation`: 8 linear ops and 1 activation op in this step."""
    model = HandWrittenAttention()
    with visprof.trace(model) as session:
        model(torch.randn(2, 8, 32)).sum().backward()
    backward = _backward_half(_ops(session))
    by_name = {}
    for name, category, sub in backward:
        by_name.setdefault(name, set()).add((category, sub))
    assert by_name["aten._softmax_backward_data.default"] == {("attention", "core")}
    # bmm: q·kᵀ and attn·v (attention core); mm: the qkv and output projections' GEMMs
    assert by_name["aten.bmm.default"] == {("attention", "core")}
    assert by_name["aten.mm.default"] == {("attention", "projections")}
    assert by_name["aten.native_layer_norm_backward.default"] == {("normalization", "layer")}
    assert not any(category in ("linear", "activation") for _, category, _ in backward)


def test_backward_ops_run_in_their_forward_ops_module():
    model = HandWrittenAttention()
    with visprof.trace(model) as session:
        model(torch.randn(2, 8, 32)).sum().backward()
    paths = {op.name: session.trace.modules[op.module].path for op in session.trace.ops
             if op.module >= 0 and op.name.endswith("_backward.default")}
    assert paths == {"aten.native_layer_norm_backward.default": "norm"}


def test_a_residual_streams_gradient_sum_stays_elementwise():
    """The engine sums x's two gradients (the residual and the attention branch) while it runs the
    LayerNorm's backward: that add is gradient accumulation, not the norm's work."""
    model = HandWrittenAttention()
    x = torch.randn(2, 8, 32, requires_grad=True)
    with visprof.trace(model) as session:
        model(x).sum().backward()
    backward = _backward_half(_ops(session))
    after_norm = backward[[name for name, *_ in backward].index("aten.native_layer_norm_backward.default") + 1:]
    assert ("aten.add.Tensor", "elementwise", None) in after_norm


def test_a_checkpointed_blocks_recomputation_is_forward_work_in_its_modules():
    """A checkpoint reruns the block's forward during backward; those ops are not the backward of
    whichever node needed them: the recomputed convolution is a convolution."""
    block = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.GroupNorm(2, 4), torch.nn.GELU())
    x = torch.randn(2, 4, 8, 8, requires_grad=True)
    with visprof.trace(block) as session:
        checkpoint(block, x, use_reentrant=False).sum().backward()
    ops = _ops(session)
    assert [c for n, c, _ in ops if n == "aten.convolution.default"] == ["convolution", "convolution"]
    assert [c for n, c, _ in ops if n == "aten.native_group_norm.default"] == ["normalization"] * 2
    assert {c for n, c, _ in ops if n == "aten.convolution_backward.default"} == {"convolution"}


def test_a_checkpointed_attentions_recomputation_keeps_each_ops_category():
    """Taken for backward ops of the node that needed them, the recomputed ops would all take
    that node's forward op's role (the output projection's): the norm too."""
    model = HandWrittenAttention()
    with visprof.trace(model) as session:
        checkpoint(model, torch.randn(2, 8, 32, requires_grad=True), use_reentrant=False).sum().backward()
    ops = _ops(session)
    assert [(c, s) for n, c, s in ops if n == "aten.native_layer_norm.default"] == [("normalization", "layer")] * 2
    assert {(c, s) for n, c, s in ops if n == "aten._softmax.default"} == {("attention", "core")}
    assert len([n for n, *_ in ops if n == "aten._softmax.default"]) == 2


class _SwishFunction(torch.autograd.Function):
    """timm's memory-efficient Swish in small: x * sigmoid(x), backward written by hand. Its node
    is made before its forward's first op (sigmoid)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.mul(torch.sigmoid(x))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * (s * (1 + x * (1 - s)))


class SwishMe(torch.nn.Module):
    def forward(self, x):
        return _SwishFunction.apply(x)


def test_a_custom_functions_backward_runs_in_its_module():
    """Its backward's mul/rsub/add were `elementwise` outside any module; inside the activation
    module they are the activation's backward, as its forward is."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), SwishMe())
    with visprof.trace(model) as session:
        model(torch.randn(4, 8)).sum().backward()
    ops = _ops(session)
    backward = _backward_half(ops)
    forward = ops[:len(ops) - len(backward)]
    assert {c for n, c, _ in forward if n in ("aten.sigmoid.default", "aten.mul.Tensor")} == {"activation"}
    assert {c for n, c, _ in backward if n in ("aten.sigmoid.default", "aten.mul.Tensor")} == {"activation"}


def test_a_custom_functions_backward_does_not_take_its_first_ops_role():
    """The link gives a custom Function's backward ops its module, never the role of the op its
    node's number points at: that op is the Function's first, not the Function."""
    from visprof.capture.autograd_link import AutogradLink

    link = AutogradLink()
    x = torch.randn(4, 8, requires_grad=True)
    names, captured = [], []

    class Recorder(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            in_forward = torch._C._current_autograd_node() is None
            captured.append(link.op(len(names), func, 7 if in_forward else -1))  # module 7: SwishMe, say
            names.append(str(func))
            return func(*args, **(kwargs or {}))

    with Recorder():
        SwishMe()(x).sum().backward()
    sigmoid = names.index("aten.sigmoid.default")
    backward_muls = [i for i, name in enumerate(names) if name == "aten.mul.Tensor" and captured[i][1]]
    assert backward_muls and all(captured[i] == (7, True) for i in backward_muls)  # linked: the module
    assert sigmoid not in link.backward_of.values()  # not the role
    assert link.backward_of  # the sum's backward is linked, role and all


def test_sdpa_and_a_linear_layers_backward_keep_their_categories():
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    q = torch.randn(1, 2, 4, 8, requires_grad=True)
    with visprof.trace(model) as session:
        (model(torch.randn(4, 16)).sum() + F.scaled_dot_product_attention(q, q, q).sum()).backward()
    categories = {(c, s) for n, c, s in _ops(session) if "attention" in n and n.endswith("backward.default")}
    assert categories == {("attention", "core")}
    backward = _backward_half(_ops(session))
    assert {c for n, c, _ in backward if n == "aten.mm.default"} == {"linear"}
    assert {c for n, c, _ in backward if n == "aten.threshold_backward.default"} == {"activation"}


@pytest.mark.parametrize("node, op", [
    ("BmmBackward0", "aten.bmm.default"),
    ("MaxPool2DWithIndicesBackward0", "aten.max_pool2d_with_indices.default"),
    ("NativeLayerNormBackward0", "aten.native_layer_norm.default"),
    ("UnsafeViewBackward0", "aten._unsafe_view.default"),
    ("MeanBackward1", "aten.mean.dim"),
    ("ScaledDotProductFlashAttentionForCpuBackward0", "aten._scaled_dot_product_flash_attention_for_cpu.default"),
])
def test_a_node_and_the_op_that_makes_it_share_a_stem(node, op):
    assert node_stem(node) == op_stem(op)


def test_a_custom_functions_node_is_not_its_first_ops():
    assert node_stem("_ExpThenMatmulBackward") != op_stem("aten.exp.default")


def test_a_reentrant_checkpoints_backward_is_linked_as_a_plain_steps():
    """A reentrant checkpoint recomputes under grad in its own backward and differentiates that:
    those nodes had been left unnumbered, and its attention backward was `linear` again."""
    model = HandWrittenAttention()
    with visprof.trace(model) as session:
        checkpoint(model, torch.randn(2, 8, 32, requires_grad=True), use_reentrant=True).sum().backward()
    ops = _ops(session)
    backward = [op for op, record in zip(ops, session.trace.ops) if record.attrs.get("backward")]
    assert {(c, s) for n, c, s in backward if n == "aten.bmm.default"} == {("attention", "core")}
    assert {(c, s) for n, c, s in backward if n == "aten.mm.default"} == {("attention", "projections")}


def test_a_block_around_the_backward_alone_says_its_ops_are_classified_by_name():
    """With the forward before the block, the attention's backward read as linear and activation without
    a word; a whole step inside the block says nothing."""
    import warnings

    from visprof.base.errors import VisprofWarning

    model, x = HandWrittenAttention(), torch.randn(2, 8, 32)

    def said(step) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            step()
        return [str(w.message) for w in caught if issubclass(w.category, VisprofWarning)]

    def whole_step():
        with visprof.trace(model):
            model(x).sum().backward()

    out = model(x)

    def backward_alone():
        with visprof.trace(model):
            out.sum().backward()

    assert said(whole_step) == []
    (message,) = said(backward_alone)
    assert "backward op(s) differentiate forward ops that ran before the block" in message
    assert "put the forward inside the block" in message
