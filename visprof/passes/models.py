"""Model and input construction: a timm name or an ``nn.Module`` becomes a ``ModelSpec``.

The spec fixes everything the passes must agree on (the module in eval mode, the input
size, a seeded input). timm models are built with a seeded init, so two builds of one name
compute the same thing. timm is imported lazily: its import costs about a second.
"""
from __future__ import annotations

import contextlib
import difflib
import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch import nn

from visprof.base.errors import BadInputError, ModelForwardError, UnknownModelError, error_text
from visprof.base.sizes import normalize_img_size, validate_batch_size
from visprof.base.spelling import option
from visprof.base.timm_import import import_timm
from visprof.capture.op_costs import is_frozen_script
from visprof.passes.forward_hints import check_graph_constants_device, failure_hint
from visprof.passes.user_module import ModuleState, is_conv, weights_layout

DEFAULT_INPUT_SIZE = (3, 224, 224)
# Same seed for every pass, so the timing, attributed and memory passes see identical data
# (data-dependent kernels, e.g. sorting or nonzero, would otherwise differ between passes).
INPUT_SEED = 0
# Names users copy from the Hugging Face hub page of a timm model; visprof never downloads,
# so these are read as the timm architecture (and pretrained tag) they name.
_TIMM_HUB_PREFIXES = ("hf-hub:timm/", "hf_hub:timm/", "timm/")
_MAX_SUGGESTIONS = 5


# --- the spec ----------------------------------------------------------------------------

@dataclass
class ModelSpec:
    name: str  # timm name as created ("resnet50", "vit_base_patch16_224.augreg_in21k") or class name
    source: str  # "timm" | "module"
    module: nn.Module  # in eval mode
    input_size: tuple[int, int, int]  # (C, H, W) of the inputs the passes feed
    param_count: int | None  # None where unknown: a frozen TorchScript module's weights are constants
    default_input_size: tuple[int, int, int] = DEFAULT_INPUT_SIZE  # what the model was built for
    notes: list[str] = field(default_factory=list)  # facts worth showing in a report
    # How resolve_model was called (a sweep records it with the result).
    resolve_kwargs: dict[str, Any] = field(default_factory=dict)
    # Said when the forward pass fails: the likely reason (e.g. a size the model can't take).
    forward_hint: str = ""
    # Where the input size came from: "test" (the pretrained config's test size, as timm's
    # benchmark.py uses), "config" (the one size of a config that names no test size, which
    # benchmark.py feeds), "train" (its training input_size), "requested", "built" (the size a
    # user's module records it was built for, where its config names another) or "assumed".
    img_size_origin: str = "requested"
    # A user's own module as it was given (modes, device, layout), put back after the run;
    # None for a model visprof built.
    user_state: ModuleState | None = None
    # The user gave torch.compile's wrapper (OptimizedModule): ``module`` is the module inside
    # it, and the run is a compiled one (resolve_run sets compile).
    compiled: bool = False
    # A user's module's own memory layout (visprof.passes.user_module.weights_layout), which a run
    # keeps unless asked for another; None for a model visprof built, or where its weights don't tell.
    layout: str | None = None

    def input_shape(self, batch_size: int) -> tuple[int, int, int, int]:
        return (validate_batch_size(batch_size), *self.input_size)

    def make_input(
        self,
        batch_size: int,
        device: str | torch.device,
        dtype: torch.dtype = torch.float32,
        channels_last: bool = False,
    ) -> torch.Tensor:
        """Random normal input of ``input_shape(batch_size)``, identical on every call."""
        if not dtype.is_floating_point:
            raise BadInputError(f"input dtype must be a floating-point type, got {dtype}")
        device = torch.device(device)
        generator = torch.Generator(device=device).manual_seed(INPUT_SEED)
        # Drawn in fp32, then cast, so every precision sees the same values (rounded).
        x = torch.randn(self.input_shape(batch_size), generator=generator, device=device)
        x = x.to(dtype)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def forward_error(self, batch_size: int, cause: BaseException) -> ModelForwardError:
        """The error to raise (``raise spec.forward_error(n, e) from e``) when forward fails, with
        the likely reason as its hint (``forward_hints.failure_hint``)."""
        hint = failure_hint(cause, self.module, self.name, user_module=self.source == "module",
                            channels=self.input_size[0], size_hint=self.forward_hint)
        return ModelForwardError(self.name, (batch_size, *self.input_size), cause, hint)


