"""visprof calibrate says when its profiles come from more than one GPU: each model reads one of its
profiles, so such a fleet mixes time shares measured on different GPUs."""
from __future__ import annotations

from pathlib import Path

from recorded_results import recorded_result
from visprof.analysis import sources
from visprof.analysis.calibration_fleet import profiling_gpus_note
from visprof.analysis.gpus import gpu_table
from visprof.result import ProfileResult

DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_fleet_of_profiles_from_two_gpus_is_said_and_one_gpu_is_not():
    table = gpu_table()
    h100 = sources.from_result(ProfileResult.load(DATA / "h100-result-vit_base_patch16_224.json"), "h100.json", table)
    h200 = [sources.from_result(recorded_result(m), "h200.json", table) for m in ("resnet50", "deit_small_patch16_224")]
    assert profiling_gpus_note(h200) is None and profiling_gpus_note([h100]) is None
    note = profiling_gpus_note([*h200, h100])
    assert note.startswith("the profiles come from 2 GPUs (NVIDIA H200: 2, NVIDIA H100 80GB HBM3: 1); ")
    assert "give one GPU's profiles" in note and "\n" not in note
