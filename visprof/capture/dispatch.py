"""Running an op from inside a ``TorchDispatchMode`` as torch runs it without the mode.

Under ``torch.inference_mode`` the autograd keys are skipped, so a dispatch mode receives
composite ops (``CompositeImplicitAutograd``: ``conv2d.padding``, ``einsum``,
``upsample_nearest2d.vec``, ...) before they decompose. Torch runs the mode's handler with every
dispatch key above the Python key excluded, autocast's included, so the decomposition then runs
without autocast: the ops inside it are not cast as they are in a plain forward. On the CPU,
``einsum`` under bf16 autocast then runs in fp32 (tests/capture/test_dispatch.py). On the H200
convmixer's ``padding="same"`` depthwise convolution then mixed bf16 activations with fp32
weights and failed (bench/results/h200-optypes557-2026-12-03). hrnet_w48_ssld's upsampling in
bf16 instead of fp32 under a mode (bench/results/h200-checks-2026-12-03) has the same cause
(``upsample_nearest2d.vec`` is composite; only the op inside it has a CUDA autocast kernel), and
so has the bf16 ``pow`` of caformer and convformer (their head's squared ReLU calls
``torch.square``, composite around ``pow``, which CUDA's autocast runs in fp32): all three
reproduced on the CPU with CUDA's autocast policies installed (tests/capture/test_dispatch.py).

``call_as_unmoded`` re-enables autocast for such an op where it was on when the op was called
(torch's snapshot of the caller's dispatch state, taken before the mode ran), so the
decomposition is cast as in a plain forward. An op with an autocast kernel of its own runs it
again: it casts what is already cast, which changes nothing. Other ops are called as they are:
the mode sees them after autocast already did its work.
"""
from __future__ import annotations

from typing import Any

import torch

_AUTOCAST_KEYS = (("cuda", torch._C.DispatchKey.AutocastCUDA), ("cpu", torch._C.DispatchKey.AutocastCPU))
_composite: dict[Any, bool] = {}  # op -> has a CompositeImplicitAutograd kernel
# Both guards are in every torch visprof supports (>= 2.4); without them ops run as called.
_CAN_RESTORE = hasattr(torch._C, "_RestorePythonTLSSnapshot") and hasattr(torch._C, "_ForceDispatchKeyGuard")


def _is_composite(func: Any) -> bool:
    known = _composite.get(func)
    if known is None:
        try:
            known = torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")
        except (AttributeError, RuntimeError):  # not an aten-style overload (a higher-order op)
            known = False
        _composite[func] = known
    return known


def autocast_keys_at_call() -> list[Any]:
    """The autocast dispatch keys that were enabled where the op being handled was called."""
    with torch._C._RestorePythonTLSSnapshot():
        return [key for device, key in _AUTOCAST_KEYS if torch.is_autocast_enabled(device)]


def call_as_unmoded(func: Any, args: tuple, kwargs: dict, decompose: bool = False) -> Any:
    """``func(*args, **kwargs)`` from a ``__torch_dispatch__``, with autocast as the caller had it.

    ``decompose``: run a composite op's decomposition here rather than calling the op, for a
    mode that has another mode under it. Called, the op would reach that mode (a FakeTensorMode)
    whole, and it decomposes the op in its own handler, where autocast is off again."""
    if not _CAN_RESTORE or not _is_composite(func):
        return func(*args, **kwargs)
    keys = autocast_keys_at_call()
    if not keys:
        return func(*args, **kwargs)
    exclude = torch._C._dispatch_tls_local_exclude_set()
    for key in keys:
        exclude = exclude.remove(key)
    with torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), exclude):
        return func.decompose(*args, **kwargs) if decompose else func(*args, **kwargs)
