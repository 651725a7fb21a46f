"""A user's own ``nn.Module`` is left as it was given.

Running a module means putting it in eval mode, on the run's device, and in one memory layout
(its own unless the caller asks for another: ``weights_layout`` reads which it is in); for a timm
model visprof built, that is nothing to undo. A user's module is
theirs: after ``visprof.profile(model)`` on a GPU it must not sit on the GPU in eval mode, with
its training loop none the wiser. ``ModuleState.of(module)`` notes what a run changes, and
``restore`` puts it back in place (the same Parameter objects, so an optimizer holding them is
unaffected). The dtype needs no undoing: a model-cast run casts a copy.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import nn

from visprof.base.errors import BadInputError

__all__ = ["ModuleState", "is_conv", "kept_as_given", "weights_layout"]


@dataclass(frozen=True)
class ModuleState:
    # each submodule's flag, in module.modules() order; None where it has none (torch.jit.freeze's
    # module: reading it had raised an AttributeError out of profile())
    training: tuple[bool | None, ...]
    device: torch.device | None  # where all its tensors were; None where they were on several
    # each parameter's and buffer's strides, in _tensors order: a run converts every 4-d tensor to
    # one layout (NCHW, or channels-last when asked), whatever mix of layouts the user had
    strides: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, module: nn.Module) -> "ModuleState":
        tensors = _tensors(module)
        lazy = [name for name, t in _named_tensors(module) if nn.parameter.is_lazy(t)]
        if lazy:
            raise BadInputError(
                f"the model has lazy parameters not yet initialized ({', '.join(lazy[:3])}"
                f"{', ...' if len(lazy) > 3 else ''}): run one forward on an input of the size to "
                "profile first, so that they have their shapes")
        devices = {tensor.device for tensor in tensors}
        return cls(training=tuple(getattr(m, "training", None) for m in module.modules()),
                   device=devices.pop() if len(devices) == 1 else None,
                   strides=tuple(t.stride() for t in tensors))

    def restore(self, module: nn.Module) -> None:
        """Modes, device and layout as noted; a module whose structure changed meanwhile keeps its
        modes (they could no longer be matched to its submodules)."""
        submodules = list(module.modules())
        if len(submodules) == len(self.training):
            for submodule, training in zip(submodules, self.training):
                if training is not None:
                    submodule.training = training
        with torch.inference_mode(False):  # under a caller's, the weights would become inference tensors
            self._restore_tensors(module)

    def _restore_tensors(self, module: nn.Module) -> None:
        if self.device is not None and any(t.device != self.device for t in _tensors(module)):
            module.to(self.device)
        tensors = _tensors(module)
        if len(tensors) == len(self.strides):
            for tensor, strides in zip(tensors, self.strides):
                if tensor.stride() != strides and len(strides) == tensor.dim() and _dense(tensor.shape, strides):
                    # in place, so that the Parameter (and an optimizer holding it) is the same object
                    tensor.data = torch.empty_strided(tensor.shape, strides, dtype=tensor.dtype,
                                                      device=tensor.device).copy_(tensor.data)


@contextlib.contextmanager
def kept_as_given(state: ModuleState | None, module: nn.Module) -> Iterator[None]:
    """Restores ``module`` to ``state`` when the block ends, however it ends (no-op for None)."""
    try:
        yield
    finally:
        if state is not None:
            state.restore(module)


def weights_layout(module: nn.Module) -> str | None:
    """The memory layout ``module``'s convolution weights are in: "channels_last" (as
    ``module.to(memory_format=torch.channels_last)`` leaves them), "contiguous" (NCHW), "mixed", or
    None where no 4-d convolution weight tells (none at all, or only 1x1 and depthwise ones, whose
    strides are both layouts at once). Convolutions decide which kernels run, so their weights
    speak for the module."""
    layouts = set()
    for sub in module.modules():
        weight = getattr(sub, "weight", None)
        if not is_conv(sub, nn.Conv2d, nn.ConvTranspose2d) or not isinstance(weight, torch.Tensor) or weight.dim() != 4:
            continue
        nchw, nhwc = weight.is_contiguous(), weight.is_contiguous(memory_format=torch.channels_last)
        if nchw != nhwc:  # both: the strides say nothing; neither: a permutation of the user's own
            layouts.add("contiguous" if nchw else "channels_last")
    return layouts.pop() if len(layouts) == 1 else "mixed" if layouts else None


def is_conv(module: nn.Module, *classes: type[nn.Module]) -> bool:
    """Whether ``module`` is one of ``classes``, also inside TorchScript: torch.jit.script and trace turn
    each submodule into a RecursiveScriptModule that keeps only its class's name (``original_name``)
    and, traced, not even its in_channels; a scripted 1-channel model was fed 3 channels."""
    if isinstance(module, classes):
        return True
    return isinstance(module, torch.jit.ScriptModule) and isinstance(getattr(module, "weight", None), torch.Tensor) \
        and getattr(module, "original_name", None) in {cls.__name__ for cls in classes}


def _named_tensors(module: nn.Module) -> list[tuple[str, torch.Tensor]]:
    return [*module.named_parameters(), *module.named_buffers()]


def _tensors(module: nn.Module) -> list[torch.Tensor]:
    return [tensor for _, tensor in _named_tensors(module)]


def _dense(shape: torch.Size, strides: tuple[int, ...]) -> bool:
    """Whether ``strides`` lay a tensor of ``shape`` out without gaps or overlaps (NCHW, channels-last,
    any permutation); only such a layout can be made again with ``empty_strided``."""
    expected = 1
    for size, stride in sorted(((size, stride) for size, stride in zip(shape, strides) if size != 1),
                               key=lambda pair: pair[1]):
        if stride != expected:
            return False
        expected *= size
    return True
