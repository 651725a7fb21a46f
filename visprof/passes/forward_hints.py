"""Why a model's forward failed, in words the user can act on: the hint a ``ModelForwardError``
carries (``failure_hint``), and the refusal of a frozen TorchScript module whose graph keeps its
weights on another device than the run's (``check_graph_constants_device``).

torch's own messages name what happened ("Expected all tensors to be on the same device"),
not which tensor of the user's module or what to change; these read the module to say so.
"""
from __future__ import annotations

import itertools
import re

import torch
from torch import nn

from visprof.base.errors import BadInputError
from visprof.base.spelling import option
from visprof.capture.op_costs import is_frozen_script, script_constants

__all__ = ["check_graph_constants_device", "failure_hint"]


def failure_hint(cause: BaseException, module: nn.Module, name: str, *, user_module: bool, channels: int,
                 size_hint: str = "") -> str:
    """The likely reason ``module`` (named ``name``) failed its forward with ``cause``, and what
    to do; "" where none is known. ``size_hint`` (what the model was built for) goes with an error
    about sizes only: beside a dtype error it named a cause that was not. ``channels``: those of
    the input visprof fed. ``user_module``: a module the user gave (not one built from a name)."""
    hint = size_hint if _is_about_sizes(cause) else ""
    if user_module and _is_about_channels(cause, channels):
        hint = (f"visprof fed it {channels}-channel inputs; give the channels {name} takes "
                f"({option('in_chans', metavar='N')})")
    if user_module and _DEVICES_ERROR.search(str(cause)):
        hint = _devices_hint(module, name) or hint
    if _is_about_forwards_arguments(cause):
        hint = ("visprof.profile calls forward with one batch of images; for a forward that takes other "
                "inputs, run it yourself inside `with visprof.trace(model):`")
    if _is_torch_compiles(cause):
        hint = ("torch.compile failed to build the compiled program, not the model's own forward (a C++ compiler "
                f"missing or broken, CXX): profile it without {option('compile')}, or fix what the message names")
    return hint


def _is_torch_compiles(cause: BaseException) -> bool:
    """An error of Dynamo or Inductor (InductorError: InvalidCxxCompiler with a bad CXX), which had read
    as the model failing."""
    return any(type(error).__module__.startswith(("torch._inductor", "torch._dynamo"))
               for error in _chain(cause))


def _chain(error: BaseException | None):
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


# Words of the errors an input of the wrong size raises: timm's "Input height (288) doesn't match
# model (224)", torch's "mat1 and mat2 shapes cannot be multiplied", "The size of tensor a (7) must
# match the size of tensor b (9)", "shape '[1, 196, 768]' is invalid for input of size ...".
_SIZE_WORDS = ("size", "shape", "height", "width", "match", "dimension", "resolution")


def _is_about_forwards_arguments(cause: BaseException) -> bool:
    """Python's "Two.forward() missing 1 required positional argument: 'y'" (or "takes 1 positional ...")."""
    return isinstance(cause, TypeError) and "forward()" in str(cause) and "argument" in str(cause)


# torch's words when a convolution gets other channels than its weight takes: "Given groups=1, weight
# of size [16, 1, 3, 3], expected input[2, 16, 32, 32] to have 1 channels, but got 16 channels instead"
_CHANNELS_ERROR = re.compile(r"to have \d+ channels, but got (\d+) channels")


def _is_about_channels(cause: BaseException, fed: int) -> bool:
    """A convolution refused the channels of the input visprof fed (not those of an inner tensor)."""
    found = _CHANNELS_ERROR.search(str(cause))
    return found is not None and int(found.group(1)) == fed


# torch's words when an op gets tensors of two devices: "Expected all tensors to be on the same device,
# but found at least two devices, cuda:0 and cpu!", "Input type (torch.cuda.FloatTensor) and weight
# type (torch.FloatTensor) should be the same", "Tensor on device meta is not on the expected device cpu!"
_DEVICES_ERROR = re.compile(r"same device|two devices|expected device|Input type .* and weight type .* should be the same")


