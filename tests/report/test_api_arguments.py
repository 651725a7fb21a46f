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


@pytest.mark.parametrize("option, value", [("compile", "no"), ("compile", 0), ("channels_last", 1),
                                           ("channels_last", "yes"), ("compile", None)])
def test_a_flag_that_is_not_a_bool_is_refused_before_the_run(option, value):
    """compile="no" compiled the model (any truthy value did), and the result stored "no", which
    ProfileResult.load then refused: a file saved that could not be read back."""
    with pytest.raises(BadInputError, match=rf"{option} must be True or False, got {value!r}"):
        visprof.profile("no_such_model_would_fail_later", progress=False, **{option: value})


@pytest.mark.parametrize("option", ["precision", "grad_mode", "autocast"])
def test_an_empty_choice_is_refused_not_taken_as_the_default(option):
    with pytest.raises(BadInputError, match=rf"unknown {option} ''; choose one of"):
        visprof.profile("no_such_model_would_fail_later", progress=False, **{option: ""})


@pytest.mark.parametrize("passes", [5, None.__class__, 2.0])
def test_passes_that_are_not_names_are_refused(passes):
    with pytest.raises(BadInputError, match="passes must be a list of pass names or a comma-separated string"):
        visprof.profile("no_such_model_would_fail_later", progress=False, passes=passes)


def test_numpy_bools_are_flags():
    import numpy as np
    from torch import nn

    result = visprof.profile(nn.Sequential(nn.Conv2d(3, 4, 3)), img_size=16, iterations=2, warmup=0,
                             attributed_iterations=1, progress=False, channels_last=np.bool_(True))
    assert result.config.channels_last is True
