"""A TorchScript module (torch.jit.script, trace, freeze) given to visprof.profile: named as its author
named it, fed the channels its first convolution takes, its layout read, and said to have no module
table. Before, a scripted 1-channel model was fed 3 channels and failed, the report was headed
"RecursiveScriptModule" with no module table and no word why, and a frozen one raised an
AttributeError ('training') out of profile(). A forward's error of many lines (TorchScript's is its
whole TorchScript traceback) is said in one."""
from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import visprof
from small_modules import ThreeConvolutionKinds
from visprof.base.errors import ModelForwardError

FAST = dict(device="cpu", batch_size=2, img_size=12, iterations=2, warmup=0, progress=False)
NO_MODULE_TABLE = ("Gray is TorchScript (torch.jit.script or trace): its submodules run inside TorchScript, which calls "
                   "no Python module hooks, so its time is split by op and category but not by module")


class Gray(nn.Module):
    """A 1-channel model."""

    def __init__(self, channels: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(channels, 4, 3)
        self.norm = nn.BatchNorm2d(4)

    def forward(self, x):
        return self.norm(self.conv(x))


def _torchscript(how: str, model: nn.Module) -> torch.jit.ScriptModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated in torch >= 2.10
        if how == "trace":
            return torch.jit.trace(model.eval(), torch.randn(1, model.conv.in_channels, 12, 12))
        scripted = torch.jit.script(model.eval() if how == "freeze" else model)
        return torch.jit.freeze(scripted) if how == "freeze" else scripted


# torch.jit.freeze inlines the submodules and their weights: no convolution is left to read the channels from
@pytest.mark.parametrize("how, channels", [("script", 1), ("trace", 1), ("freeze", 3)])
def test_a_torchscript_module_is_profiled_under_its_own_name_with_its_own_channels(how, channels):
    model = _torchscript(how, Gray(channels))
    result = visprof.profile(model, **FAST)
    assert result.model.name == "Gray"
    assert result.model.input_shape == [2, channels, 12, 12]
    assert NO_MODULE_TABLE in result.warnings and not result.modules
    assert result.category_totals()["convolution"].time_ms > 0


@pytest.mark.parametrize("how", ["script", "trace", "freeze"])
def test_a_torchscript_modules_convolutions_are_split_by_kind(how):
    """A traced module's graph calls aten._convolution, whose kind was not read: its convolutions were
    `[unknown kind]`, with no dense/depthwise/pointwise split, where eager and scripted had one."""
    result = visprof.profile(_torchscript(how, ThreeConvolutionKinds()), **FAST)
    conv = {row.subcategory for row in result.categories if row.category == "convolution"}
    assert conv == {"dense", "depthwise", "pointwise"}, [row.op_type for row in result.op_types]
    assert not any("unknown kind" in row.op_type for row in result.op_types)


def test_a_frozen_module_says_its_parameter_count_is_unknown_and_counts_its_constants_as_weights():
    """torch.jit.freeze makes the weights constants of the graph: the result said 0 parameters, and
    every op's weight bytes (param_bytes, the bytes that do not grow with the batch) were 0."""
    model = Gray(channels=3)
    scripted = visprof.profile(_torchscript("script", model), **FAST)
    frozen = visprof.profile(_torchscript("freeze", model), **FAST)
    assert scripted.model.param_count == 3 * 4 * 9 + 4 + 4 * 2
    assert frozen.model.param_count is None
    assert "· params unknown ·" in visprof.text_report(frozen)
    assert any("frozen TorchScript (torch.jit.freeze)" in w and "parameter count is unknown" in w for w in frozen.warnings)
    conv = next(g for g in frozen.roofline.groups if "conv" in g.op)
    # freezing folded the batch norm into the convolution: its weight (4x3x3x3) and a new bias (4)
    assert conv.param_bytes == (4 * 3 * 9 + 4) * 4


@pytest.mark.parametrize("how", ["freeze", "script"])
def test_at_bf16_a_frozen_modules_weights_are_weights_though_its_executor_made_them_anew(how):
    """Under autocast the graph executor folds the casts of a frozen graph's weights into new bf16
    constants, which are in no graph visprof reads before the run: a frozen resnet18 at bf16 (on an
    H100, as here on the CPU) had 0 weight bytes. What no recorded op made and is not the input is
    one of them. A scripted module's weights are parameters, cast by ops: its count stays as it was."""
    model = _torchscript(how, Gray(channels=3))
    result = visprof.profile(model, **{**FAST, "precision": "bf16", "iterations": 3})
    conv = next(g for g in result.roofline.groups if "conv" in g.op)
    assert conv.param_bytes == (4 * 3 * 9 + 4) * 2  # weight and bias in bf16 (frozen: the batch norm folded in)
    casts = sum(g.param_bytes * g.count for g in result.roofline.groups if g.subcategory == "cast")
    # scripted, autocast casts the fp32 parameters by ops (read in fp32, written in bf16); frozen, the executor did
    assert casts == (0 if how == "freeze" else (4 * 3 * 9 + 4) * (4 + 2))


def test_a_frozen_module_whose_weights_are_on_another_device_is_refused_before_it_runs():
    """Moving a module does not move its graph's constants, where a frozen one keeps its weights: one
    frozen on the CPU cannot run on a GPU. Said before any run (resolve_model sees no GPU here)."""
    from visprof.base.errors import BadInputError
    from visprof.passes.models import resolve_model

    frozen = _torchscript("freeze", Gray(channels=3))
    assert resolve_model(frozen, device="cpu").name == "Gray"
    with pytest.raises(BadInputError) as info:
        resolve_model(frozen, device="cuda:0")
    assert str(info.value) == (
        "Gray holds a frozen TorchScript graph whose constants (its weights) are on cpu, and moving a module does not "
        "move a graph's constants, so it cannot run on cuda:0: freeze it there (module.to('cuda:0') before "
        "torch.jit.freeze), or profile it with device='cpu'")
    inside = nn.Sequential(nn.Identity(), frozen)  # an eager model around a frozen part
    with pytest.raises(BadInputError, match="^Sequential holds a frozen TorchScript graph whose constants"):
        resolve_model(inside, device="cuda:0")
    with warnings.catch_warnings():  # no batch norm: freezing folds one with an op that meta tensors lack
        warnings.simplefilter("ignore", FutureWarning)
        on_meta = torch.jit.freeze(torch.jit.script(nn.Sequential(nn.Conv2d(3, 4, 3, device="meta")).eval()))
    with pytest.raises(BadInputError, match="on the meta device, which holds no data"):
        visprof.profile(on_meta, **FAST)
    for how in ("script", "trace"):  # weights that are parameters, which .to() moves
        assert resolve_model(_torchscript(how, Gray(channels=3)), device="cuda:0").name == "Gray"


def test_a_frozen_vit_keeps_its_attention_projections():
    """The structure pass found weights by their being parameters: in a frozen ViT the qkv and
    output projections (a GEMM with a constant operand) read as plain linear layers."""
    import timm

    vit = timm.create_model("vit_tiny_patch16_224", img_size=32).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        frozen = torch.jit.freeze(torch.jit.script(vit))
    for precision in ("fp32", "bf16"):  # at bf16 the executor's own bf16 constants are the weights
        result = visprof.profile(frozen, **{**FAST, "img_size": 32, "precision": precision})
        rows = {(r.category, r.subcategory): r.kernel_count for r in result.categories if r.kernel_count}
        assert rows[("attention", "projections")] == 2 * 12, precision  # qkv and proj in each of 12 blocks
        assert rows[("linear", None)] == 2 * 12 + 1, precision  # the MLPs' two and the head


def test_a_scripted_channels_last_module_runs_in_its_own_layout_and_comes_back_in_it():
    model = _torchscript("script", Gray(channels=3).to(memory_format=torch.channels_last))
    weight = model.conv.weight
    assert visprof.profile(model, **FAST).config.channels_last is True
    result = visprof.profile(model, **{**FAST, "channels_last": False})
    assert not result.config.channels_last and any("this run converted them to NCHW" in w for w in result.warnings)
    assert model.conv.weight is weight and weight.is_contiguous(memory_format=torch.channels_last)


class TakesTwoChannels(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x[:, :2])


class RaisesOverLines(nn.Module):
    def forward(self, x):
        raise ValueError("pattern 'b c h w' failed\n  input shape: (2, 3, 12, 12)\n")


def test_a_forward_error_of_many_lines_is_said_in_one():
    """A TorchScript module's error was its whole TorchScript traceback, a dozen lines, in the message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        scripted = torch.jit.script(TakesTwoChannels())
    for model, said in ((scripted, "RuntimeError: Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 2, 12, 12] "
                                   "to have 3 channels, but got 2 channels instead"),
                        (RaisesOverLines(), "ValueError: pattern 'b c h w' failed / input shape: (2, 3, 12, 12)")):
        with pytest.raises(ModelForwardError) as info:
            visprof.profile(model, **FAST)
        name = type(model).__name__ if not isinstance(model, torch.jit.ScriptModule) else "TakesTwoChannels"
        assert str(info.value) == f"model {name!r} failed on an input of shape 2x3x12x12: {said}"
        assert "\n" in str(info.value.__cause__)  # the whole of it is still there


@pytest.mark.parametrize("how", ["script", "trace"])
def test_a_fresh_frozen_module_profiled_with_the_attributed_pass_alone_counts_its_flops(how):
    """passes="attributed" on a frozen module never run before: its executor profiles the graph on the
    first call and optimizes it for the next, so the template (the first forward) matched no later
    forward: FLOPs 0 and "15 ops differed from the first forward (data-dependent code)"."""
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1)).eval()
    eager = visprof.profile(model, img_size=16, batch_size=2, progress=False, passes="attributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation
        scripted = torch.jit.script(model) if how == "script" else torch.jit.trace(model, torch.randn(2, 3, 16, 16))
        frozen = torch.jit.freeze(scripted)
    result = visprof.profile(frozen, img_size=16, batch_size=2, progress=False, passes="attributed")
    assert not [w for w in result.warnings if "differed from the first forward" in w]
    flops = {(c.category, c.subcategory): c.flops for c in result.categories}
    assert flops[("convolution", "dense")] == {(c.category, c.subcategory): c.flops
                                               for c in eager.categories}[("convolution", "dense")] > 0


@pytest.mark.parametrize("how", ["eager", "script", "trace"])
def test_a_decoder_that_starts_with_a_transposed_convolution_is_fed_its_channels(how):
    """in_chans came from the first nn.Conv2d only: a decoder of 32-channel maps was fed 3 and failed."""
    decoder = nn.Sequential(nn.ConvTranspose2d(32, 16, 2, stride=2), nn.ReLU(), nn.Conv2d(16, 3, 3, padding=1)).eval()
    model = decoder
    if how != "eager":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            model = torch.jit.script(decoder) if how == "script" else torch.jit.trace(decoder, torch.randn(1, 32, 8, 8))
    result = visprof.profile(model, **{**FAST, "img_size": 8})
    assert result.model.input_shape == [2, 32, 8, 8]
