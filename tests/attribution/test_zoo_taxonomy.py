"""The taxonomy holds on timm models it was not written against: on the CPU, capture one
forward of each and check that every op finds a category other than "other"."""
import pytest
import torch

from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.attribution.categories import default_table
from visprof.passes.models import resolve_model

# Small members of families the reference list does not cover: MLP-mixers, pool-formers,
# cross-covariance and co-scale attention, pyramid/twin/cross/multiscale ViTs, EVA/BEiT,
# Swin V2, efficient hybrids, re-parameterized CNNs, GhostNet, DLA, halo/bottleneck/lambda
# attention, LSTM-based Sequencer.
ZOO = [
    "mixer_s16_224", "poolformer_s12", "levit_128s", "xcit_nano_12_p16_224", "mobilevitv2_050", "efficientformer_l1",
    "resmlp_12_224", "gcvit_xxtiny", "edgenext_xx_small", "tiny_vit_5m_224", "fastvit_t8", "repvit_m1", "hgnetv2_b0",
    "convnextv2_atto", "efficientvit_b0", "coat_lite_tiny", "pvt_v2_b0", "twins_svt_small", "crossvit_tiny_240",
    "sequencer2d_s", "mvitv2_tiny", "swinv2_cr_tiny_ns_224", "eva02_tiny_patch14_224", "ghostnet_100", "rexnet_100",
    "dla34", "halonet26t", "botnet26t_256", "lambda_resnet26t",
]
ATTENTION_FAMILIES = {"levit_128s", "xcit_nano_12_p16_224", "mobilevitv2_050", "efficientformer_l1", "gcvit_xxtiny",
                      "tiny_vit_5m_224", "coat_lite_tiny", "pvt_v2_b0", "twins_svt_small", "crossvit_tiny_240",
                      "mvitv2_tiny", "swinv2_cr_tiny_ns_224", "eva02_tiny_patch14_224", "halonet26t", "botnet26t_256",
                      "edgenext_xx_small"}


@pytest.mark.parametrize("name", ZOO)
def test_every_op_of_an_unseen_model_has_a_category(name):
    spec = resolve_model(name)
    table = default_table()
    tracker = ModuleTracker(spec.module)
    capture = OpCapture(tracker, table, nvtx=False)
    with tracker, capture, torch.inference_mode():
        spec.module(spec.make_input(1, "cpu"))
    found = {}
    for op in capture.to_records():
        category = table.classify_op(op.name, tracker.classes(op.module), op.attrs).category
        found.setdefault(category, set()).add(op.name)
    assert "other" not in found, found["other"]
    if name in ATTENTION_FAMILIES:
        assert "attention" in found
