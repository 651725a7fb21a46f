"""A module's input channels: visprof takes its in_chans, its pretrained config's, else its first
registered convolution's in_channels. A module whose first registered convolution is not its stem
(a head registered first) was fed that convolution's channels and failed, with no way to say how many
it takes: ``profile(module, in_chans=N)`` says it, and the error names it."""
from __future__ import annotations

import pytest
from torch import nn

import visprof
from visprof.base.errors import BadInputError, ModelForwardError
from visprof.report.table import render


class HeadFirst(nn.Module):
    """A grayscale model whose 1x1 head convolution is registered before its stem."""

    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(16, 10, 1)
        self.stem = nn.Conv2d(1, 16, 3, padding=1)

    def forward(self, x):
        return self.head(self.stem(x)).mean((2, 3))


def profile(module, **kwargs):
    return visprof.profile(module, img_size=16, batch_size=2, iterations=2, warmup=0, progress=False, **kwargs)


def test_the_wrong_guess_fails_naming_in_chans_and_in_chans_runs_it():
    with pytest.raises(ModelForwardError) as failed:
        profile(HeadFirst())
    assert str(failed.value).endswith("(visprof fed it 16-channel inputs; give the channels HeadFirst takes "
                                      "(in_chans=N))")
    result = profile(HeadFirst(), in_chans=1)
    assert result.model.input_shape == [2, 1, 16, 16]
    assert {c.category for c in result.categories} >= {"convolution"}
    assert render(result).splitlines()[0].startswith(
        "visprof profile: HeadFirst (module) · 330 params · batch 2 · 1-channel 16px (as requested) · ")


def test_an_error_of_an_inner_convolution_is_not_blamed_on_the_input_channels():
    inner = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Conv2d(4, 8, 3))  # the second takes 4 of the first's 8
    with pytest.raises(ModelForwardError) as failed:
        profile(inner)
    assert "in_chans" not in str(failed.value)


@pytest.mark.parametrize("value", [0, -1, 1.5, "1", True])
def test_in_chans_must_be_a_count(value):
    with pytest.raises(BadInputError, match=r"^in_chans must be an integer >= 1, got "):
        profile(HeadFirst(), in_chans=value)


def test_a_timm_name_is_built_with_its_own_channels():
    with pytest.raises(BadInputError, match=r"in_chans is for a module of yours; build resnet18 with the channels you "
                                            r"want \(timm.create_model\('resnet18', in_chans=N\)\)"):
        profile("resnet18", in_chans=1)
