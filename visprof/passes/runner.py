"""One forward of a model under the requested precision, layout, device and latency regime.

Every pass drives the model through a ModelRunner, so all passes measure the same thing.

The latency regime says how a forward is run, because the way a loop is written changes the
latency (docs/measuring.md):

grad mode   ``inference_mode`` (the default: timm's benchmark.py since July 2025) or ``no_grad``
            (timm's benchmark.py before it, and so the pt240 CSVs; most inference scripts).
autocast    ``per-forward``: ``torch.autocast`` entered around each forward, as timm's
            benchmark.py does; autocast then re-casts the fp32 weights every forward.
            ``whole-loop``: entered once around all forwards (``with torch.no_grad(),
            torch.autocast(...)`` around a loop): autocast caches the weight casts, so only
            the first forward pays for them.
            ``model-cast``: no autocast; the model and input are cast to bf16/fp16 up front.
            ``off``: fp32 and tf32 run without autocast.

Contexts that span the loop (the grad mode, whole-loop autocast) are entered by
``with runner.session():``; visprof.profile runs every pass inside one session, so the
autocast cache of the whole-loop regime is filled once, by the first forward.
"""
from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import torch
from torch import nn

from visprof.base.errors import BadInputError
from visprof.base.tf32_switches import set_for_run
from visprof.passes.models import ModelSpec
from visprof.base.options import DEFAULT_AUTOCAST, DEFAULT_GRAD_MODE, autocast_at

_LOW_PRECISION = {"bf16": torch.bfloat16, "fp16": torch.float16}
_GRAD_MODES = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}


@dataclass(frozen=True)
class RunConfig:
    batch_size: int
    precision: str = "bf16"
    # The layout that runs, a bool: resolve_run makes it from the caller's True/False/None (not
    # given: a user's module's own layout) before any RunConfig is built.
    channels_last: bool = False
    compile: bool = False
    device: str = "cuda:0"
    grad_mode: str = DEFAULT_GRAD_MODE
    autocast: str = field(default=DEFAULT_AUTOCAST)

    def __post_init__(self) -> None:
        # fp32/tf32 have nothing to autocast to: the regime is "off" whatever was asked.
        object.__setattr__(self, "autocast", autocast_at(self.precision, self.autocast))

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")


def _copy_to_cast(module: nn.Module, name: str, precision: str) -> nn.Module:
    """A copy of a user's module for the model-cast regime; a module that cannot be copied (it
    holds a lock, a file, a CUDA stream) is refused in those terms: its failure had been named
    a failed forward, though no forward ran."""
    try:
        return copy.deepcopy(module)
    except Exception as exc:  # noqa: BLE001 - whatever a member's __deepcopy__ raises
        raise BadInputError(f"autocast='model-cast' runs a copy of {name} cast to {precision} (your module keeps its "
                            f"dtype), and it could not be copied: {type(exc).__name__}: {exc}; profile it with "
                            "autocast='per-forward' or 'whole-loop'") from exc


class ModelRunner:
    """Holds the model on its device, one fixed input batch, and the regime's contexts."""

    def __init__(self, spec: ModelSpec, config: RunConfig, input_mode=None):
        """``input_mode``: a mode (a FakeTensorMode) under which the input batch is made, so it
        has a shape and a dtype but no memory; the model is built as always."""
        self.spec = spec
        self.config = config
        self.device = torch.device(config.device)
        # fp32 means true fp32; tf32 is asked for explicitly (cuDNN enables it by default).
        self._saved_switches = set_for_run(tf32=config.precision == "tf32")
        try:
            self._build(spec, config, input_mode or contextlib.nullcontext())
        except BaseException:
            self.close()  # a refused or interrupted build leaves the switches as it found them
            raise

    def _build(self, spec: ModelSpec, config: RunConfig, input_mode) -> None:
        """The model on its device in the regime's dtype and layout, and its input batch."""
        memory_format = torch.channels_last if config.channels_last else torch.contiguous_format
        cast_to = _LOW_PRECISION[config.precision] if config.autocast == "model-cast" else None
        module = spec.module
        if cast_to is not None and spec.source == "module":
            module = _copy_to_cast(module, spec.name, config.precision)  # a user's own model keeps its dtype
        # Outside a caller's inference_mode: moved or cast there, the weights and the input would
        # be inference tensors, which a no_grad run dispatches differently and training refuses.
        with torch.inference_mode(False):
            model = module.to(self.device, dtype=cast_to, memory_format=memory_format).eval()
        self.eager_model = model
        # Compiled through visprof's Inductor backend, which records each kernel's ops and
        # modules (visprof.capture.compiled); None when not compiled.
        self.compile_recorder = None
        if config.compile:
            from visprof.capture.compiled import compile_model

            self.model, self.compile_recorder = compile_model(model)
        else:
            self.model = model
        with torch.inference_mode(False), input_mode:
            self.input = spec.make_input(config.batch_size, self.device, dtype=cast_to or torch.float32,
                                         channels_last=config.channels_last)
        self._sessions = 0

    def _autocast(self):
        return torch.autocast(device_type=self.device.type, dtype=_LOW_PRECISION[self.config.precision])

    @contextlib.contextmanager
    def session(self):
        """The contexts a user's loop would hold around all its forwards: the grad mode, and
        autocast in the whole-loop regime (its weight-cast cache lives as long as this)."""
        with contextlib.ExitStack() as stack:
            # The caller's own grad mode and autocast must not leak in: under a user's
            # inference_mode, no_grad alone would still run in inference mode, and under a user's
            # autocast an fp32 run would run cast, each labelled as the regime asked for.
            if self.config.grad_mode != "inference_mode":
                stack.enter_context(torch.inference_mode(False))
            stack.enter_context(_GRAD_MODES[self.config.grad_mode]())
            if self.config.autocast == "whole-loop":
                stack.enter_context(self._autocast())
            else:  # per-forward enters its own around each forward
                stack.enter_context(torch.autocast(device_type=self.device.type, enabled=False))
            self._sessions += 1
            try:
                yield self
            finally:
                self._sessions -= 1

    def __call__(self):
        if self._sessions:
            if self.config.autocast == "per-forward":
                with self._autocast():
                    return self.model(self.input)
            return self.model(self.input)
        if self.config.autocast == "whole-loop":
            raise RuntimeError("the whole-loop autocast regime runs forwards inside `with runner.session():`")
        with self.session():
            return self()

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
        """Puts the TF32 switches back as they were before this runner (once: a later call does not
        undo what the user set since)."""
        saved, self._saved_switches = self._saved_switches, None
        if saved is not None:
            saved.restore()
