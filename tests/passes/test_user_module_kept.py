"""A user's own nn.Module leaves visprof.profile as it came: modes, layout (and device, on a GPU:
tests/gpu/test_profile_gpu.py), however the run ends. Before, a module in training mode came back
in eval mode, and a channels_last run left its weights channels-last."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import visprof
from visprof.base.errors import BadInputError, ModelForwardError
from visprof.passes.user_module import ModuleState


def _model() -> nn.Module:
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Dropout(0.5), nn.Flatten(), nn.LazyLinear(4))
    model(torch.randn(2, 3, 8, 8))  # the lazy layer takes its shape
    model.train()
    model[1].eval()  # a user's own mix: frozen batch-norm statistics in a training model
    return model


def _modes(model: nn.Module) -> list[bool]:
    return [m.training for m in model.modules()]


def test_modes_layout_and_parameters_are_as_given_after_a_profile():
    model = _model()
    before, params = _modes(model), list(model.parameters())
    weight = model[0].weight.detach().clone()
    visprof.profile(model, device="cpu", batch_size=2, img_size=8, iterations=2, channels_last=True, progress=False)
    assert _modes(model) == before == [True, True, False, True, True, True]
    assert model[0].weight.is_contiguous()  # channels_last was the run's, not the user's
    assert list(model.parameters()) == params  # the same Parameter objects: an optimizer keeps working
    assert torch.equal(model[0].weight, weight)


def test_a_module_given_in_training_mode_is_said_to_be_profiled_in_eval_mode():
    """profile() runs inference: a module in training mode ran in eval mode (dropout off, batch norm on
    its running statistics), and the result said nothing of it. A module given in eval mode has no note."""
    result = visprof.profile(_model(), device="cpu", batch_size=2, img_size=8, iterations=2, progress=False)
    noted = [note for note in result.warnings if "training mode" in note]
    assert noted == ["Sequential came in training mode: profiled in eval mode (dropout off, batch norm on its running "
                     "statistics) and given back in training mode"]
    assert noted[0] in visprof.text_report(result)
    quiet = visprof.profile(_model().eval(), device="cpu", batch_size=2, img_size=8, iterations=2, progress=False)
    assert not [note for note in quiet.warnings if "training mode" in note]


def test_a_model_that_fails_in_its_forward_is_put_back_too():
    model = _model()
    before = _modes(model)
    with pytest.raises(ModelForwardError):
        visprof.profile(model, device="cpu", batch_size=2, img_size=16, iterations=2, progress=False)  # 16 px: Linear's shape
    assert _modes(model) == before


def test_the_noted_state_restores_device_modes_and_layout():
    model = _model()
    state = ModuleState.of(model)
    assert state.device == torch.device("cpu")
    model.eval().to(memory_format=torch.channels_last)
    assert not model[0].weight.is_contiguous()
    state.restore(model)
    assert _modes(model) == [True, True, False, True, True, True] and model[0].weight.is_contiguous()


def test_each_tensors_own_layout_comes_back_whichever_layout_the_run_used():
    """A run puts every 4-d tensor in one layout. Before, the user's got NCHW back only where all had
    been NCHW: a channels-last model came back NCHW, a mix came back all NCHW, and with one permuted
    4-d parameter a channels_last run left every conv weight channels-last."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Conv2d(8, 8, 3))
    model[0].to(memory_format=torch.channels_last)  # a mix: the first conv channels-last, the second NCHW
    model.register_parameter("pos", nn.Parameter(torch.randn(1, 4, 3, 2).permute(0, 3, 1, 2)))  # permuted
    strides = [t.stride() for t in model.parameters()]
    for channels_last in (False, True):
        visprof.profile(model, device="cpu", batch_size=1, img_size=12, iterations=1, warmup=1,
                        channels_last=channels_last, progress=False)
        assert [t.stride() for t in model.parameters()] == strides, f"channels_last={channels_last}"


