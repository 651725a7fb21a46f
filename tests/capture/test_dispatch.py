"""Ops called from visprof's dispatch modes run as they run without a mode (visprof/capture/dispatch.py).

Under inference_mode a dispatch mode receives composite ops before they decompose, and torch
runs its handler with autocast off: without care, the ops inside them are not cast.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import torch

import visprof
from visprof.attribution.categories import default_table
from visprof.capture.dispatch import call_as_unmoded
from visprof.capture.op_capture import ModuleTracker, OpCapture
from visprof.passes.host_memory import _peak_live_bytes


class Einsum(torch.nn.Module):
    """A bmm written as einsum: einsum is composite and has no CPU autocast kernel; bmm has one."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 3))

    def forward(self, x):
        return torch.einsum("bij,jk->bik", x, self.weight)


class AutocastOffInside(Einsum):
    def forward(self, x):
        with torch.autocast("cpu", enabled=False):
            return super().forward(x)


def _run(model, x, grad_mode, capture=None):
    with grad_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        if capture is None:
            return model(x)
        with capture:
            return model(x)


@pytest.mark.parametrize("grad_mode", [torch.inference_mode, torch.no_grad])
@pytest.mark.parametrize("model_class", [Einsum, AutocastOffInside])
def test_the_op_capture_runs_composite_ops_in_the_dtype_a_plain_forward_does(grad_mode, model_class):
    model, x = model_class().eval(), torch.randn(2, 4, 8)
    plain = _run(model, x, grad_mode)
    tracker = ModuleTracker(model)
    capture = OpCapture(tracker, default_table(), nvtx=False)
    with tracker:
        captured = _run(model, x, grad_mode, capture)
    assert captured.dtype == plain.dtype == (torch.bfloat16 if model_class is Einsum else torch.float32)
    assert torch.equal(captured, plain)
    names = [str(func) for _, func, *_ in capture.raw]
    if grad_mode is torch.inference_mode:
        assert "aten.einsum.default" in names  # the case at issue: the mode saw the composite op


def test_a_mode_that_calls_ops_directly_shows_the_difference():
    """The reason for call_as_unmoded: calling the op as given leaves einsum in fp32."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Direct(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Unmoded(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return call_as_unmoded(func, args, kwargs or {})

    model, x = Einsum().eval(), torch.randn(2, 4, 8)
    assert _run(model, x, torch.inference_mode, Direct()).dtype == torch.float32
    assert _run(model, x, torch.inference_mode, Unmoded()).dtype == torch.bfloat16


def test_the_host_memory_count_sees_the_bf16_result():
    class Runner:
        def __init__(self):
            self.spec = type("Spec", (), {"module": Einsum().eval()})()
            self.input = torch.randn(64, 256, 8)

        def __call__(self):
            return _run(self.spec.module, self.input, torch.inference_mode)

    # the einsum's output, in bf16 as without the count (fp32 was 196608 bytes); the casts
    # inside the composite op are not seen by a mode
    runner = Runner()
    assert _peak_live_bytes(runner, [runner.input]) == 64 * 256 * 3 * 2


# What both scripts share: CUDA's autocast registrations go into ``lib`` (on the CPU, in a process
# of their own); ``compare`` prints the plain and the captured forward's dtypes and whether they agree.
CUDA_AUTOCAST_ON_THE_CPU = """
import torch, torch.nn as nn
from visprof.attribution.categories import default_table
from visprof.capture.op_capture import ModuleTracker, OpCapture

lib = torch.library.Library("aten", "IMPL")
excluded = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

def compare(model, x):
    model.eval()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        plain = model(x)
        tracker = ModuleTracker(model)
        with tracker, OpCapture(tracker, default_table(), nvtx=False):
            captured = model(x)
    print(plain.dtype, captured.dtype, torch.equal(plain, captured))
"""

CUDA_LIKE = CUDA_AUTOCAST_ON_THE_CPU + """
# conv2d.padding has no autocast kernel on CUDA and convolution has one, so only the
# decomposition of a padding="same" convolution is cast.
lib.impl("conv2d.padding", torch.library.fallthrough_kernel, "AutocastCPU")

def convolution(input, weight, bias, *rest):
    cast = lambda t: None if t is None else t.to(torch.bfloat16)
    with torch._C._ExcludeDispatchKeyGuard(excluded):
        return torch.ops.aten.convolution(cast(input), cast(weight), cast(bias), *rest)

lib.impl("convolution", convolution, "AutocastCPU")
dim = 16  # convmixer's stem and the depthwise convolution of its blocks
compare(nn.Sequential(nn.Conv2d(3, dim, 7, stride=7), nn.GELU(), nn.BatchNorm2d(dim),
                      nn.Conv2d(dim, dim, 9, groups=dim, padding="same")), torch.randn(2, 3, 56, 56))
"""

SQUARE_LIKE_CUDA = CUDA_AUTOCAST_ON_THE_CPU + """
# CUDA's autocast runs pow and upsampling in fp32 (the CPU's has no kernel for them); square and
# upsample_nearest2d.vec, composite around them, have none.
def pow_fp32(self, exponent):
    with torch._C._ExcludeDispatchKeyGuard(excluded):
        return torch.ops.aten.pow.Tensor_Scalar(self.to(torch.float32), exponent)

def upsample_fp32(self, output_size, scales_h=None, scales_w=None):
    with torch._C._ExcludeDispatchKeyGuard(excluded):
        return torch.ops.aten.upsample_nearest2d(self.to(torch.float32), output_size, scales_h, scales_w)

lib.impl("pow.Tensor_Scalar", pow_fp32, "AutocastCPU")
lib.impl("upsample_nearest2d", upsample_fp32, "AutocastCPU")

class SquaredReLU(nn.Module):  # the activation of MetaFormer's head (caformer, convformer)
    def forward(self, x):
        return torch.square(torch.relu(x))

compare(nn.Sequential(nn.Linear(16, 32), SquaredReLU()), torch.randn(8, 16))  # MetaFormer's head
# HRNet's fuse layers: a 1x1 convolution, then nearest upsampling
compare(nn.Sequential(nn.Conv2d(8, 8, 1), nn.Upsample(scale_factor=2)), torch.randn(2, 8, 6, 6))
"""


def _run_script(script: str) -> subprocess.CompletedProcess:
    # the visprof this process imported (installed, or a tree built in place), from a neutral directory
    home = str(Path(visprof.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as empty:  # /tmp itself may hold a stray enum.py that shadows the stdlib's
        return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                              timeout=300, cwd=empty, env=env)


def test_squares_and_upsampling_run_in_fp32_under_the_capture_with_cudas_autocast_kernels():
    """caformer/convformer launched one pow in bf16 under the capture, and hrnet_w48_ssld upsampled
    in bf16, where the plain forward runs both in fp32 (bench/results/h200-checks-2026-12-03):
    torch.square around pow and upsample_nearest2d.vec around upsample_nearest2d, as on CUDA."""
    proc = _run_script(SQUARE_LIKE_CUDA)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["torch.float32", "torch.float32", "True"] * 2


def test_a_same_padded_convolution_runs_under_the_capture_with_cudas_autocast_kernels():
    """convmixer failed on the H200 under the capture ("expected scalar type BFloat16 but found
    Float"); CUDA's registrations are installed in a process of its own, on the CPU."""
    proc = _run_script(CUDA_LIKE)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["torch.bfloat16", "torch.bfloat16", "True"]
