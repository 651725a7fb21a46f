"""A user's own ``nn.Module`` is left as it was given.

Running a module means putting it in eval mode, on the run's device, and in channels-last
layout when asked; for a timm model visprof built, that is nothing to undo. A user's module is
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

__all__ = ["ModuleState", "kept_as_given"]


@dataclass(frozen=True)
class ModuleState:
    training: tuple[bool, ...]  # each submodule's flag, in module.modules() order
    device: torch.device | None  # where all its tensors were; None where they were on several
    standard_layout: bool  # every 4-d parameter and buffer was contiguous in NCHW order

    @classmethod
    def of(cls, module: nn.Module) -> "ModuleState":
        tensors = _tensors(module)
        devices = {tensor.device for tensor in tensors}
        return cls(training=tuple(m.training for m in module.modules()),
                   device=devices.pop() if len(devices) == 1 else None,
                   standard_layout=all(t.is_contiguous() for t in tensors if t.dim() == 4))

    def restore(self, module: nn.Module) -> None:
        """Modes, device and layout as noted; a module whose structure changed meanwhile keeps its
        modes (they could no longer be matched to its submodules)."""
        submodules = list(module.modules())
        if len(submodules) == len(self.training):
            for submodule, training in zip(submodules, self.training):
                submodule.training = training
        tensors = _tensors(module)
        if self.device is not None and any(t.device != self.device for t in tensors):
            module.to(self.device)
        if self.standard_layout and not all(t.is_contiguous() for t in _tensors(module) if t.dim() == 4):
            module.to(memory_format=torch.contiguous_format)


@contextlib.contextmanager
def kept_as_given(state: ModuleState | None, module: nn.Module) -> Iterator[None]:
    """Restores ``module`` to ``state`` when the block ends, however it ends (no-op for None)."""
    try:
        yield
    finally:
        if state is not None:
            state.restore(module)


def _tensors(module: nn.Module) -> list[torch.Tensor]:
    return [*module.parameters(), *module.buffers()]
