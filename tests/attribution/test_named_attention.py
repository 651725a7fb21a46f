"""An attention module by class name that computes no attention is read by its ops
(visprof/attribution/named_attention.py): NextViT's ConvAttention is a grouped conv, a batch
norm, a ReLU and a 1x1 conv, and its 1x1 conv had been an attention projection by its name."""
from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import visprof
from visprof.attribution.categories import CategoryTable, default_table
from visprof.attribution.named_attention import NO_AFFINITY_MARK, attention_by_name_only
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.native.records import ModuleRecord
from small_modules import ConvAttention, Hybrid

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path; the GPU path is tests/gpu")


def _keys_by_module(session) -> dict[str, set[str]]:
    attr = session.attribution
    found: dict[str, set[str]] = {}
    for i, op in enumerate(session.trace.ops):
        if op.module >= 0:
            found.setdefault(session.trace.modules[op.module].path, set()).add(attr.op_classification(i).key)
    return found


def test_a_conv_block_named_attention_is_read_by_its_ops_and_real_attention_by_its_name():
    model = Hybrid().eval()
    with torch.inference_mode(), visprof.trace(model) as session:
        model(torch.randn(1, 3, 8, 8))
    found = _keys_by_module(session)
    assert found["mhca.projection"] == {"convolution/pointwise"}  # had been attention/projections
    assert found["mhca.group_conv3x3"] == {"convolution/dense"}
    assert found["mhca.norm"] == {"normalization/batch"}
    assert found["mhca.act"] == {"activation"}
    assert found["attn.qkv"] == found["attn.proj"] == {"attention/projections"}
    assert found["attn"] <= {"attention/core"}
    assert found["additive.to_query"] == {"attention/projections"}  # a softmax: still attention by its name
    assert {"attention/core"} <= found["additive"]


def test_the_profile_passes_decide_as_the_attribution_does():
    """The captures built from a template (the attributed pass's timed forwards, the memory pass's
    allocation tags, NVTX ranges) take the names the template's forward showed."""
    model = Hybrid().eval()
    table = default_table()
    tracker = ModuleTracker(model)
    template = OpCapture(tracker, table, nvtx=False)
    with tracker, template, torch.inference_mode():
        model(torch.randn(1, 3, 8, 8))
    other_tracker = ModuleTracker(model)  # as the memory pass's
    capture = OpCapture(other_tracker, table, nvtx=False, tags=True, template=template)
    index = {m.path: i for i, m in enumerate(other_tracker.modules)}
    assert other_tracker.classes(index["mhca.projection"]) == ("Conv2d", f"ConvAttention{NO_AFFINITY_MARK}", "Hybrid")
    assert other_tracker.classes(index["attn.qkv"]) == ("Conv2d", "Attention2d", "Hybrid")
    tags = capture.tag_names()
    decided = {other_tracker.modules[module].path: tags[tag]
               for (_, module, _, _), (_, _, tag) in zip(capture.template_ops(), capture.template_decisions())}
    assert decided["mhca.projection"] == "convolution" and decided["attn.qkv"] == "attention"
    assert other_tracker.modules[index["mhca"]].cls == "ConvAttention"  # the record keeps the class


def test_a_profile_of_a_conv_block_named_attention_has_no_attention():
    class OnlyConvAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, padding=1)
            self.mhca = ConvAttention(16)

        def forward(self, x):
            return self.mhca(self.stem(x))

    result = visprof.profile(OnlyConvAttention().eval(), batch_size=1, img_size=16, warmup=1, iterations=2)
    shares = {row.category: row.time_ms for row in result.categories}
    assert shares.get("attention", 0.0) == 0.0
    assert shares["convolution"] > 0 and shares["normalization"] > 0


def test_only_instances_that_ran_no_affinity_op_are_renamed_and_a_table_without_the_patterns_renames_none():
    modules = [ModuleRecord("", "Net", -1), ModuleRecord("a", "WindowAttention", 0),
               ModuleRecord("a.qkv", "Linear", 1), ModuleRecord("b", "WindowAttention", 0),
               ModuleRecord("b.qkv", "Linear", 3), ModuleRecord("c", "CoordAttn", 0)]
    ops = [("aten.linear.default", 2), ("aten.bmm.default", 1), ("aten.linear.default", 4), ("aten.mul.Tensor", 5)]
    table = default_table()
    assert attention_by_name_only(modules, ops, table) == {3: f"WindowAttention{NO_AFFINITY_MARK}"}
    assert attention_by_name_only(modules, [("aten._softmax.default", 4), *ops], table) == {}
    assert attention_by_name_only(modules, [], table) == {}  # nothing ran: names stand
    bare = CategoryTable(default_table().categories.values(), [], {})
    assert attention_by_name_only(modules, ops, bare) == {}


def test_a_compiled_conv_block_named_attention_is_read_by_its_ops():
    from visprof.capture.compiled import compile_model

    model = Hybrid().eval()
    compiled_model, recorder = compile_model(model)
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        compiled_model(torch.randn(1, 3, 8, 8))
    assert recorder.supported, recorder.warnings
    categories = {(c.module, c.category) for c in recorder.program.calls if c.extern}
    assert ("mhca.projection", "convolution/pointwise") in categories
    assert ("attn.qkv", "attention/projections") in categories
    assert not [c for c in recorder.program.calls if c.module.startswith("mhca") and c.category.startswith("attention")]
