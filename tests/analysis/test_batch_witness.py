"""The published batches as a witness of two runs that took different paths (visprof.analysis.batch_witness)."""
from __future__ import annotations

import pytest

from visprof.analysis.batch_witness import WITNESS_FACTOR, decay_batch_step, decays_from, footprint_factor, path_change, per_sample_bounds, step_up
from visprof.analysis.compare import compare
from visprof.analysis.sources import Measurement


def m(model, gpu, samples, batch, img=224, kind="reference") -> Measurement:
    return Measurement(model=model, img_size=img, gpu_name=gpu, gpu_id=gpu, batch_size=batch, precision="fp16",
                       samples_per_s=samples, source="test", kind=kind)


def test_the_decay_step_is_timms_for_every_batch():
    """Written out so that compare need not import timm (and torch) for it; it must stay timm's."""
    from timm.utils import decay_batch_step as timms

    assert [decay_batch_step(b) for b in range(4097)] == [timms(b) for b in range(4097)]


def test_the_step_up_follows_timms_decay_sequence():
    assert [step_up(b, 1024) for b in (768, 512, 384, 256, 192, 128)] == [1024, 768, 512, 384, 256, 192]
    assert step_up(1024, 1024) is None  # the first batch: nothing failed before it
    assert step_up(100, 1024) is None  # never tried from 1024
    assert step_up(192, 256) == 256  # a table that started at 256


def test_a_batch_bounds_the_memory_per_sample_from_both_sides():
    assert per_sample_bounds(1024, 1024, 24) == (None, pytest.approx(24 / 1024))
    lo, hi = per_sample_bounds(512, 1024, 24)
    assert (lo, hi) == (pytest.approx(24 / 768), pytest.approx(24 / 512))  # failed at 768, ran at 512


def test_the_factor_is_the_larger_way_round_and_the_bar_decides():
    assert footprint_factor(768, 512, 1024, 1024, 24, 24) == ("target", pytest.approx(1.0))
    assert footprint_factor(384, 768, 1024, 1024, 24, 32) == ("base", pytest.approx((24 / 512) / (32 / 768)))  # x1.125
    assert path_change(384, 768, 1024, 1024, 24, 32) is None  # under the bar: the weights left out of C can do it
    assert footprint_factor(1024, 1024, 1024, 1024, 24, 32) is None


def test_one_footprint_on_gpus_of_equal_memory_is_no_witness():
    # failed at the batch the other ran (x1.0): fragmentation can do that, and the factor stays below the bar
    assert path_change(768, 512, 1024, 1024, 24, 24) is None
    assert path_change(1024, 1024, 1024, 1024, 24, 32) is None  # both at the first batch: nothing bounded below
    assert path_change(512, 768, 1024, 1024, 24, 32) is None  # the larger GPU fits more: one footprint explains it


def test_a_larger_gpu_that_fits_less_witnesses_a_hungrier_run():
    change = path_change(768, 384, 1024, 1024, 24, 32)  # the 5090 failed at 512 where the 4090 ran 768
    assert change.hungrier == "target"
    assert change.factor == pytest.approx((32 / 512) / (24 / 768))  # x2.0
    assert change.factor > WITNESS_FACTOR
    back = path_change(384, 768, 1024, 1024, 32, 24)  # the same runs, the other way round
    assert back.hungrier == "base" and back.factor == pytest.approx(change.factor)
    equal = path_change(1024, 512, 1024, 1024, 24, 24)  # two steps apart on equal memory: x4/3
    assert equal.hungrier == "target" and equal.factor == pytest.approx(4 / 3)


def test_missing_batches_or_memory_say_nothing():
    assert path_change(None, 512, 1024, 1024, 24, 32) is None
    assert path_change(768, 384, 1024, 1024, None, 32) is None


def test_compare_marks_the_witnessed_rows_and_says_so_once():
    ms = [m("efficientnet_b3_gn", "rtx4090", 1000, 768), m("efficientnet_b3_gn", "rtx5090", 700, 384),
          m("resnet50", "rtx4090", 3000, 1024), m("resnet50", "rtx5090", 4300, 1024),
          m("vit_base_patch16_224", "rtx4090", 1000, 768), m("vit_base_patch16_224", "rtx5090", 1400, 1024),
          m("convnext_tiny", "rtx4090", 2000, 1024), m("convnext_tiny", "rtx5090", 2900, 1024)]
    c = compare(ms, "rtx4090", "rtx5090")
    rows = {x.model: x.row() for x in c.models}
    assert rows["efficientnet_b3_gn"]["path_change_run"] == "target"
    assert rows["efficientnet_b3_gn"]["path_change_factor"] == pytest.approx(2.0)
    assert all(rows[k]["path_change_run"] is None for k in ("resnet50", "vit_base_patch16_224", "convnext_tiny"))
    assert rows["efficientnet_b3_gn"]["explanation"].endswith(
        "; its two runs took different paths: the RTX 5090 run held >= x2.00 the RTX 4090 run's memory per sample "
        "(batch 768 on the RTX 4090, 384 on the RTX 5090)")
    assert "different paths" not in rows["resnet50"]["explanation"]
    assert c.paths in c.notes
    notes = [n for n in c.notes if "no single memory footprint" in n]
    assert len(notes) == 1
    assert notes[0].startswith("1 model(s) ran at batches")
    assert "efficientnet_b3_gn at 224px (x2.00 on the RTX 5090)" in notes[0]


def test_profiles_are_not_witnesses():
    # a profile's batch is the user's choice, not a decay from a failure
    ms = [m("efficientnet_b3_gn", "rtx4090", 1000, 768), m("efficientnet_b3_gn", "rtx5090", 700, 384, kind="profile"),
          m("resnet50", "rtx4090", 3000, 1024), m("resnet50", "rtx5090", 4300, 1024)]
    c = compare(ms, "rtx4090", "rtx5090")
    assert all(x.path_change is None for x in c.models)
    assert not any("memory footprint" in n for n in c.notes)


def test_a_table_of_hand_picked_batches_is_no_witness():
    assert decays_from([1024, 768, 384, 96], 1024) and not decays_from([1024, 100], 1024)
    ms = [m("efficientnet_b3_gn", "rtx4090", 1000, 768), m("efficientnet_b3_gn", "rtx5090", 700, 384),
          m("resnet50", "rtx4090", 3000, 1024), m("resnet50", "rtx5090", 4300, 1024),
          m("vit_base_patch16_224", "rtx4090", 1000, 100), m("vit_base_patch16_224", "rtx5090", 1400, 1024)]
    c = compare(ms, "rtx4090", "rtx5090")  # the 4090's 100 is no step of timm's decay from 1024
    assert all(x.path_change is None for x in c.models) and c.paths is None


def test_the_path_change_note_is_one_short_line_naming_the_largest_first():
    from visprof.analysis.batch_witness import PathChange, path_change_note

    changes = [(f"model_{i:02d}_with_a_long_timm_name_at_384px", PathChange("target", 1.2 + i / 10, 512, 256))
               for i in range(12)]
    note = path_change_note(changes, "RTX 4090", "RTX 5090")
    assert note.startswith("12 model(s) ran at batches")
    assert "model_11_with_a_long_timm_name_at_384px (x2.30 on the RTX 5090), model_10" in note
    assert "and 7 more" in note and "model_06" not in note
    assert "\n" not in note and len(note) < 650, len(note)  # five names of 44 characters
    assert path_change_note([], "RTX 4090", "RTX 5090") is None
