"""The Python API names a wrong argument in one line before any work, as the CLI does: a string
for top_modules once ran every pass and then failed in a slice, a path given to text_report or a
model name given to trace() failed deep inside with an AttributeError."""
from __future__ import annotations

from pathlib import Path

import pytest

import visprof
from visprof.base.errors import BadInputError

RECORDED = Path(__file__).resolve().parents[1] / "data" / "h100-result-vit_base_patch16_224.json"


def test_text_report_takes_a_saved_result_by_its_path():
    from visprof.result import ProfileResult

    assert visprof.text_report(str(RECORDED)) == visprof.text_report(ProfileResult.load(RECORDED))
    assert visprof.text_report(RECORDED).startswith("visprof profile: vit_base_patch16_224")
    with pytest.raises(BadInputError, match="the report is of a ProfileResult or the path of one saved as JSON, got a NoneType"):
        visprof.text_report(None)


@pytest.mark.parametrize("value", ["5", 2.5, 0, -1, True])
def test_a_wrong_top_modules_is_refused_before_the_run(value):
    with pytest.raises(BadInputError, match=r"top_modules must be a whole number >= 1"):
        visprof.profile("no_such_model_would_fail_later", top_modules=value, progress=False)


def test_trace_of_a_model_name_says_what_it_takes():
    with pytest.raises(BadInputError, match=r"trace\(\) takes the nn.Module the traced code runs, got a str 'resnet18'"):
        visprof.trace("resnet18")
