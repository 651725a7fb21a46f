"""The roofline on a real GPU: op bytes recorded, the spec row matched, time split by bound.

Run on the lent H200: python -m pytest tests/gpu/test_roofline_gpu.py -v -s
"""
import pytest

import visprof
from visprof.report.roofline_text import roofline_section

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def profiles():
    return {name: visprof.profile(name, batch_size=64, passes="timing,attributed", progress=False)
            for name in ("vit_base_patch16_224", "resnet50")}


def test_running_gpu_has_a_spec_row_and_nvml_agrees(profiles):
    result = profiles["vit_base_patch16_224"]
    print(result.gpu["name"], result.roofline.gpu, result.roofline.ceilings)
    assert result.roofline.gpu is not None, result.warnings
    assert not [w for w in result.warnings if "spec row" in w or "spec table" in w], result.warnings


def test_every_category_has_bytes_and_shares_add_up(profiles):
    for name, result in profiles.items():
        print(f"\n{name}")
        print("\n".join(roofline_section(result)))
        roof = result.roofline
        assert roof.basis == "latency"
        assert sum(roof.shares.values()) == pytest.approx(1.0)
        assert roof.shares.get("unknown", 0) < 0.02  # every op with time now carries bytes
        for row in result.category_totals().values():
            if row.time_ms > 0.05:
                assert row.bytes > 0, (name, row.category)
        linear = [g for g in roof.groups if g.category in ("linear", "attention") and g.flops > 0]
        assert all(g.tensor_core == "bf16" for g in linear)
        assert all(0 < g.param_bytes < g.bytes for g in roof.groups if g.op == "aten.linear.default")


def test_vit_is_more_tensor_core_bound_than_resnet50(profiles):
    vit = profiles["vit_base_patch16_224"].roofline.shares
    resnet = profiles["resnet50"].roofline.shares
    print("ViT-B/16", vit, "\nResNet-50", resnet)
    assert vit["tensor"] > resnet["tensor"]
    assert resnet["memory"] > vit["memory"]


def test_groups_collapse_repeated_blocks(profiles):
    roof = profiles["vit_base_patch16_224"].roofline
    qkv = [g for g in roof.groups if g.subcategory == "projections" and g.count == 12]
    print([(g.op, g.count, g.flops, g.bytes, g.efficiency) for g in roof.groups[:10]])
    assert qkv, "the 12 blocks' qkv projections should be one group"
    assert len(roof.groups) < 40


@pytest.mark.parametrize("model", ["resnet50", "vit_base_patch16_224"])
def test_prediction_to_a_larger_batch_on_the_same_gpu(profiles, model):
    """Batch extrapolation against a measurement: the batch-64 profile predicts batch 256 on
    the same H200 (efficiencies kept, FLOPs and activation bytes x4)."""
    from visprof.analysis.predict import predict_result

    measured = visprof.profile(model, batch_size=256, passes="timing,attributed", progress=False)
    predicted = predict_result(profiles[model], measured.roofline.gpu, batch_size=256)
    error = predicted.latency_ms / measured.timing.latency_ms.median - 1
    print(f"{model}: batch 64 -> 256 predicted {predicted.latency_ms:.3f} ms, measured "
          f"{measured.timing.latency_ms.median:.3f} ms ({error:+.1%})")
    same = predict_result(profiles[model], measured.roofline.gpu)
    print(f"{model}: batch 64 on itself predicted {same.latency_ms:.3f} ms, measured "
          f"{profiles[model].timing.latency_ms.median:.3f} ms")
    assert same.latency_ms == pytest.approx(profiles[model].timing.latency_ms.median, rel=0.05)
    assert abs(error) < 0.4


@pytest.mark.parametrize("model", ["nest_tiny", "maxvit_tiny_tf_224"])
def test_attention_of_any_rank_and_einsums_carry_the_flops_torch_counts(model):
    """NesT attends over 5-d tensors and MaxViT adds einsum position terms: both counted 0 FLOPs
    before f2014fd / 885d339. The profile's FLOPs, summed over its groups, are checked against
    torch's own FlopCounterMode on the same model and input, which sees the matmuls that the math
    attention backend and einsum decompose into."""
    import timm
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    result = visprof.profile(model, batch_size=8, passes="timing,attributed", progress=False)
    groups = result.roofline.groups
    ops = {g.op for g in groups}
    wanted = "aten.scaled_dot_product_attention.default" if model == "nest_tiny" else "aten.einsum.default"
    assert wanted in ops, sorted(ops)
    assert all(g.flops > 0 for g in groups if g.op == wanted)
    ours = sum(g.flops * g.count for g in groups)

    net = timm.create_model(model).cuda().eval()
    x = torch.randn(*result.model.input_shape, device="cuda")  # the profile's own batch and size
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16), FlopCounterMode(display=False) as counter:
        net(x)
    theirs = counter.get_total_flops()
    print(f"{model}: visprof {ours / 1e9:.2f} GFLOP, FlopCounterMode {theirs / 1e9:.2f} GFLOP")
    assert ours == pytest.approx(theirs, rel=0.01)
