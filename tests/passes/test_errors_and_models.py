"""visprof.base.errors, visprof.base.sizes and visprof.passes.models on CPU, with small timm models (never pretrained)."""
from __future__ import annotations

import pickle

import pytest
import torch
from torch import nn

from visprof.base import errors
from visprof.base.errors import BadInputError, ModelForwardError, OutOfMemoryError, UnknownModelError
from visprof.base.sizes import normalize_img_size, validate_batch_size
from visprof.passes.models import DEFAULT_INPUT_SIZE, resolve_model, timm_name


class TinyNet(nn.Module):
    """A small conv net with a head, defined at module level."""

    def __init__(self, in_chans: int = 3):
        super().__init__()
        self.conv = nn.Conv2d(in_chans, 4, 3)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.conv(x).mean((2, 3)))


# --- errors ------------------------------------------------------------------------------

def test_exit_codes_follow_the_kind_of_failure():
    assert errors.exit_code_for(UnknownModelError("x")) == 2
    assert errors.exit_code_for(BadInputError("bad")) == 2
    assert errors.exit_code_for(OutOfMemoryError(64)) == 3
    assert errors.exit_code_for(errors.NoGPUError()) == 4
    assert errors.exit_code_for(errors.DeviceNotFoundError("cuda:3", ["cuda:0 (H200)"])) == 4
    assert errors.exit_code_for(errors.CuptiUnavailableError()) == 1
    assert errors.exit_code_for(RuntimeError("bug")) == 1


def test_bad_input_is_also_a_value_error_for_library_callers():
    assert isinstance(BadInputError("x"), ValueError)
    assert isinstance(UnknownModelError("x"), LookupError)


def test_out_of_memory_message_names_the_batch_that_fits():
    error = OutOfMemoryError(512, max_batch_size=384, device="cuda:0")
    assert (error.batch_size, error.max_batch_size) == (512, 384)
    assert str(error) == (
        "out of GPU memory at batch size 512 on cuda:0; the largest batch that fits is 384 (batch_size=384)"
    )
    assert "not even batch size 1" in str(OutOfMemoryError(8, None, searched=True))


def test_device_not_found_lists_visible_devices():
    error = errors.DeviceNotFoundError("cuda:3", ["cuda:0 (NVIDIA H200)", "cuda:1 (NVIDIA H200)"])
    assert str(error) == "device 'cuda:3' does not exist; visible devices: cuda:0 (NVIDIA H200), cuda:1 (NVIDIA H200)"


def test_cupti_error_names_the_profilers_that_hold_it():
    message = str(errors.CuptiUnavailableError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"))
    for holder in ("torch.profiler", "Nsight Systems", "Nsight Compute", "MULTIPLE_SUBSCRIBERS"):
        assert holder in message


def test_model_forward_error_keeps_the_original_as_cause():
    original = RuntimeError("mat1 and mat2 shapes cannot be multiplied")
    error = ModelForwardError("vit_tiny", (2, 3, 96, 96), original)
    assert error.__cause__ is original
    assert "2x3x96x96" in str(error) and "mat1 and mat2" in str(error)


@pytest.mark.parametrize(
    "error",
    [
        UnknownModelError("resnet5O", ["resnet50"]),
        OutOfMemoryError(64, 32, "cuda:1"),
        errors.DeviceNotFoundError("cuda:2", ["cuda:0 (H200)"]),
        ModelForwardError("m", (1, 3, 8, 8), ValueError("boom")),
        errors.NativeUnavailableError("built without CUPTI"),
    ],
)
def test_errors_survive_pickling_with_their_fields(error):
    # The memory pass sends its failure back from a subprocess.
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert {k: v for k, v in vars(copy).items() if k != "__cause__"} == {
        k: v for k, v in vars(error).items() if k != "__cause__"
    }


# --- names -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "typo, expected",
    [("resnet5O", "resnet50"), ("vit_base_patch16_244", "vit_base_patch16_224"), ("efficentnet_b0", "efficientnet_b0")],
)
def test_unknown_model_suggests_close_matches(typo, expected):
    with pytest.raises(UnknownModelError) as info:
        resolve_model(typo)
    assert expected in info.value.suggestions
    assert len(info.value.suggestions) <= 5
    assert expected in str(info.value)


