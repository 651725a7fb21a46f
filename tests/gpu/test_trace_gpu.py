"""visprof.trace() of training steps on a GPU, where autograd runs backward on its own device
thread: backward ops linked to their forward ops there (visprof/capture/autograd_link.py),
checkpoints, compiled code inside a block, forked DataLoader workers. The CPU side is
tests/capture/test_autograd_link.py and tests/capture/test_trace_edges.py."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import visprof

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
from test_autograd_link import HandWrittenAttention  # noqa: E402
from test_trace_edges import _ReportsItsProcess  # noqa: E402

pytestmark = pytest.mark.gpu


def _backward_categories(session) -> Counter:
    """(op name, category, subcategory) of the backward ops, counted."""
    a = session.attribution
    return Counter((op.name, a.op_classification(i).category, a.op_classification(i).subcategory)
                   for i, op in enumerate(session.trace.ops) if op.attrs.get("backward"))


@pytest.mark.parametrize("how", ["plain", "checkpoint", "reentrant checkpoint"])
def test_an_attentions_backward_is_attention_on_the_gpu(how):
    model = HandWrittenAttention(dim=64).cuda()
    x = torch.randn(4, 32, 64, device="cuda", requires_grad=True)
    with visprof.trace(model) as session:
        y = model(x) if how == "plain" else checkpoint(model, x, use_reentrant=how.startswith("reentrant"))
        y.sum().backward()
    backward = _backward_categories(session)
    print(how, sorted(backward.items()))
    categories = {(name, c, s) for name, c, s in backward}
    assert {(c, s) for name, c, s in categories if name == "aten.bmm.default"} == {("attention", "core")}
    assert {(c, s) for name, c, s in categories if name == "aten.mm.default"} == {("attention", "projections")}
    assert {(c, s) for name, c, s in categories if name == "aten._softmax_backward_data.default"} == \
        {("attention", "core")}
    rows = {(r.category, r.subcategory): r for r in session.category_rows()}
    assert ("linear", None) not in rows  # every GEMM here is the attention's
    assert session.summary().coverage == pytest.approx(1.0)


def test_a_timm_vits_training_step_files_its_attention_backward_as_attention():
    import timm
    from timm.layers import set_fused_attn

    set_fused_attn(False)  # the hand-written q.k^T / softmax / attn.v path
    try:
        model = timm.create_model("vit_tiny_patch16_224", num_classes=10).cuda()
    finally:
        set_fused_attn(True)
    x = torch.randn(8, 3, 224, 224, device="cuda")
    optimizer = torch.optim.AdamW(model.parameters())
    with visprof.trace(model) as session:
        torch.nn.functional.cross_entropy(model(x), torch.zeros(8, dtype=torch.long, device="cuda")).backward()
        optimizer.step()
    backward = _backward_categories(session)
    bmm = Counter((c, s) for (name, c, s), n in backward.items() for _ in range(n) if name == "aten.bmm.default")
    mm = Counter((c, s) for (name, c, s), n in backward.items() for _ in range(n) if name == "aten.mm.default")
    print("bmm", dict(bmm), "mm", dict(mm))
    assert set(bmm) == {("attention", "core")} and sum(bmm.values()) == 12 * 4  # 2 GEMMs x 2 gradients x 12 blocks
    # mm: qkv and proj (attention/projections) and the MLP's fc1/fc2 and the head (linear)
    assert mm[("attention", "projections")] == mm[("linear", None)] - 2 * 1 == 12 * 2 * 2
    other = [r for r in session.category_rows() if r.category == "other"]
    assert not other, [(r.category, r.gpu_ms) for r in other]


def test_compiled_code_in_a_trace_runs_its_inductor_kernels():
    if not hasattr(torch.utils._python_dispatch.TorchDispatchMode, "ignore_compile_internals"):
        pytest.skip("this torch runs compiled code eagerly under any dispatch mode")
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.Linear(256, 256)).cuda()
    compiled = torch.compile(model)
    x = torch.randn(64, 256, device="cuda")
    with torch.no_grad():
        compiled(x)
        with visprof.trace(model) as session:
            compiled(x)
    trace = session.trace
    names = [op.name for op in trace.ops]
    kernels = [trace.kernel_name(row) for row in range(len(trace.kernels))]
    print("ops", names, "kernels", kernels)
    assert "aten.gelu.default" not in names
    assert any(name.startswith("triton_") for name in kernels)  # Inductor's own kernel ran
    categories = {r.category for r in session.category_rows()}
    assert "linear" in categories and "other" not in categories  # the GEMMs; the fused kernel by its name


def test_forked_workers_of_a_gpu_trace_record_nothing():
    model = torch.nn.Linear(4, 4).cuda()
    loader = torch.utils.data.DataLoader(_ReportsItsProcess(), batch_size=None, num_workers=1,
                                         multiprocessing_context="fork")
    with visprof.trace(model) as session:
        items = list(loader)
        model(torch.randn(2, 4, device="cuda"))
    assert items == [{"modes": 0, "hooks": 0}] * 2
    assert session.trace.measurement == "gpu" and len(session.trace.kernels)