# --- resolution --------------------------------------------------------------------------

def resolve_model(model_or_name: str | nn.Module, *, img_size: Any = None, pretrained: bool = False,
                  device: str | torch.device | None = None, in_chans: int | None = None) -> ModelSpec:
    """A ``ModelSpec`` for a timm model name or an ``nn.Module``.

    ``img_size`` (int or (H, W)) overrides the model's default input size. timm models
    that take ``img_size`` (ViTs, Swin, ...) are built for it; others are built as usual
    and fed inputs of that size. ``device``: a timm model to be run on a GPU is built there
    (see ``_create_timm_model``). ``in_chans``: the input channels of a module of the user's
    (default: ``_module_channels``); a timm name is built with its own.
    """
    size = normalize_img_size(img_size)
    if in_chans is not None:
        in_chans = _checked_channels(in_chans, model_or_name)
    if isinstance(model_or_name, nn.Module):
        return _spec_for_module(model_or_name, size, in_chans, device)
    if isinstance(model_or_name, str):
        return _spec_for_timm(model_or_name, size, pretrained, device)
    raise BadInputError(
        f"model must be a timm model name or a torch.nn.Module, got {type(model_or_name).__name__}"
    )


def _spec_for_timm(requested: str, size: tuple[int, int] | str | None, pretrained: bool, device=None) -> ModelSpec:
    name = timm_name(requested)
    named = size if isinstance(size, str) else None
    explicit = None if named or size is None else size
    module, took_img_size = _create_timm_model(name, explicit, pretrained, device)
    default = _cfg_input_size(module, "train") or DEFAULT_INPUT_SIZE
    notes, hint = [], ""
    if explicit is not None and not took_img_size and explicit != default[1:]:
        notes.append(f"{name} does not take img_size: built for {_fmt(default[1:])}, fed {_fmt(explicit)} inputs")
        hint = f"{name} was built for {_fmt(default[1:])} inputs and does not take img_size"
    if explicit is not None:
        input_size, origin = (default[0], *explicit), "requested"
        notes += _unread_pixels_note(name, module, explicit)
    else:
        origin = _named_origin(module, named)
        input_size = _cfg_input_size(module, named or "test") or default
        if _cfg_input_size(module, "train") is None:
            origin = "assumed"
        elif input_size != default:
            hint = f"{name} was built for {_fmt(default[1:])} inputs and is fed its test size {_fmt(input_size[1:])}"
    return ModelSpec(
        name=name,
        source="timm",
        module=module.eval(),
        input_size=input_size,
        param_count=count_parameters(module),
        default_input_size=default,
        notes=notes,
        resolve_kwargs={"img_size": size, "pretrained": pretrained},
        forward_hint=hint,
        img_size_origin=origin,
    )