def test_unknown_model_without_any_match_says_where_names_come_from():
    with pytest.raises(UnknownModelError) as info:
        timm_name("zzzzqqqq")
    assert info.value.suggestions == []
    assert "timm.list_models()" in str(info.value)


@pytest.mark.parametrize(
    "requested, expected",
    [
        ("resnet18", "resnet18"),
        ("timm/resnet18", "resnet18"),
        ("hf-hub:timm/resnet18.a1_in1k", "resnet18.a1_in1k"),
        ("vit_base_patch16_224.augreg_in21k", "vit_base_patch16_224.augreg_in21k"),
        ("ResNet18", "resnet18"),
    ],
)
def test_hub_prefixes_and_pretrained_tags_are_understood(requested, expected):
    assert timm_name(requested) == expected


def test_unknown_pretrained_tag_suggests_real_tags():
    with pytest.raises(UnknownModelError) as info:
        timm_name("resnet18.a1_in1kk")
    assert "resnet18.a1_in1k" in info.value.suggestions
    assert "no pretrained tag" in str(info.value)


def test_other_hubs_are_refused_clearly():
    with pytest.raises(UnknownModelError, match="does not download"):
        timm_name("hf-hub:someone/their-model")


# --- input sizes -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, test_size, train_size",
    [
        ("resnet18", (3, 288, 288), (3, 224, 224)),  # resnet18.a1_in1k: trained at 224, tested at 288
        ("efficientnet_b3", (3, 320, 320), (3, 288, 288)),
        ("vit_small_patch16_384", (3, 384, 384), (3, 384, 384)),
        ("mobilenetv4_conv_small.e3600_r256_in1k", (3, 320, 320), (3, 256, 256)),
        ("seresnet33ts", (3, 288, 288), (3, 256, 256)),  # the example: timm's CSVs list it at 288
    ],
)
def test_default_input_size_is_timm_benchmark_pys_test_size(name, test_size, train_size):
    from timm.data import resolve_data_config

    spec = resolve_model(name)
    assert spec.source == "timm"
    assert not spec.module.training
    # the oracle is timm's own resolver, as its benchmark.py calls it
    assert resolve_data_config({}, model=spec.module, use_test_size=True)["input_size"] == test_size
    # "test" only where the config names a test size: vit_small_patch16_384's has one size, fed as benchmark.py does
    has_test_size = bool(spec.module.pretrained_cfg.get("test_input_size"))
    assert (spec.input_size, spec.img_size_origin) == (test_size, "test" if has_test_size else "config")
    assert has_test_size == (name != "vit_small_patch16_384")
    assert spec.default_input_size == train_size
    train = resolve_model(name, img_size="train")
    assert (train.input_size, train.img_size_origin) == (train_size, "train")
    assert resolve_data_config({}, model=train.module)["input_size"] == train_size


def test_a_tag_can_change_the_default_input_size():
    # resnet18's default tag is tested at 288, its a3 recipe trained at 160 and tested at 224: only the tag says so.
    assert resolve_model("resnet18").input_size == (3, 288, 288)
    spec = resolve_model("timm/resnet18.a3_in1k")
    assert (spec.name, spec.input_size, spec.default_input_size) == ("resnet18.a3_in1k", (3, 224, 224), (3, 160, 160))


def test_img_size_builds_vits_for_it():
    spec = resolve_model("vit_tiny_patch16_224", img_size=96)
    assert spec.input_size == (3, 96, 96)
    assert spec.notes == []
    out = spec.module(spec.make_input(2, "cpu"))
    assert out.shape == (2, 1000)
    assert spec.module.patch_embed.img_size == (96, 96)