def _devices_hint(module: nn.Module, name: str) -> str:
    """What a forward that met tensors of two devices left behind, and how to move it; "" where
    neither a plain tensor attribute nor a TorchScript constant is on another device."""
    if unmoved := _unmoved_tensors(module):
        paths, there = ", ".join(path for path, _ in unmoved[:3]), unmoved[0][1]
        return (f"{paths}{' and more' if len(unmoved) > 3 else ''} of {name} "
                f"{'is a plain tensor attribute' if len(unmoved) == 1 else 'are plain tensor attributes'} on {there}, "
                f"which module.to() does not move: register {'it as a buffer' if len(unmoved) == 1 else 'them as buffers'} "
                "(self.register_buffer(name, tensor), persistent=False to keep it out of the state dict)")
    if there := _unmoved_constant_device(module):
        # A frozen module is refused before it runs (_check_graph_constants_device); a traced one may
        # move its literals itself, so it is named only once its forward has failed on them.
        return (f"{name} holds a TorchScript graph with tensor constants on {there} (a traced forward keeps the "
                f"tensors it read from plain attributes or closures as constants), which module.to() does not "
                f"move: trace it on the device it runs on, or register those tensors as buffers before tracing")
    return ""


def _parameters_device(module: nn.Module) -> torch.device | None:
    """The one device of ``module``'s parameters and buffers; None where there are none, or several."""
    devices = {t.device for t in itertools.chain(module.parameters(), module.buffers())}
    return devices.pop() if len(devices) == 1 else None


def _unmoved_constant_device(module: nn.Module) -> torch.device | None:
    """The device of a TorchScript constant in ``module`` (not 0-dim: torch mixes those with any
    device) that is not its parameters' device."""
    moved = _parameters_device(module)
    if moved is None:
        return None
    return next((t.device for t in script_constants(module) if t.dim() > 0 and t.device != moved), None)


def _unmoved_tensors(module: nn.Module) -> list[tuple[str, torch.device]]:
    """(path, device) of the tensors ``module`` holds as plain attributes, not parameters or buffers,
    on another device than its parameters: ``module.to(device)`` moves only those, so a mask kept as
    ``self.mask = torch.ones(...)`` stays on the CPU of a model run on a GPU."""
    moved = _parameters_device(module)
    if moved is None:
        return []
    return [(f"{path}.{name}" if path else name, value.device)
            for path, sub in module.named_modules() for name, value in vars(sub).items()
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.device != moved]


def _is_about_sizes(cause: BaseException) -> bool:
    text = str(cause).lower()
    return any(word in text for word in _SIZE_WORDS)


def check_graph_constants_device(module: nn.Module, name: str, device: str | torch.device | None) -> None:
    """BadInputError where frozen TorchScript graphs in ``module`` hold tensors on another device than the
    run's: ``module.to(device)`` moves parameters and buffers but not a graph's constants, where a
    frozen module keeps its weights, so a module frozen on the CPU and run on a GPU would fail its
    first forward on tensors of two devices, reported as the model's failure. A 0-dim constant may
    stay on the CPU: torch mixes those with tensors of any device. Only frozen modules' constants
    are read: a traced module's may be literals its graph moves to the input's device itself."""
    if device is None:
        return
    run = torch.device(device)
    frozen = [sub for sub in module.modules() if is_frozen_script(sub)]
    for tensor in (t for sub in frozen for t in script_constants(sub)):
        there = tensor.device
        if tensor.dim() == 0 or (there.type == run.type and (None in (run.index, there.index) or there.index == run.index)):
            continue
        if there.type == "meta":
            raise BadInputError(f"{name} holds a frozen TorchScript graph whose constants (its weights) are on the meta "
                                "device, which holds no data: freeze a module whose weights are materialized")
        raise BadInputError(
            f"{name} holds a frozen TorchScript graph whose constants (its weights) are on {there}, and moving a "
            f"module does not move a graph's constants, so it cannot run on {run}: freeze it there "
            f"(module.to('{run}') before torch.jit.freeze), or profile it with {option('device', there.type)}")
