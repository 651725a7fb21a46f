"""torch's TF32 switches read back after visprof.profile as before it, however the run ends and
through whichever of torch's two APIs the user set them.

Before, visprof read and wrote the legacy ``allow_tf32`` flags only: after a user's
``torch.backends.fp32_precision = "tf32"`` (torch's per-backend API) every profile() failed as
a ModelForwardError, torch refusing to read them; after ``set_float32_matmul_precision("medium")``
one profile() left ``torch.get_float32_matmul_precision()`` raising; and a refused or interrupted
profile() left the switches as the run had set them.
"""
from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

import visprof
from visprof.base.errors import BadInputError, ModelForwardError

PER_BACKEND = ("fp32_precision", "cuda.matmul.fp32_precision", "cudnn.fp32_precision", "cudnn.conv.fp32_precision",
               "cudnn.rnn.fp32_precision", "mkldnn.fp32_precision", "mkldnn.matmul.fp32_precision",
               "mkldnn.conv.fp32_precision", "mkldnn.rnn.fp32_precision")
LEGACY = ("cuda.matmul.allow_tf32", "cudnn.allow_tf32")
HAS_PER_BACKEND_API = hasattr(torch.backends, "fp32_precision")
needs_per_backend_api = pytest.mark.skipif(not HAS_PER_BACKEND_API, reason="torch without fp32_precision (< 2.9)")


def _read(path: str):
    """What ``torch.backends.<path>`` reads; the error's type where torch refuses; absent where
    this torch has no such switch."""
    obj = torch.backends
    try:
        for name in path.split("."):
            obj = getattr(obj, name)
        return obj
    except AttributeError:
        return "absent"
    except RuntimeError:
        return "RuntimeError"


def switches() -> dict:
    state = {path: _read(path) for path in (*LEGACY, *PER_BACKEND)}
    try:
        state["get_float32_matmul_precision()"] = torch.get_float32_matmul_precision()
    except RuntimeError:
        state["get_float32_matmul_precision()"] = "RuntimeError"
    return state


@pytest.fixture(autouse=True)
def torch_defaults():
    """Each test starts from torch's own defaults, and leaves them (its user set the switches)."""
    yield
    if HAS_PER_BACKEND_API:
        for path in ("", "cudnn", "mkldnn", "mkldnn.conv", "mkldnn.rnn"):
            obj = torch.backends
            for name in filter(None, path.split(".")):
                obj = getattr(obj, name)
            obj.fp32_precision = "none"
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = True
    if HAS_PER_BACKEND_API:  # "highest" wrote "ieee" into both; they read "none" by default
        torch.backends.cuda.matmul.fp32_precision = "none"
        torch.backends.mkldnn.matmul.fp32_precision = "none"


def _per_backend_global_tf32():
    torch.backends.fp32_precision = "tf32"


def _per_backend_matmul_tf32():
    torch.backends.cuda.matmul.fp32_precision = "tf32"


def _per_backend_mix():
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    torch.backends.cudnn.conv.fp32_precision = "ieee"
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"


def _legacy_flags_flipped():
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = False


def _matmul_precision_medium():
    torch.set_float32_matmul_precision("medium")


USER_STATES = [
    pytest.param(lambda: None, id="torch defaults"),
    pytest.param(_legacy_flags_flipped, id="legacy flags flipped"),
    pytest.param(_matmul_precision_medium, id="set_float32_matmul_precision medium"),
    pytest.param(_per_backend_global_tf32, id="fp32_precision tf32", marks=needs_per_backend_api),
    pytest.param(_per_backend_matmul_tf32, id="cuda.matmul.fp32_precision tf32", marks=needs_per_backend_api),
    pytest.param(_per_backend_mix, id="per-backend mix", marks=needs_per_backend_api),
]


class Locked(nn.Module):
    """Cannot be deep-copied (it holds a lock), so a model-cast run refuses it before any forward."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.lock = threading.Lock()

    def forward(self, x):
        return self.conv(x)


class Interrupted(nn.Module):
    """Ctrl-C during the first forward, the one make_runner runs to prove the model works."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        raise KeyboardInterrupt


def _profile(model: nn.Module, precision: str, **options):
    return visprof.profile(model, device="cpu", precision=precision, batch_size=1, img_size=16, iterations=2,
                           warmup=0, progress=False, **options)


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
@pytest.mark.parametrize("set_user_state", USER_STATES)
def test_a_profile_succeeds_and_leaves_the_switches_as_the_user_set_them(set_user_state, precision):
    set_user_state()
    before = switches()
    result = _profile(nn.Sequential(nn.Conv2d(3, 4, 3)), precision)
    assert result.timing.latency_ms.median > 0
    assert switches() == before


@pytest.mark.parametrize("set_user_state", USER_STATES)
def test_a_refused_profile_leaves_the_switches_as_the_user_set_them(set_user_state):
    set_user_state()
    before = switches()
    with pytest.raises(BadInputError, match="could not be copied"):
        _profile(Locked(), "bf16", autocast="model-cast")
    assert switches() == before


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
@pytest.mark.parametrize("set_user_state", USER_STATES)
def test_an_interrupted_profile_leaves_the_switches_as_the_user_set_them(set_user_state, precision):
    set_user_state()
    before = switches()
    with pytest.raises(KeyboardInterrupt):
        _profile(Interrupted(), precision)
    assert switches() == before


def test_medium_matmul_precision_still_reads_after_a_profile():
    """The legacy matmul flag written back over "medium" had left torch refusing to read it, and
    so torch.utils.benchmark refusing to import."""
    torch.set_float32_matmul_precision("medium")
    _profile(nn.Sequential(nn.Conv2d(3, 4, 3)), "fp32")
    assert torch.get_float32_matmul_precision() == "medium"


@needs_per_backend_api
def test_a_switch_that_followed_the_global_precision_still_follows_it():
    """Put back as "none" (the parent's precision), not as the value it read: else a user's later
    ``torch.backends.fp32_precision = "ieee"`` would leave cuBLAS in TF32."""
    torch.backends.fp32_precision = "tf32"
    _profile(nn.Sequential(nn.Conv2d(3, 4, 3)), "fp32")
    torch.backends.fp32_precision = "ieee"
    assert torch.backends.cuda.matmul.fp32_precision == "ieee"
    assert torch.backends.cudnn.conv.fp32_precision == "ieee"


def test_torch_refusing_the_switches_is_not_blamed_on_the_model(monkeypatch):
    """No forward ran: the error had read "model 'Sequential' failed on an input of shape ..."."""

    class Refusing:
        def __getattr__(self, name):
            raise RuntimeError("PyTorch is checking whether allow_tf32_new is enabled for cuBlas matmul")

        def __setattr__(self, name, value):
            raise RuntimeError("PyTorch refuses this write")

    before = switches()
    monkeypatch.setattr(torch.backends.cuda, "matmul", Refusing())
    with pytest.raises(Exception, match="TF32") as raised:
        _profile(nn.Sequential(nn.Conv2d(3, 4, 3)), "fp32")
    assert not isinstance(raised.value, ModelForwardError)
    monkeypatch.undo()
    assert switches() == before