def test_img_size_for_a_cnn_feeds_that_size_and_notes_it():
    spec = resolve_model("resnet18", img_size=(64, 96))
    assert spec.input_size == (3, 64, 96)
    assert spec.make_input(1, "cpu").shape == (1, 3, 64, 96)
    assert "does not take img_size" in spec.notes[0]
    assert spec.param_count == 11_689_512


def test_forward_error_carries_the_hint():
    spec = resolve_model("resnet18", img_size=32)
    cause = RuntimeError("size mismatch")
    error = spec.forward_error(4, cause)
    assert error.__cause__ is cause
    assert "4x3x32x32" in str(error)
    assert "does not take img_size" in str(error)
    # an error that is not about sizes is not given a size to blame
    unrelated = spec.forward_error(4, RuntimeError("expected scalar type BFloat16 but found Float"))
    assert str(unrelated) == ("model 'resnet18' failed on an input of shape 4x3x32x32: "
                              "RuntimeError: expected scalar type BFloat16 but found Float")


class MaskedAsAPlainTensor(nn.Module):
    """Keeps its mask as a plain attribute, which module.to(device) does not move."""

    def __init__(self, mask_device: str):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.mask = torch.ones(4, 8, 8, device=mask_device)

    def forward(self, x):
        return self.conv(x) * self.mask


def test_a_forward_that_meets_a_tensor_left_on_another_device_names_it_and_the_fix():
    """A mask kept as a plain attribute stays where it was made when the module moves to the run's
    device; torch says two devices met, not which tensor or why."""
    import visprof

    with pytest.raises(ModelForwardError) as info:  # meta stands in for a GPU on a CPU-only machine
        visprof.profile(MaskedAsAPlainTensor("meta"), device="cpu", batch_size=2, img_size=8, progress=False)
    assert str(info.value).endswith(
        "(mask of MaskedAsAPlainTensor is a plain tensor attribute on meta, which module.to() does not move: register "
        "it as a buffer (self.register_buffer(name, tensor), persistent=False to keep it out of the state dict))")
    spec = resolve_model(nn.Sequential(MaskedAsAPlainTensor("meta"), MaskedAsAPlainTensor("meta")), img_size=8)
    two = spec.forward_error(2, RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                             "devices, cuda:0 and cpu!"))
    assert "(0.mask, 1.mask of Sequential are plain tensor attributes on meta" in str(two)
    elsewhere = spec.forward_error(2, RuntimeError("expected scalar type BFloat16 but found Float"))
    assert "plain tensor" not in str(elsewhere)  # not a devices error: no attribute to blame
    on_its_device = resolve_model(MaskedAsAPlainTensor("cpu"), img_size=8)
    assert "plain tensor" not in str(on_its_device.forward_error(2, RuntimeError("Tensor on device meta is not on the "
                                                                                 "expected device cpu!")))


class ScaledByAPlainTensor(nn.Module):
    """Reads a plain tensor attribute in forward, which torch.jit.trace keeps as a graph constant."""

    def __init__(self, device: str):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(8, device=device))
        self.mask = torch.ones(3, 8, 8, device=device)

    def forward(self, x):
        return x * self.scale * self.mask


