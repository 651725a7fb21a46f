"""torch's fp32-precision (TF32) switches: set for one run, and put back as they were however it ends.

torch has two APIs over one state. The legacy one: ``torch.backends.cuda.matmul.allow_tf32``,
``torch.backends.cudnn.allow_tf32`` and ``torch.set_float32_matmul_precision``. The per-backend
one (torch 2.9 and later): ``fp32_precision`` on ``torch.backends`` and on its backends and ops.
Once the per-backend one has set what the legacy flags cannot say (``torch.backends.fp32_precision
= "tf32"``, say), torch refuses to read them ("you have used mix of the legacy and new APIs"); and
a legacy flag written back over a per-backend setting (the matmul flag after
``set_float32_matmul_precision("medium")``) leaves ``torch.get_float32_matmul_precision()`` refusing.

So a run sets each switch through an API that the user's state reads back through, writes only
what differs from what the run needs, and afterwards puts back every switch that reads otherwise
than before. This module imports torch: the passes and the capture use it, the CLI's checks do not.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

# The per-backend switches, parents before children: a child set to "none" reads its parent's
# precision, so a parent is put back before its children.
_PER_BACKEND = ("torch.backends", "torch.backends.cudnn", "torch.backends.mkldnn",
                "torch.backends.cuda.matmul", "torch.backends.cudnn.conv", "torch.backends.cudnn.rnn",
                "torch.backends.mkldnn.matmul", "torch.backends.mkldnn.conv", "torch.backends.mkldnn.rnn")
# The per-backend switches that the legacy allow_tf32 flags stand for, which a run sets.
_MATMUL = "torch.backends.cuda.matmul"
_CUDNN = ("torch.backends.cudnn.conv", "torch.backends.cudnn.rnn")


class Tf32SwitchError(RuntimeError):
    """torch refused a read or a write of its TF32 switches: visprof's fault (or torch's), never
    the model's, so it is not reported as a failed forward."""


def _switch(path: str) -> Any:
    """The object whose ``fp32_precision`` is the switch ``path``; None on a torch without it."""
    obj: Any = torch
    for name in path.split(".")[1:]:
        obj = getattr(obj, name, None)
    return obj if obj is not None and hasattr(obj, "fp32_precision") else None


def _readable(getter: Callable[[], Any]) -> Any:
    """What ``getter`` reads, or None where torch refuses to read it (a mix of the two APIs)."""
    try:
        return getter()
    except RuntimeError:
        return None


def _matmul_precision() -> str | None:
    return _readable(torch.get_float32_matmul_precision)


def _matmul_allow_tf32() -> bool | None:
    return _readable(lambda: torch.backends.cuda.matmul.allow_tf32)


def _cudnn_allow_tf32() -> bool | None:
    return _readable(lambda: torch.backends.cudnn.allow_tf32)


def _per_backend() -> dict[str, str]:
    """Each per-backend switch this torch has, and the precision it reads."""
    return {path: switch.fp32_precision for path in _PER_BACKEND if (switch := _switch(path)) is not None}


def tf32_in_use(op: str) -> bool:
    """Whether fp32 ``op`` ("matmul" or "conv") runs in TF32 on a CUDA device now: the per-backend
    switch where torch has it (the one torch itself reads), else the legacy flag."""
    switch = _switch(_MATMUL if op == "matmul" else _CUDNN[0])
    if switch is not None:
        return switch.fp32_precision == "tf32"
    return bool(torch.backends.cuda.matmul.allow_tf32 if op == "matmul" else torch.backends.cudnn.allow_tf32)


@dataclass(frozen=True)
class SavedSwitches:
    """What the switches read before a run (None: torch refused to read it); ``restore()`` puts
    back each one that reads otherwise."""

    matmul_precision: str | None
    matmul_allow_tf32: bool | None
    cudnn_allow_tf32: bool | None
    per_backend: dict[str, str]

    @classmethod
    def read(cls) -> SavedSwitches:
        return cls(_matmul_precision(), _matmul_allow_tf32(), _cudnn_allow_tf32(), _per_backend())

    def restore(self) -> None:
        try:
            changed = {path for path, precision in _per_backend().items() if self.per_backend.get(path) != precision}
            self._restore_legacy()
            for path, precision in self.per_backend.items():
                if path in changed or _switch(path).fp32_precision != precision:
                    _put_back(_switch(path), precision)
        except Exception as exc:  # noqa: BLE001 - whatever torch raises, said as what it is
            raise Tf32SwitchError(f"could not put torch's TF32 switches back as they were: {exc}") from exc

    def _restore_legacy(self) -> None:
        # Only a value that was read is written back, and only where it reads otherwise now: a
        # legacy write over a per-backend setting is what leaves torch refusing to read.
        # set_float32_matmul_precision restores the legacy matmul flag too (it is "not highest").
        if self.matmul_precision is not None and _matmul_precision() != self.matmul_precision:
            torch.set_float32_matmul_precision(self.matmul_precision)
        if self.cudnn_allow_tf32 is not None and _cudnn_allow_tf32() != self.cudnn_allow_tf32:
            torch.backends.cudnn.allow_tf32 = self.cudnn_allow_tf32


def _put_back(switch: Any, precision: str) -> None:
    """``precision`` into ``switch``: "none" first, so that a switch that read its parent's
    precision goes on following the parent (torch reads "none" as the parent's precision)."""
    switch.fp32_precision = "none"
    if switch.fp32_precision != precision:
        switch.fp32_precision = precision


def set_for_run(tf32: bool) -> SavedSwitches:
    """TF32 on for matmuls and cuDNN (``tf32``) or off, as one run needs; returns what to
    ``restore()`` once the run ends. If torch refuses, the switches are put back first."""
    saved = None
    try:
        saved = SavedSwitches.read()
        _set(tf32, saved)
        return saved
    except BaseException as exc:
        if saved is not None:
            saved.restore()
        if not isinstance(exc, Exception):
            raise  # an interrupt stays an interrupt
        raise Tf32SwitchError(f"could not set torch's TF32 switches {'on' if tf32 else 'off'} for the run: "
                              f"{exc}") from exc


def _set(tf32: bool, saved: SavedSwitches) -> None:
    # A legacy flag that reads is the user's state: written through it, torch keeps both APIs
    # agreeing. The matmul flag also moves get_float32_matmul_precision(), so it is used only
    # where that reads too, to be put back.
    if None not in (saved.matmul_allow_tf32, saved.matmul_precision) and saved.matmul_allow_tf32 != tf32:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    if saved.cudnn_allow_tf32 is not None and saved.cudnn_allow_tf32 != tf32:
        torch.backends.cudnn.allow_tf32 = tf32
    # Then each per-backend switch the run needs that still reads otherwise: those whose legacy
    # flag torch refused, and cuDNN's under a global "tf32" (the legacy flag's off writes "none",
    # which reads the global precision).
    for path in (_MATMUL, *_CUDNN):
        switch = _switch(path)
        if switch is not None and (switch.fp32_precision == "tf32") != tf32:
            switch.fp32_precision = "tf32" if tf32 else "ieee"