def test_lazy_parameters_not_yet_shaped_are_refused_in_one_line():
    """A lazy layer takes its shape at its first forward; noting its layout failed deep in torch."""
    model = nn.Sequential(nn.LazyConv2d(8, 3), nn.Flatten(), nn.LazyLinear(4))
    with pytest.raises(BadInputError, match="lazy parameters not yet initialized .*run one forward"):
        visprof.profile(model, device="cpu", batch_size=1, img_size=8, iterations=1, progress=False)


def test_a_module_profiled_inside_the_callers_inference_mode_comes_back_trainable():
    """Put back under the caller's inference_mode, the weights would be inference tensors, which a
    training step refuses ("Inference tensors cannot be saved for backward")."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.LazyLinear(4))
    model(torch.randn(1, 3, 8, 8))
    with torch.inference_mode():
        visprof.profile(model, device="cpu", batch_size=1, img_size=8, iterations=1, channels_last=True,
                        progress=False)
    assert model[0].weight.is_contiguous() and not any(p.is_inference() for p in model.parameters())
    model(torch.randn(1, 3, 8, 8)).sum().backward()  # a training step works


# --- the module's own layout (visprof.passes.user_module.weights_layout, setup._run_layout) ------
# A user's channels_last module was profiled NCHW without a word: the default channels_last=False
# converted it. Not given, a module runs in its own layout; given, as asked, with a note where the
# module's own is the other.

def _convs() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3))


def _profile(model: nn.Module, **options):
    return visprof.profile(model, device="cpu", batch_size=1, img_size=12, iterations=1, warmup=0, progress=False,
                           **options)


def _layout_notes(result) -> list[str]:
    return [note for note in result.warnings if "convolution weights" in note]


def test_a_channels_last_module_is_profiled_channels_last_when_no_layout_is_asked_for():
    model = _convs().to(memory_format=torch.channels_last)
    result = _profile(model)
    assert result.config.channels_last is True and _layout_notes(result) == []
    assert " · channels_last · " in visprof.text_report(result).splitlines()[0]  # the header says which ran
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)  # and it comes back as it was


def test_a_plain_module_and_a_timm_name_run_nchw_when_no_layout_is_asked_for():
    result = _profile(_convs())
    assert result.config.channels_last is False and _layout_notes(result) == []
    from visprof.passes.setup import resolve_run

    assert resolve_run("resnet18", device="cpu").config.channels_last is False


@pytest.mark.parametrize("made_channels_last, asked, own, ran", [(True, False, "channels-last", "NCHW"),
                                                                (False, True, "NCHW", "channels-last")])
def test_a_layout_asked_for_runs_as_asked_and_says_it_is_not_the_modules_own(made_channels_last, asked, own, ran):
    model = _convs().to(memory_format=torch.channels_last) if made_channels_last else _convs()
    strides = [p.stride() for p in model.parameters()]
    result = _profile(model, channels_last=asked)
    assert result.config.channels_last is asked
    assert _layout_notes(result) == [f"Sequential's convolution weights are {own}, and this run converted them to "
                                     f"{ran}, as asked (without channels_last a module runs in its own layout); the "
                                     "module comes back as it was"]
    assert [p.stride() for p in model.parameters()] == strides


def test_a_module_of_mixed_layouts_runs_nchw_and_says_how_to_run_it_channels_last():
    model = _convs()
    model[0].to(memory_format=torch.channels_last)
    result = _profile(model)
    assert result.config.channels_last is False
    assert _layout_notes(result) == ["Sequential's convolution weights are a mix of channels-last and NCHW, and a "
                                     "run has one layout: it ran NCHW (channels_last=True runs it channels-last); "
                                     "the module comes back as it was"]


def test_the_layout_is_read_from_convolution_weights_whose_strides_tell():
    from visprof.passes.user_module import weights_layout

    assert weights_layout(_convs()) == "contiguous"
    assert weights_layout(_convs().to(memory_format=torch.channels_last)) == "channels_last"
    # 1x1 and depthwise weights have both layouts' strides at once; a model without convolutions has none
    pointwise = nn.Sequential(nn.Conv2d(3, 8, 1), nn.Conv2d(8, 8, 3, groups=8)).to(memory_format=torch.channels_last)
    assert weights_layout(pointwise) is None and weights_layout(nn.Linear(3, 4)) is None