def test_a_traced_forward_that_meets_its_own_constant_on_another_device_names_the_graph():
    """Traced on one device (meta standing in for the CPU it was traced on, the CPU for the GPU it
    runs on), the graph's constant stays where it was traced when the module's parameters move."""
    import warnings

    import visprof

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.trace's deprecation
        traced = torch.jit.trace(ScaledByAPlainTensor("meta"), torch.ones(2, 3, 8, 8, device="meta"))
    traced = traced.to_empty(device="cpu")  # the parameters move, the graph's constant does not
    with pytest.raises(ModelForwardError) as info:
        visprof.profile(traced, device="cpu", batch_size=2, img_size=8, progress=False)
    assert str(info.value).endswith(
        "(ScaledByAPlainTensor holds a TorchScript graph with tensor constants on meta (a traced forward keeps the "
        "tensors it read from plain attributes or closures as constants), which module.to() does not move: trace it "
        "on the device it runs on, or register those tensors as buffers before tracing)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_its_device = torch.jit.trace(ScaledByAPlainTensor("cpu"), torch.ones(2, 3, 8, 8))
    spec = resolve_model(on_its_device, img_size=8)
    assert "TorchScript graph" not in str(spec.forward_error(2, RuntimeError("Tensor on device meta is not on the "
                                                                             "expected device cpu!")))


# --- modules -----------------------------------------------------------------------------

def test_plain_module_gets_default_size_and_a_note():
    spec = resolve_model(TinyNet())
    assert (spec.name, spec.source, spec.input_size) == ("TinyNet", "module", DEFAULT_INPUT_SIZE)
    assert spec.param_count == 3 * 4 * 9 + 4 + 4 * 2 + 2
    assert "no default_cfg" in spec.notes[0]


def test_plain_module_channels_come_from_its_first_conv():
    assert resolve_model(TinyNet(in_chans=1), img_size=32).input_size == (1, 32, 32)


def test_timm_made_module_uses_its_cfg():
    import timm

    module = timm.create_model("efficientnet_b3", pretrained=False).eval()  # in training mode it has a note of that
    spec = resolve_model(module)
    # its pretrained cfg's test size, as for the model by name; "train" picks the training size
    assert (spec.name, spec.source, spec.input_size, spec.img_size_origin) == ("EfficientNet", "module", (3, 320, 320), "test")
    assert spec.notes == []
    assert resolve_model(module, img_size="train").input_size == (3, 288, 288)


def test_a_timm_module_built_for_another_size_is_fed_the_size_it_was_built_for():
    """timm leaves the pretrained config at 224 for vit_tiny_patch16_224 built with img_size=160, and
    profile() fed it 224 from there: "Input height (224) doesn't match model (160)"."""
    import timm

    import visprof

    module = timm.create_model("vit_tiny_patch16_224", img_size=160)
    spec = resolve_model(module)
    assert (spec.input_size, spec.img_size_origin, spec.default_input_size) == ((3, 160, 160), "built", (3, 160, 160))
    result = visprof.profile(module, batch_size=1, iterations=1, warmup=0, progress=False)
    assert result.model.input_shape == [1, 3, 160, 160]
    assert "160px (the size the module was built for)" in visprof.text_report(result).splitlines()[0]
    # a size asked for is fed; a size error on it names the size the module was built for
    assert resolve_model(module, img_size=192).forward_hint == "VisionTransformer was built for 160x160 inputs"
    # built as its config says, it is fed its config's test size, as before
    assert resolve_model(timm.create_model("vit_tiny_patch16_224")).img_size_origin == "config"


@pytest.mark.parametrize("name, label", [("vit_tiny_patch16_224", "224px (its config's one size, as timm's benchmark.py)"),
                                         ("resnet18", "288px (test size, as timm's benchmark.py)")])
def test_the_header_calls_a_size_a_test_size_only_where_the_config_names_one(name, label):
    """vit_base_patch16_224's header said "test size" of a config that names one size (timm's benchmark.py
    feeds it that size, as it feeds resnet18 its config's test size of 288)."""
    import visprof

    result = visprof.profile(name, batch_size=1, iterations=1, warmup=0, img_size=None, progress=False,
                             passes=("timing",))
    assert label in visprof.text_report(result).splitlines()[0]


class _Sized(nn.Module):
    """A module that takes only the size it was built for, as a timm ViT's patch embedding does."""

    def __init__(self, built: int, cfg: int | None = None, records: bool = True):
        super().__init__()
        self.conv, self.built = nn.Conv2d(3, 4, 3), built
        if records:
            self.img_size = built
        if cfg is not None:
            self.pretrained_cfg = {"input_size": (3, cfg, cfg)}

    def forward(self, x):
        if x.shape[-2] != self.built:  # raised, not asserted: pytest rewrites a test file's asserts' messages
            raise AssertionError(f"Input height ({x.shape[-2]}) doesn't match model ({self.built}).")
        return self.conv(x)


def test_a_module_without_a_config_is_fed_the_size_it_records():
    spec = resolve_model(_Sized(48).eval())
    assert (spec.input_size, spec.img_size_origin, spec.notes) == ((3, 48, 48), "built", [])


def test_a_size_error_with_no_size_given_names_img_size_in_the_callers_terms():
    """A module that records no size (timm's LeViT, TNT, CoaT built with img_size=) is fed its
    config's size; failing on it, the error named no remedy."""
    import visprof
    from visprof.base.spelling import command_line

    module = _Sized(32, cfg=48, records=False)
    with pytest.raises(ModelForwardError, match=r"shape 1x3x48x48: AssertionError: Input height \(48\) doesn't match "
                                                r"model \(32\)\. \(visprof fed it 48x48 inputs, its pretrained config's "
                                                r"size \(it names no test size\); give the size it takes \(img_size=N\)\)"):
        visprof.profile(module, batch_size=1, iterations=1, warmup=0, progress=False)
    with command_line():
        assert resolve_model(module).forward_hint.endswith("(--img-size N)")
    # it records no size, so of a size asked for only its config is known, and said as such
    assert resolve_model(module, img_size=40).forward_hint == "_Sized's pretrained config is for 48x48 inputs"


def test_the_size_a_module_was_built_for_is_its_training_size_not_its_test_size():
    """resnet18's config trains at 224 and tests at 288: the hint said it was built for 288."""
    import timm

    module = timm.create_model("resnet18")
    assert resolve_model(module).input_size == (3, 288, 288)  # fed the test size, as timm's benchmark.py
    assert resolve_model(module, img_size=224).forward_hint == ""
    assert resolve_model(module, img_size=160).forward_hint == "ResNet's pretrained config is for 224x224 inputs"


def test_a_forward_that_takes_more_than_an_image_is_pointed_at_trace():
    """profile() feeds one image batch: a forward(x, y) failed with Python's TypeError alone."""
    import visprof

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x, y):
            return self.conv(x) + y

    with pytest.raises(ModelForwardError, match=r"missing 1 required positional argument: 'y' \(visprof.profile calls "
                                                r"forward with one batch of images; .* `with visprof.trace\(model\):`\)"):
        visprof.profile(Two(), batch_size=1, img_size=16, iterations=2, warmup=0, progress=False)