def _unread_pixels_note(name: str, module: nn.Module, size: tuple[int, int]) -> list[str]:
    """A patch embedding whose patches do not tile the input reads none of the pixels left over
    (timm's PatchEmbed unless it pads): a 230 px ViT-B/16 runs as a 224 px one, which had gone
    unsaid beside a size the user chose. Read from the embedding's convolution (kernel, stride,
    padding): patches that overlap or pad (PVT-v2's 7 px at stride 4, PiT's 14 px at stride 7) read
    pixels a tiling by the patch size leaves out, and had been said to read none of them."""
    embed = getattr(module, "patch_embed", None)
    # its one convolution (timm's PatchEmbed.proj, PiT's ConvEmbedding.conv); a stem of several is not read here
    convs = [m for m in embed.modules() if isinstance(m, nn.Conv2d)] if isinstance(embed, nn.Module) else []
    conv = convs[0] if len(convs) == 1 else None
    if (conv is None or getattr(embed, "dynamic_img_pad", False)
            or not isinstance(conv.padding, tuple) or conv.dilation != (1, 1)):
        return []
    read = tuple(_pixels_read(side, k, st, pad) for side, k, st, pad in zip(size, conv.kernel_size, conv.stride,
                                                                             conv.padding))
    if read == tuple(size):
        return []
    kernel, stride = conv.kernel_size, conv.stride
    tiling = stride == kernel and conv.padding == (0, 0)
    reach = f"tile {_fmt(read)}" if tiling else f"at stride {_fmt(stride)} read {_fmt(read)}"
    return [f"{name}'s {_fmt(kernel)} px patches {reach} of the {_fmt(size)} input: its last {size[0] - read[0]} rows "
            f"and {size[1] - read[1]} columns of pixels are never read"
            + (f" (a size divisible by {kernel[0]} runs all of them)" if tiling else "")]


def _pixels_read(side: int, kernel: int, stride: int, padding: int) -> int:
    """How many of a side's pixels a convolution reads: up to the last window's end, less the padding."""
    windows = (side + 2 * padding - kernel) // stride + 1
    return max(0, min(side, (windows - 1) * stride + kernel - padding))


def _compiled_original(module: nn.Module) -> nn.Module | None:
    """The module inside torch.compile's wrapper (torch._dynamo's OptimizedModule), else None."""
    inner = getattr(module, "_orig_mod", None)
    return inner if type(module).__name__ == "OptimizedModule" and isinstance(inner, nn.Module) else None


def _checked_channels(in_chans: Any, model: Any) -> int:
    """``in_chans`` as an int >= 1, for a module: a timm name's channels are the ones timm builds it
    with, and visprof joins its numbers with timm's published ones, which are for those."""
    if isinstance(model, str):
        raise BadInputError(f"in_chans is for a module of yours; build {model} with the channels you want "
                            f"(timm.create_model({model!r}, in_chans=N)) and profile that module")
    if isinstance(in_chans, bool) or not isinstance(in_chans, int) or in_chans < 1:
        raise BadInputError(f"in_chans must be an integer >= 1, got {in_chans!r}")
    return in_chans


# Wrappers that run replicas of their ``module`` on several devices.
_PARALLEL_WRAPPERS = (nn.DataParallel, nn.parallel.DistributedDataParallel)


def _unwrapped(module: nn.Module) -> tuple[nn.Module, bool, str | None]:
    """The module a run profiles: ``module`` without torch.compile's wrapper and DataParallel's or
    DistributedDataParallel's, in any order; whether torch.compile's was among them, and the
    class name of the parallel one (None without one)."""
    compiled, parallel = False, None
    while True:
        original = _compiled_original(module)
        if original is not None:
            module, compiled = original, True
        elif isinstance(module, _PARALLEL_WRAPPERS):
            parallel = parallel or type(module).__name__
            module = module.module
        else:
            return module, compiled, parallel


