"""Higher-order ops in a capture (visprof.capture.higher_order): eager flex_attention is one attention op."""
from __future__ import annotations

import pytest
import torch

import visprof
from visprof.capture.higher_order import FLEX_ATTENTION, FLEX_ATTENTION_BACKWARD
from visprof.capture.op_costs import op_flops
from visprof.capture.replay import ReplayCapture
from small_modules import FlexMixer

pytestmark = [
    pytest.mark.skipif(FLEX_ATTENTION is None, reason="this torch has no flex_attention"),
    pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path; the GPU path is tests/gpu"),
    # eager flex_attention says it runs unfused, once per process: the tests mean to run it eagerly
    pytest.mark.filterwarnings("ignore:.*flex_attention called without torch.compile"),
]


def _classified(session) -> dict[str, tuple[str, str | None]]:
    return {op.name: (c.category, c.subcategory) for op, c in
            ((op, session.attribution.op_classification(i)) for i, op in enumerate(session.trace.ops))}


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
def test_eager_flex_attention_in_a_trace_is_one_attention_op_with_its_flops(grad_mode):
    """flex_attention is a higher-order op, which a dispatch mode handles only where a rule is registered
    for its class: inside visprof.trace() it raised NotImplementedError ("There was no rule registered for
    HigherOrderOperator flex_attention and mode <...OpCapture ...>")."""
    from torch.nn.attention.flex_attention import flex_attention

    batch, heads, queries, keys, width = 2, 3, 16, 24, 8
    q = torch.randn(batch, heads, queries, width)
    k, v = torch.randn(batch, heads, keys, width), torch.randn(batch, heads, keys, width)
    with grad_mode():
        expected = flex_attention(q, k, v)
    with grad_mode(), visprof.trace() as session:
        got = flex_attention(q, k, v)
    assert torch.equal(got, expected)
    (flex,) = [op for op in session.trace.ops if "flex" in op.name]  # its inner aten ops are its own work
    assert flex.name == "flex_attention"
    assert flex.flops == 2 * batch * heads * queries * keys * (width + width)  # q k^T and softmax @ v
    assert flex.bytes >= (2 * batch * heads * queries * width + 2 * batch * heads * keys * width) * 4  # q, k, v, out
    assert _classified(session)["flex_attention"] == ("attention", "core")


def test_flex_attentions_projections_are_attention_by_the_dataflow():
    """In a module no attention rule names, the linears that make q, k, v and read the output are found
    from flex_attention's operands, as they are from an SDPA's."""
    model = FlexMixer().eval()
    images = torch.randn(2, 3, 4, 4)
    with torch.inference_mode(), visprof.trace(model) as session:
        model(images)
    classified = _classified(session)
    assert classified["flex_attention"] == ("attention", "core")
    assert classified["aten.linear.default"] == ("attention", "projections")  # qkv and out: one name, both
    rows = {(row.category, row.subcategory): row for row in session.category_rows()}
    assert ("linear", None) not in rows and ("other", None) not in rows


def test_flex_attentions_backward_counts_as_an_sdpa_backward():
    """flex_attention_backward (q, k, v, out, logsumexp, grad_out, ...) runs on a GPU only; its FLOPs are
    five GEMMs of the forward's size, as torch counts an SDPA backward (and flex's, where it has a formula)."""
    batch, heads, queries, keys, width = 2, 3, 5, 7, 8
    q = torch.randn(batch, heads, queries, width)
    k, v = torch.randn(batch, heads, keys, width), torch.randn(batch, heads, keys, width)
    out, logsumexp = torch.randn(batch, heads, queries, width), torch.randn(batch, heads, queries)
    gemm = 2 * batch * heads * queries * keys * width
    assert op_flops(FLEX_ATTENTION, (q, k, v, None, (), 1.0, {}), {}, None) == 2 * gemm
    backward_args = (q, k, v, out, logsumexp, torch.randn_like(out), None, None, None, (), 1.0, {})
    assert op_flops(FLEX_ATTENTION_BACKWARD, backward_args, {}, None) == 5 * gemm


def test_a_profile_runs_flex_attention_op_by_op():
    """The ATen observer sees a higher-order op only as the calls inside it, so a template that holds one
    is not replayed (and no forward is recorded to find that out): the dispatch mode captures the timed
    iterations, and says why."""
    model = FlexMixer().eval()
    result = visprof.profile(model, batch_size=2, img_size=8, iterations=2, warmup=0, attributed_iterations=2,
                             progress=False, search_batch=False)
    rows = {(row.category, row.subcategory): row for row in result.categories}
    tokens, head_width = 8 * 8, FlexMixer.width // FlexMixer.heads
    assert rows[("attention", "core")].flops == 2 * 2 * FlexMixer.heads * tokens * tokens * (head_width + head_width)
    assert rows[("attention", "projections")].flops > 0 and not result.failed_checks

    class Unrecorded:
        def record_start(self):
            raise AssertionError("a forward was recorded")

    class Planned:
        def template_ops(self):
            return [(torch.ops.aten.linear.default, 0, None, None), (FLEX_ATTENTION, 0, None, None)]

    replay, why = ReplayCapture.prepare(Unrecorded(), Planned(), forward=None, iterations=1)
    assert replay is None and why.startswith("flex_attention is a higher-order op")