@pytest.mark.parametrize("channels", [1, 4])
def test_a_timm_module_built_for_other_channels_is_fed_them(channels):
    """timm keeps its pretrained config's 3 channels for in_chans=1 (grayscale) or 4 (RGBD): such a
    model was fed 3 channels and failed, its size blamed."""
    import timm

    spec = resolve_model(timm.create_model("resnet18", in_chans=channels), img_size=32)
    assert spec.input_size == (channels, 32, 32)
    with torch.inference_mode():
        assert spec.module(spec.make_input(1, "cpu")).shape == (1, 1000)


@pytest.mark.parametrize("dtype, precision, message", [
    (torch.bfloat16, "fp32", r"TinyNet's weights are torch.bfloat16, which precision fp32 does not feed: profile it "
                             r"at precision bf16 \(precision='bf16'\), or cast it to float32 first \(module.float\(\)\)"),
    (torch.float16, "bf16", "weights are torch.float16, which precision bf16 does not feed: profile it at precision fp16"),
    (torch.float64, "fp32", r"weights are torch.float64, and visprof runs fp32, tf32, bf16 or fp16: cast it to float32"),
])
def test_a_module_whose_weights_are_not_float32_is_told_what_runs_it(dtype, precision, message):
    """A bf16 module at the CPU's default fp32 was fed float32 and failed as "model failed on an input"."""
    import visprof

    module = TinyNet().to(dtype).train()
    with pytest.raises(BadInputError, match=message):
        visprof.profile(module, batch_size=1, img_size=16, iterations=2, warmup=0, precision=precision, progress=False)
    assert module.training and next(module.parameters()).dtype == dtype  # left as it came