def _spec_for_module(module: nn.Module, size: tuple[int, int] | str | None, in_chans: int | None = None,
                     device: str | torch.device | None = None) -> ModelSpec:
    # A torch.compile'd module was profiled as an eager run named "OptimizedModule", its modules
    # "_orig_mod.*": the run is of the module inside, compiled as visprof compiles every run.
    # A DataParallel one was headed "DataParallel", its modules "module.*": the run is of the
    # module inside, on the one device visprof profiles.
    module, compiled, parallel = _unwrapped(module)
    name = module_name(module)
    named = size if isinstance(size, str) else None
    size = None if named else size
    notes = []
    if any(t.is_meta for t in itertools.chain(module.parameters(), module.buffers())):
        raise BadInputError(f"{name}'s weights are on the meta device, which holds no data: materialize them before "
                            "profiling (module.to_empty(device='cpu'), then load a state dict)")
    if compiled:
        notes.append(f"{name} came compiled (torch.compile): visprof profiles the module inside, compiled again "
                     "with torch.compile's defaults (compile=True); options given to torch.compile are not used")
    if parallel:
        notes.append(f"{name} came wrapped in {parallel}, which runs replicas of it on several devices: visprof profiles "
                     f"the {name} inside, on one device with the whole batch; what {parallel} adds (scattering "
                     "inputs, copying weights and buffers to the replicas, gathering outputs) is not measured")
    if isinstance(module, torch.jit.ScriptModule):  # the report had no module table, and said nothing why
        notes.append(f"{name} is TorchScript (torch.jit.script or trace): its submodules run inside TorchScript, which "
                     "calls no Python module hooks, so its time is split by op and category but not by module")
    check_graph_constants_device(module, name, device)
    if is_frozen_script(module):  # the result had said 0 parameters
        notes.append(f"{name} is frozen TorchScript (torch.jit.freeze): its weights are constants in its graph, not "
                     "parameters, so its parameter count is unknown; the bytes count those constants as weights")
    own_size, origin = _module_input_size(module, named)
    size, origin = (own_size, origin) if size is None else (size, "requested")
    channels = in_chans or _module_channels(module)
    if origin == "assumed":
        notes.append(f"{name} has no default_cfg; assuming {channels}x{_fmt(size)} inputs "
                     f"(pass {option('img_size')} to change)")
    input_size = (channels, *size)
    user_state = ModuleState.of(module)  # before eval() below, the first change a run makes
    if any(getattr(sub, "training", False) for sub in module.modules()):  # eval() below had changed it without a word
        notes.append(f"{name} came in training mode: profiled in eval mode (dropout off, batch norm on its running "
                     "statistics) and given back in training mode")
    return ModelSpec(
        name=name,
        source="module",
        module=module.eval(),
        input_size=input_size,
        param_count=count_parameters(module),
        default_input_size=(channels, *(_built_size(module) or _cfg_train_size(module) or own_size)),
        notes=notes,
        # The resolved size, so a rebuilt spec feeds the same input even without a cfg.
        resolve_kwargs={"img_size": input_size[1:]},
        forward_hint=_size_hint(module, name, size, origin),
        img_size_origin=origin,
        user_state=user_state,
        compiled=compiled,
        layout=weights_layout(module),
    )


# Why a module given no size was fed the one it was (ModelSpec.img_size_origin), for the size hint.
_ORIGIN_REASONS = {"test": "its pretrained config's test size", "train": "its pretrained config's training size",
                   "config": "its pretrained config's size (it names no test size)",
                   "built": "the size it records it was built for",
                   "assumed": "assumed, as it has no pretrained config"}


def _module_input_size(module: nn.Module, named: str | None) -> tuple[tuple[int, int], str]:
    """The (H, W) to feed a user's module given no size (``named``: "test" or "train", or None), and
    its origin. timm leaves a model's pretrained config at the architecture's size when the model is
    built with ``img_size=`` (``vit_tiny_patch16_224`` built for 160 still says 224, and fails on
    224): where the module records a size the config does not name, the config describes another
    model and the recorded size is the one it takes. A named size asks for the config's, as it is."""
    cfg = _cfg_input_size(module, named or "test")
    built = _built_size(module)
    if built is not None and (cfg is None or (named is None and built != _cfg_train_size(module))):
        return built, "built"
    if cfg is not None:
        return cfg[1:], _named_origin(module, named)
    return DEFAULT_INPUT_SIZE[1:], "assumed"


def _named_origin(module: nn.Module, named: str | None) -> str:
    """The origin of the config size fed for ``named`` (None: the default, the test size): "test" only
    where the config names a test size; "config" where it names one size, which timm's benchmark.py
    feeds as its test size (vit_base_patch16_224's header said "test size" of a config that has none)."""
    if named == "train":
        return "train"
    return "test" if (_pretrained_cfg(module) or {}).get("test_input_size") else "config"


