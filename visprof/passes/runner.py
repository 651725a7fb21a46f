"""One forward of a model under the requested precision, layout and device.

Every pass drives the model through a ModelRunner, so all passes measure the same thing.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from visprof.models import ModelSpec

_AUTOCAST_DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class RunConfig:
    batch_size: int
    precision: str = "bf16"
    channels_last: bool = False
    compile: bool = False
    device: str = "cuda:0"

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")


class ModelRunner:
    """Holds the model on its device, one fixed input batch, and the precision context."""

    def __init__(self, spec: ModelSpec, config: RunConfig):
        self.spec = spec
        self.config = config
        self.device = torch.device(config.device)
        self._saved_tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        # fp32 means true fp32; tf32 is asked for explicitly (cuDNN enables it by default).
        allow_tf32 = config.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
        memory_format = torch.channels_last if config.channels_last else torch.contiguous_format
        model = spec.module.to(self.device, memory_format=memory_format).eval()
        self.eager_model = model
        # Compiled through visprof's Inductor backend, which records each kernel's ops and
        # modules (visprof.compiled); None when not compiled.
        self.compile_recorder = None
        if config.compile:
            from visprof.compiled import compile_model

            self.model, self.compile_recorder = compile_model(model)
        else:
            self.model = model
        self.input = spec.make_input(config.batch_size, self.device, channels_last=config.channels_last)

    def autocast(self):
        dtype = _AUTOCAST_DTYPE.get(self.config.precision)
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def __call__(self):
        with torch.inference_mode(), self.autocast():
            return self.model(self.input)

    @contextlib.contextmanager
    def eager(self):
        """Run the uncompiled model inside: op capture (a dispatch mode, module hooks) makes a
        compiled model run eagerly anyway, and calling it with module hooks makes torch warn."""
        compiled, self.model = self.model, self.eager_model
        try:
            yield self
        finally:
            self.model = compiled

    def sync(self) -> None:
        if self.config.is_cuda:
            torch.cuda.synchronize(self.device)

    def stream(self):
        return torch.cuda.current_stream(self.device) if self.config.is_cuda else None

    def close(self) -> None:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = self._saved_tf32