@pytest.mark.parametrize("dtype, precision", [(torch.bfloat16, "bf16"), (torch.float16, "fp16")])
def test_a_low_precision_module_runs_at_its_weights_precision_unless_another_is_asked(dtype, precision):
    """Without precision=, a bf16 module was refused at the CPU's default fp32 ("precision fp32 does
    not feed"), a precision the caller never gave; it runs at its own, its inputs cast up front (no
    per-forward input cast, which a bf16 pipeline does not run), and a note says so."""
    import visprof

    result = visprof.profile(TinyNet().to(dtype), batch_size=1, img_size=16, iterations=2, warmup=0, progress=False)
    assert (result.config.precision, result.config.autocast) == (precision, "model-cast")
    assert (f"TinyNet's weights are {precision}: it ran at precision='{precision}' with its inputs cast up front "
            "(autocast model-cast), as such a module runs; ask for another precision to run it at that one") in result.warnings
    assert not any(row.op_type.startswith(("aten.to.", "aten._to_copy")) for row in result.op_types)
    # asked for, the precision and autocast are as asked
    asked = visprof.profile(TinyNet().to(dtype), batch_size=1, img_size=16, iterations=2, warmup=0, progress=False,
                            precision=precision, autocast="per-forward")
    assert (asked.config.precision, asked.config.autocast) == (precision, "per-forward")
    assert not any("weights are" in w for w in asked.warnings)


def test_a_bf16_module_profiles_at_bf16():
    import visprof

    module = TinyNet().to(torch.bfloat16)
    result = visprof.profile(module, batch_size=1, img_size=16, iterations=2, warmup=0, precision="bf16", progress=False)
    assert result.config.precision == "bf16" and next(module.parameters()).dtype == torch.bfloat16


def test_option_words_are_taken_in_any_case():
    # precision="BF16" was refused as an unknown precision, where the CLI's did-you-mean knows better
    from visprof.passes.setup import resolve_run

    setup = resolve_run(TinyNet(), precision="BF16", grad_mode="No_Grad", autocast="Whole-Loop", device="cpu")
    assert (setup.config.precision, setup.config.grad_mode, setup.config.autocast) == ("bf16", "no_grad", "whole-loop")
    with pytest.raises(BadInputError, match="unknown precision 'fp8'; choose one of"):
        resolve_run(TinyNet(), precision="fp8", device="cpu")


def test_module_is_put_in_eval_mode():
    module = TinyNet().train()
    assert resolve_model(module).module is module
    assert not module.training


def test_make_input_is_seeded_and_formatted():
    spec = resolve_model(TinyNet(), img_size=16)
    first = spec.make_input(3, "cpu")
    again = spec.make_input(3, torch.device("cpu"))
    assert torch.equal(first, again)
    assert first.shape == (3, 3, 16, 16) and first.dtype == torch.float32
    assert 0.5 < first.std().item() < 1.5
    half = spec.make_input(3, "cpu", dtype=torch.bfloat16, channels_last=True)
    assert half.dtype == torch.bfloat16
    assert half.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(half.float(), first, atol=0.02)  # same draws, rounded


@pytest.mark.parametrize("bad", [0, -1, 2.5, "8", True, None])
def test_bad_batch_sizes_are_refused(bad):
    spec = resolve_model(TinyNet(), img_size=16)
    with pytest.raises(BadInputError, match="batch size"):
        spec.make_input(bad, "cpu")


def test_numpy_style_integers_are_valid_batch_sizes():
    import numpy as np

    assert validate_batch_size(np.int64(4)) == 4