def _module_channels(module: nn.Module) -> int:
    """The input channels a user's module takes."""
    cfg = _cfg_input_size(module)
    if cfg is None:
        return _first_conv_in_channels(module) or DEFAULT_INPUT_SIZE[0]
    # timm keeps the pretrained config's 3 channels for a model built with in_chans=1 (grayscale)
    # or 4 (RGBD); the model itself says what it takes
    channels = getattr(module, "in_chans", None)
    return channels if isinstance(channels, int) and channels > 0 else cfg[0]


def _size_hint(module: nn.Module, name: str, size: tuple[int, int], origin: str) -> str:
    """What a size error on the ``size`` fed (``origin``: ModelSpec.img_size_origin) is blamed on: the
    size the module records it was built for; given no size, the remedy, in the caller's terms; else
    the size its pretrained config names, which is not always what it was built for (timm records none
    for a LeViT built with img_size=), so it is said as the config's."""
    built, train = _built_size(module), _cfg_train_size(module)
    if built is not None and size != built:
        return f"{name} was built for {_fmt(built)} inputs"
    if origin != "requested":
        return (f"visprof fed it {_fmt(size)} inputs, {_ORIGIN_REASONS[origin]}; give the size it takes "
                f"({option('img_size', metavar='N')})")
    if built is None and train is not None and size != train:
        return f"{name}'s pretrained config is for {_fmt(train)} inputs"
    return ""


def _cfg_train_size(module: nn.Module) -> tuple[int, int] | None:
    cfg = _cfg_input_size(module, "train")
    return cfg[1:] if cfg is not None else None


def _built_size(module: nn.Module) -> tuple[int, int] | None:
    """The (H, W) a module records it was built for, where timm's models keep it: ViT-like models
    (ViT, DeiT, BEiT, EVA, Swin, PiT, XCiT) on their patch embedding, ``patch_embed.img_size``, the
    size its forward checks; MaxViT, EfficientViT (MSRA) and Swin-V2-CR on the model, ``img_size``.
    Models that keep none (CNNs, LeViT, TNT, CoaT) are fed their config's size."""
    for owner in (getattr(module, "patch_embed", None), module):
        size = _as_hw(getattr(owner, "img_size", None))
        if size is not None:
            return size
    return None


def _as_hw(value: Any) -> tuple[int, int] | None:
    """(H, W) from an int or a pair of ints > 0, else None (a model's own attribute of that name
    may hold anything)."""
    if _is_size(value):
        return value, value
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(map(_is_size, value)):
        return int(value[0]), int(value[1])
    return None


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


# The weights' dtype a module arrives in -> the precision that runs it as it is.
_PRECISION_OF_DTYPE = {torch.bfloat16: "bf16", torch.float16: "fp16"}


def _floating_dtypes(model: nn.Module) -> set[torch.dtype]:
    return {p.dtype for p in itertools.chain(model.parameters(), model.buffers()) if p.is_floating_point()}


def weights_precision(model: Any) -> str | None:
    """"bf16" or "fp16" for a module whose floating weights are all of that dtype, else None."""
    if not isinstance(model, nn.Module):
        return None
    dtypes = _floating_dtypes(model)
    return _PRECISION_OF_DTYPE.get(dtypes.pop()) if len(dtypes) == 1 else None


def check_weights_dtype(model: Any, precision: str) -> None:
    """A user's module whose weights are not float32 is refused where its inputs would not match
    them: fed float32 at fp32, a bf16 module failed in its first layer as "model failed on an input".
    Checked before the module is resolved, which puts it in eval mode."""
    if not isinstance(model, nn.Module):
        return  # a timm name: visprof builds it in float32
    name = module_name(_unwrapped(model)[0])
    dtypes = _floating_dtypes(model)
    if len(dtypes) != 1 or dtypes == {torch.float32}:
        return  # float32, no floating weights, or a mix the user made on purpose
    (dtype,) = dtypes
    matching = _PRECISION_OF_DTYPE.get(dtype)
    if matching is None:
        raise BadInputError(f"{name}'s weights are {dtype}, and visprof runs fp32, tf32, bf16 or fp16: "
                            "cast it to float32 first (module.float())")
    if precision != matching:
        raise BadInputError(f"{name}'s weights are {dtype}, which precision {precision} does not feed: profile it "
                            f"at precision {matching} ({option('precision', matching)}), or cast it to float32 first "
                            "(module.float())")


