"""The note on what a no_grad loop's peak would add: autocast's cached weight copies.

Under no_grad autocast keeps a copy of each weight it casts until its context exits; under
inference_mode (visprof's default) it keeps none. An H100 run of bench/latency_check.py read a
plain no_grad loop's peak of ViT-B/16 (batch 64, bf16) 168.7 MiB above visprof's inference_mode
peak (bench/results/h100-latency-2026-12-05/before-no-grad-loops.txt). The profile here is a real
one of that model on an H100 (tests/data/h100-result-vit_base_patch16_224.json).
"""
import dataclasses
from pathlib import Path

import pytest
import torch

from visprof import profiler
from visprof.analysis.roofline import weight_cast_copy_bytes
from visprof.result import ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"
MIB = 1 << 20
OBSERVED_GAP_MIB = 168.7  # the H100 run above: a no_grad loop's peak over visprof's


@pytest.fixture(scope="module")
def vit():
    return ProfileResult.load(DATA / "h100-result-vit_base_patch16_224.json")


def test_the_copies_are_the_linear_weights_at_bf16_as_timm_counts_them(vit):
    import timm

    model = timm.create_model("vit_base_patch16_224")
    cast = sum(p.numel() for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))
               for p in m.parameters(recurse=False))
    copies = weight_cast_copy_bytes(vit.roofline.groups, itemsize=2)
    assert copies == pytest.approx(2 * cast, rel=0.01)  # every Linear and the patch conv, weights and biases
    assert copies / MIB == pytest.approx(OBSERVED_GAP_MIB, rel=0.05)  # and what the plain loop held more


def test_activation_casts_are_not_counted(vit):
    groups = [dataclasses.replace(g, param_bytes=0.0) for g in vit.roofline.groups]
    assert weight_cast_copy_bytes(groups, itemsize=2) == 0.0


def test_the_note_says_how_much_higher_a_no_grad_peak_can_be(vit):
    (note,) = profiler._cast_copies_note(vit)
    assert "up to 164.8 MiB higher" in note and "grad_mode='no_grad' measures it" in note
    assert f"{164.75 * MIB / vit.memory.peak_bytes:.0%} of this one" in note


@pytest.mark.parametrize("change", [{"grad_mode": "no_grad"}, {"autocast": "model-cast"}, {"precision": "fp32"}])
def test_no_note_where_the_peak_already_holds_them_or_there_are_none(vit, change):
    assert profiler._cast_copies_note(dataclasses.replace(vit, config=dataclasses.replace(vit.config, **change))) == []


def test_no_note_without_a_memory_pass(vit):
    assert profiler._cast_copies_note(dataclasses.replace(vit, memory=None)) == []