@pytest.mark.parametrize("good, expected", [(None, None), (224, (224, 224)), ((96, 128), (96, 128)), ([8, 8], (8, 8)),
                                            ("224", (224, 224)), ("96x160", (96, 160)), (" 64X64 ", (64, 64)),
                                            ("Test", "test")])
def test_img_size_forms(good, expected):
    """The forms --img-size takes are taken from Python too ("96x160" had been refused there)."""
    assert normalize_img_size(good) == expected


@pytest.mark.parametrize("bad", [7, 0, (224,), (224, 224, 3), "224x", "abc", "1e3", (True, 8), 224.0, (8, 4), "8x4"])
def test_bad_img_sizes_are_refused(bad):
    with pytest.raises(BadInputError, match="image size"):
        resolve_model(TinyNet(), img_size=bad)


def test_a_model_of_the_wrong_type_is_refused():
    with pytest.raises(BadInputError, match="nn.Module"):
        resolve_model(42)


# --- seeded builds ---------------------------------------------------------------------------

def test_two_builds_of_a_timm_model_compute_the_same_thing():
    first, second = resolve_model("resnet18", img_size=64), resolve_model("resnet18", img_size=64)
    assert (second.name, second.input_size, second.param_count) == ("resnet18", (3, 64, 64), first.param_count)
    x = first.make_input(1, "cpu")
    assert torch.equal(first.module(x), second.module(x))


def test_building_a_timm_model_leaves_the_callers_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    resolve_model("resnet18")
    assert torch.equal(torch.rand(3), expected)


def test_a_model_that_cannot_be_built_on_its_gpu_is_built_on_the_cpu():
    """On this machine building under cuda:0 fails (no CUDA): the fallback must give the same model."""
    on_cpu = resolve_model("resnet18", img_size=64)
    fell_back = resolve_model("resnet18", img_size=64, device="cuda:0")
    assert next(fell_back.module.parameters()).device.type == "cpu"
    x = on_cpu.make_input(1, "cpu")
    assert torch.equal(fell_back.module(x), on_cpu.module(x))



def test_a_patch_size_that_does_not_tile_the_input_is_said():
    """A 230 px ViT-B/16 runs as a 224 px one (its patch embedding reads 14x14 patches): said in a note,
    not at a size the patches tile, nor for a model without a patch embedding."""
    note = ("vit_tiny_patch16_224's 16x16 px patches tile 224x224 of the 230x232 input: its last 6 rows and 8 columns "
            "of pixels are never read (a size divisible by 16 runs all of them)")
    assert note in resolve_model("vit_tiny_patch16_224", img_size=(230, 232)).notes
    assert not any("never read" in n for n in resolve_model("vit_tiny_patch16_224", img_size=240).notes)
    assert not any("never read" in n for n in resolve_model("resnet18", img_size=230).notes)


@pytest.mark.parametrize("name, size, unread", [("pvt_v2_b0", 64, 0), ("pit_b_224", 63, 0), ("pit_b_224", 64, 1)])
def test_patches_that_overlap_or_pad_are_said_to_leave_only_what_they_do_not_read(name, size, unread):
    """PVT-v2's 7 px patches at stride 4 with padding 3 read every pixel of a 64 px input, and PiT-B's
    14 px ones at stride 7 every pixel of 63 px (all but the last row and column at 64): a tiling by the
    patch size had said 1 and 7 (8 at 64) rows were never read. The count is checked by the gradient,
    which reaches every pixel the model reads."""
    spec = resolve_model(name, img_size=size)
    x = torch.randn(1, 3, size, size, requires_grad=True)
    spec.module(x).sum().backward()
    rows_read = int((x.grad.abs().sum((0, 1, 3)) > 0).sum())
    assert rows_read == size - unread
    notes = [n for n in spec.notes if "never read" in n]
    if unread:
        assert notes == [f"{name}'s 14x14 px patches at stride 7x7 read 63x63 of the 64x64 input: its last 1 rows and "
                         "1 columns of pixels are never read"]
    else:
        assert notes == []