def timm_name(requested: str) -> str:
    """The name to give ``timm.create_model`` for ``requested``, else ``UnknownModelError``.

    Accepts hub-style prefixes (``timm/``, ``hf-hub:timm/``) and pretrained tags
    (``arch.tag``). A known tag is kept, since it selects the pretrained config, which
    sets the default input size (``convnext_tiny.fb_in22k_ft_in1k_384`` is 384x384).
    """
    timm = import_timm()

    text = requested.strip()
    for prefix in _TIMM_HUB_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    else:
        if ":" in text or "/" in text:
            raise UnknownModelError(
                requested, detail="visprof builds models from timm's registry by name and does not download from hubs"
            )
    arch, _, tag = text.partition(".")
    if not timm.is_model(arch) and timm.is_model(arch.lower()):
        arch = arch.lower()
    if not timm.is_model(arch):
        raise UnknownModelError(requested, close_matches(arch.lower(), timm.list_models()))
    if not tag:
        return arch
    tagged = timm.list_pretrained(f"{arch}.*")
    if f"{arch}.{tag}" in tagged:
        return f"{arch}.{tag}"
    raise UnknownModelError(
        requested, close_matches(f"{arch}.{tag}", tagged), detail=f"{arch} has no pretrained tag {tag!r}"
    )


def close_matches(word: str, candidates: Sequence[str]) -> list[str]:
    return difflib.get_close_matches(word, candidates, n=_MAX_SUGGESTIONS, cutoff=0.6)


def _create_timm_model(name: str, size: tuple[int, int] | None, pretrained: bool,
                       device: str | torch.device | None = None) -> tuple[nn.Module, bool]:
    """Build ``name``; returns (module, whether it was built for ``size``).

    The random init is seeded (without disturbing the caller's RNG), so two builds on one
    device compute the same thing. For a CUDA ``device`` (without pretrained weights) the
    model is built there, under ``with torch.device(...)``: its weights are initialised by
    GPU kernels instead of the CPU. On the 2-GPU H200 machine CPU initialisation took a median
    0.5 s of each profile, and 1.3 s once two sweep workers shared the host's cores
    (bench/results/h200x2-sweep-1). A model whose construction cannot run there (host-only
    code in an ``__init__``) is built on the CPU, as before.

    A model built on the GPU then goes to the host and back, as ``timm.create_model(name).cuda()``
    leaves it: its initialisation's temporaries interleave with the weights, and where the
    weights lie in the caching allocator's segments decides how much a forward reserves. The
    round trip lays them out as a plain script's ``.cuda()`` does (their reserved peaks then
    match: bench/results/h200-s17-memory), for the cost of copying the weights twice.
    """
    target = torch.device(device) if device is not None else None
    if target is not None and target.type == "cuda" and not pretrained:
        try:
            with torch.random.fork_rng(devices=[target.index or 0], device_type="cuda"), _torch_defaults(target):
                torch.manual_seed(INPUT_SEED)
                module, took_size = _create_timm_model_unseeded(name, size, pretrained)
            return _laid_out_as_copied(module, target), took_size
        except BadInputError:
            raise  # the size, not the device: the CPU would refuse it too
        except Exception:  # noqa: BLE001 - construction that needs the host: build there
            pass
    with torch.random.fork_rng(devices=[]), _torch_defaults(torch.device("cpu")):
        torch.manual_seed(INPUT_SEED)
        return _create_timm_model_unseeded(name, size, pretrained)


@contextlib.contextmanager
def _torch_defaults(device: torch.device):
    """torch's default dtype (float32) and ``device`` while a timm model is built, as in timm's
    benchmark.py: a caller's ``torch.set_default_dtype(torch.float64)`` built float64 weights that
    the float32 input then failed on, and ``with torch.device("meta")`` weights with no data."""
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        with device:
            yield
    finally:
        torch.set_default_dtype(dtype)


