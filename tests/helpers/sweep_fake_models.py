"""Models for the sweep's tests, registered with timm so that a sweep builds them by name.

Imported with ``--import tests/sweep_fake_models.py`` (in the driver and in every worker).
Each misbehaves in one real way; nothing about the failure is mocked:

    visprof_fake_tiny      a small conv net that works (16x16 inputs)
    visprof_fake_wide      the same with more channels (a second model that works)
    visprof_fake_raises    raises ValueError in its forward
    visprof_fake_hangs     sleeps for an hour in its forward (the per-cell timeout ends it)
    visprof_fake_exits     calls os._exit(7) in its forward (the worker vanishes)
    visprof_fake_segfault  reads address 0 through ctypes (SIGSEGV)
    visprof_fake_oom       raises a CUDA-style out-of-memory error above batch OOM_ABOVE
    visprof_fake_never_fits  raises the CUDA-style out-of-memory error at every batch size
    visprof_fake_noisy     prints to stdout from Python and from C (must not break the protocol)
    visprof_fake_gpu_hog   allocates a sixth of the GPU's memory per sample (a real CUDA OOM
                           above batch 5; GPU tests only)
"""
import ctypes
import os
import time

import torch
from timm.models import register_model
from torch import nn

OOM_ABOVE = 8
INPUT_SIZE = (3, 16, 16)
# Seconds each build takes ($VISPROF_FAKE_BUILD_S): tests that interrupt a sweep mid-way need
# cells slower than their polling, or a fast machine finishes the sweep before the signal.
BUILD_S = float(os.environ.get("VISPROF_FAKE_BUILD_S", "0"))


class Tiny(nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        time.sleep(BUILD_S)
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.act = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels, 10)
        self.pretrained_cfg = {"input_size": INPUT_SIZE}

    def forward(self, x):
        return self.head(self.pool(self.act(self.conv(x))).flatten(1))


class Raises(Tiny):
    def forward(self, x):
        raise ValueError("the fake model refuses to run")


class Hangs(Tiny):
    def forward(self, x):
        time.sleep(3600)
        return super().forward(x)


class Exits(Tiny):
    def forward(self, x):
        os._exit(7)


class Segfaults(Tiny):
    def forward(self, x):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return super().forward(x)


class FakeOOM(Tiny):
    def forward(self, x):
        if x.shape[0] > OOM_ABOVE:
            raise torch.cuda.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate 20.00 GiB (fake: batch {x.shape[0]} > {OOM_ABOVE})")
        return super().forward(x)


class NeverFits(Tiny):
    def forward(self, x):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 TiB (fake: never fits)")


class Noisy(Tiny):
    def forward(self, x):
        print("noise from Python on stdout")
        ctypes.CDLL(None).puts(b"noise from C on stdout")
        return super().forward(x)


class GPUHog(Tiny):
    def forward(self, x):
        per_sample = torch.cuda.get_device_properties(x.device).total_memory // 6
        hog = torch.empty(x.shape[0] * per_sample, dtype=torch.uint8, device=x.device)
        return super().forward(x) + hog[:1].float()


@register_model
def visprof_fake_tiny(pretrained=False, **kwargs):
    return Tiny()


@register_model
def visprof_fake_wide(pretrained=False, **kwargs):
    return Tiny(channels=8)


@register_model
def visprof_fake_raises(pretrained=False, **kwargs):
    return Raises()


@register_model
def visprof_fake_hangs(pretrained=False, **kwargs):
    return Hangs()


@register_model
def visprof_fake_exits(pretrained=False, **kwargs):
    return Exits()


@register_model
def visprof_fake_segfault(pretrained=False, **kwargs):
    return Segfaults()


@register_model
def visprof_fake_oom(pretrained=False, **kwargs):
    return FakeOOM()


@register_model
def visprof_fake_never_fits(pretrained=False, **kwargs):
    return NeverFits()


@register_model
def visprof_fake_noisy(pretrained=False, **kwargs):
    return Noisy()


@register_model
def visprof_fake_gpu_hog(pretrained=False, **kwargs):
    return GPUHog()
