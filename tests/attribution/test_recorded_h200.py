"""What the H200 recordings under tests/data/ must show, by architecture.

These are structural facts about each model (a CNN has no attention; a ViT convolves only in
its patch embedding; hybrids have depthwise convolution and attention core and projections),
checked against real kernel traces, so a taxonomy change that breaks them fails on CPU.
"""
from pathlib import Path

import numpy as np
import pytest

from visprof.attribution.attribute import attribute
from visprof.native.records import CapturedTrace

DATA = Path(__file__).resolve().parents[1] / "data"


def load(name: str):
    trace = CapturedTrace.load(DATA / f"{name}.trace.json.gz")
    return trace, attribute(trace)


def time_by(trace, attr, key) -> dict:
    """Kernel time per iteration grouped by key(row classification, op, module path)."""
    out: dict = {}
    durations = (trace.kernels["end_ns"] - trace.kernels["start_ns"]).astype(np.float64)
    for row in range(len(trace.kernels)):
        op = int(attr.op_index[row])
        module = trace.modules[trace.ops[op].module].path if op >= 0 and trace.ops[op].module >= 0 else ""
        k = key(attr.classification(row), trace.ops[op] if op >= 0 else None, module)
        out[k] = out.get(k, 0.0) + durations[row] / trace.iterations
    return out


@pytest.mark.parametrize("name", ["resnet50", "deit_small_patch16_224", "coatnet_0_rw_224", "mobilevit_s"])
def test_every_kernel_is_linked_to_an_op(name):
    trace, attr = load(name)
    kernels = trace.kernels["kind"] == 0
    assert kernels.sum() > 100
    assert (trace.kernels["external_id"][kernels] != 0).all()
    assert (attr.op_index[kernels] >= 0).all()
    assert attr.summary().coverage == 1.0


def test_resnet50_has_no_attention_and_only_dense_and_pointwise_convolution():
    trace, attr = load("resnet50")
    subs = time_by(trace, attr, lambda c, op, module: (c.category, c.subcategory))
    assert not any(cat == "attention" for cat, _ in subs)
    conv = {sub for cat, sub in subs if cat == "convolution"}
    assert conv == {"dense", "pointwise"}  # no depthwise convolution in a ResNet


def test_deit_convolves_only_in_its_patch_embedding():
    trace, attr = load("deit_small_patch16_224")
    conv_modules = time_by(trace, attr, lambda c, op, module: module if c.category == "convolution" else None)
    conv_modules.pop(None)
    assert set(conv_modules) == {"patch_embed.proj"}
    kinds = time_by(trace, attr, lambda c, op, module: c.key)
    assert kinds["attention/core"] > 0 and kinds["attention/projections"] > 0
    # qkv and proj are projections; the MLP's fc1/fc2 are linear/MLP, not attention.
    by_module = time_by(trace, attr, lambda c, op, module: (module.rsplit(".", 1)[-1], c.category))
    assert by_module.get(("qkv", "attention"), 0) > 0 and by_module.get(("fc1", "linear"), 0) > 0
    assert ("fc1", "attention") not in by_module and ("qkv", "linear") not in by_module


@pytest.mark.parametrize("name", ["coatnet_0_rw_224", "mobilevit_s"])
def test_hybrids_have_depthwise_convolution_and_attention(name):
    trace, attr = load(name)
    keys = time_by(trace, attr, lambda c, op, module: c.key)
    assert keys.get("convolution/depthwise", 0) > 0
    assert keys.get("attention/core", 0) > 0
    assert keys.get("attention/projections", 0) > 0


def test_recordings_carry_their_provenance():
    for path in DATA.glob("*.trace.json.gz"):
        trace = CapturedTrace.load(path)
        assert trace.measurement == "gpu"
        assert trace.meta["gpu"] == "NVIDIA H200"
        assert trace.meta["precision"] == "bf16" and trace.meta["batch_size"] == 64
        assert trace.meta["dropped"] == 0


def test_a_recording_shows_as_one_line_of_counts():
    trace, _ = load("resnet50")
    text = repr(trace)
    assert text == (f"<CapturedTrace gpu: {len(trace.kernels):,} kernels, {len(trace.ops):,} ops, "
                    f"{len(trace.modules):,} modules, {trace.iterations} iteration(s)>")
    assert len(trace.kernels) > 100 and "\n" not in text