def _laid_out_as_copied(module: nn.Module, device: torch.device) -> nn.Module:
    """``module``'s tensors reallocated on ``device`` in the order ``.to(device)`` of a host
    model allocates them, in segments of their own (see ``_create_timm_model``)."""
    module.cpu()
    torch.cuda.empty_cache()  # the segments the build used go back: the copies start afresh
    return module.to(device)


def _create_timm_model_unseeded(name: str, size: tuple[int, int] | None, pretrained: bool) -> tuple[nn.Module, bool]:
    timm = import_timm()

    if size is None:
        return timm.create_model(name, pretrained=pretrained), False
    img_size = size[0] if size[0] == size[1] else size
    try:
        return timm.create_model(name, pretrained=pretrained, img_size=img_size), True
    except TypeError as exc:
        # CNNs (ResNet, EfficientNet, ...) reject the keyword before building anything;
        # they are fed the requested size as is.
        if "img_size" not in str(exc):
            raise _build_error(name, size, exc) from exc
    except Exception as exc:  # e.g. a size not divisible by the patch or window size
        raise _build_error(name, size, exc) from exc
    return timm.create_model(name, pretrained=pretrained), False


def _build_error(name: str, size: tuple[int, int], exc: BaseException) -> BadInputError:
    return BadInputError(f"timm could not build {name} for {_fmt(size)} inputs: {error_text(exc)}")


def _cfg_input_size(module: nn.Module, which: str = "test") -> tuple[int, int, int] | None:
    """(C, H, W) from a timm-made module's pretrained_cfg/default_cfg, if it has one: its
    ``test_input_size`` where it has one and ``which`` is "test" (what timm's benchmark.py feeds:
    ``resolve_data_config(..., use_test_size=True)``), else its training ``input_size``."""
    cfg = _pretrained_cfg(module)
    if cfg is None:
        return None
    c, h, w = cfg.get("test_input_size") if which == "test" and cfg.get("test_input_size") else cfg["input_size"]
    return int(c), int(h), int(w)


def _pretrained_cfg(module: nn.Module) -> dict | None:
    """A timm-made module's pretrained_cfg (or older timm's default_cfg) that names an input size; else None."""
    for attr in ("pretrained_cfg", "default_cfg"):
        cfg = getattr(module, attr, None)
        if isinstance(cfg, dict) and cfg.get("input_size"):
            return cfg
    return None


def module_name(module: nn.Module) -> str:
    """The class name of a user's module, as its author wrote it: TorchScript's wrapper classes
    (RecursiveScriptModule, TopLevelTracedModule) keep it as ``original_name``."""
    original = getattr(module, "original_name", None) if isinstance(module, torch.jit.ScriptModule) else None
    return original if isinstance(original, str) and original else type(module).__name__


def _first_conv_in_channels(module: nn.Module) -> int | None:
    """The input channels of the first 2-D convolution, a transposed one too (a decoder or a
    generator fed a feature map: its 32 channels had been fed 3)."""
    for sub in module.modules():
        if is_conv(sub, nn.Conv2d, nn.ConvTranspose2d):
            in_channels = getattr(sub, "in_channels", None)
            if isinstance(in_channels, int):
                return in_channels
            # torch.jit.trace keeps no in_channels: the weight's (out, in / groups, kH, kW) with groups 1, as a
            # model's first convolution has; a transposed convolution's is (in, out / groups, kH, kW)
            return sub.weight.shape[0 if is_conv(sub, nn.ConvTranspose2d) else 1]
    return None


def count_parameters(module: nn.Module) -> int | None:
    """None for a frozen TorchScript module: its weights are no longer parameters."""
    if is_frozen_script(module):
        return None
    # Lazy modules have no shape until their first forward; they count as 0 until then.
    return sum(p.numel() for p in module.parameters() if not nn.parameter.is_lazy(p))


def _fmt(hw: Sequence[int]) -> str:
    return f"{hw[0]}x{hw[1]}"
