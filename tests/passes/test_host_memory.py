"""Out of host memory on the CPU path: its own error, with a batch that fits, estimated and
never tried at a batch that could swap or be killed. Real allocations fail here: sizes
beyond the address space, which no overcommit policy grants."""
from __future__ import annotations

import math
import resource
import time
import re
import weakref

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor

import visprof
from visprof.passes import host_memory
from visprof.base.errors import OutOfMemoryError
from visprof.passes.host_memory import HostEstimate, available_bytes, is_host_out_of_memory
from visprof.passes.models import resolve_model
from visprof.passes.runner import RunConfig

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path")

BEYOND_ADDRESS_SPACE = 1 << 48  # bytes: more than a 47-bit user address space holds


class Shared(list):
    """A record its module's copies share: the estimate's fake forwards run on a copy."""

    def __deepcopy__(self, memo):
        return self


def is_fake(tensor) -> bool:
    return isinstance(tensor, FakeTensor)


class BytesPerSample(torch.nn.Module):
    """Allocates (without touching: no real memory is used) ``per_sample`` bytes per sample,
    and records the batches it ran and whether on fake tensors."""

    def __init__(self, per_sample: int):
        super().__init__()
        self.per_sample = per_sample
        self.batches, self.fake = Shared(), Shared()
        self.conv = torch.nn.Conv2d(3, 4, 1)

    def forward(self, x):
        self.batches.append(x.shape[0])
        self.fake.append(is_fake(x))
        scratch = x.new_empty(x.shape[0] * self.per_sample, dtype=torch.uint8)
        del scratch
        return self.conv(x)


def test_real_allocation_failures_are_recognised():
    with pytest.raises(RuntimeError) as torch_error:
        torch.empty(BEYOND_ADDRESS_SPACE, dtype=torch.uint8)
    with pytest.raises(MemoryError) as python_error:
        bytearray(BEYOND_ADDRESS_SPACE)
    assert is_host_out_of_memory(torch_error.value) and is_host_out_of_memory(python_error.value)
    assert not is_host_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def test_available_memory_is_known_and_at_most_the_machine_total():
    available = available_bytes()
    total = None
    try:
        total = next(int(line.split()[1]) * 1024 for line in open("/proc/meminfo") if line.startswith("MemTotal:"))
    except OSError:
        pytest.skip("no /proc/meminfo")
    assert available is not None and 0 < available <= total


MEMINFO = """MemTotal:       16384000 kB
MemFree:         1200000 kB
MemAvailable:    8000000 kB
Buffers:          100000 kB
"""


def test_available_memory_reads_meminfos_kilobytes_as_kib(tmp_path, monkeypatch):
    """/proc/meminfo's "kB" are KiB: read as 1000 bytes, the memory free for a batch would be
    understated by 2.3%, and the host-memory checks would refuse or shrink batches that fit."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    real_path = host_memory.Path
    monkeypatch.setattr(host_memory, "Path", lambda *parts: meminfo if parts == ("/proc/meminfo",) else real_path(*parts))
    monkeypatch.setattr(host_memory, "_cgroup_available", lambda: None)  # no container limit: MemAvailable decides
    assert available_bytes() == 8_000_000 * 1024  # 8,192,000,000 bytes


def test_the_estimate_is_linear_in_the_batch_and_keeps_a_reserve():
    estimate = HostEstimate(per_sample=100, fixed=50)
    assert estimate.bytes_for(10) == 1050
    assert estimate.largest_batch(1000) == 7  # (0.8 * 1000 - 50) // 100
    assert estimate.largest_batch(160) == 1  # only batch 1 fits, and without the reserve
    assert estimate.largest_batch(100) == 0
    assert HostEstimate(0, 0, fits_one=False).largest_batch(10**12) == 0


def test_the_estimate_matches_the_tensors_a_forward_holds():
    # The peak is the scratch (freed before the conv's smaller output exists) plus the input,
    # per sample: the estimate follows tensors as they are freed, not the sum of all made.
    model = BytesPerSample(per_sample=1 << 20)
    spec = resolve_model(model, img_size=8)
    config = RunConfig(batch_size=4, precision="fp32", device="cpu")
    estimate = host_memory.estimate_host_memory(spec, config)
    assert estimate.per_sample == (1 << 20) + 3 * 8 * 8 * 4 and estimate.fixed == 0
    assert model.batches == [1, 2] and model.fake == [True, True]


def test_a_batch_that_cannot_fit_is_refused_before_it_runs():
    """The guard: the batch is estimated, never run (it could swap for minutes or be killed by
    the OOM killer), and the error names a batch that fits."""
    model = BytesPerSample(per_sample=1 << 30)  # 1 GiB a sample
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(model, batch_size=10**9, img_size=8, passes="timing", iterations=1, progress=False)
    error = info.value
    assert max(model.batches) <= 2 and all(model.fake)  # only the estimate's forwards ran, on fake tensors
    best = int(0.8 * available_bytes() // (1 << 30))
    assert error.estimated and error.searched and error.max_batch_size == pytest.approx(best, abs=1)
    assert re.match(r"out of host memory \(RAM\) at batch size 1000000000 on the CPU \(it needs at least "
                    r"[\d.,]+ PiB, [\d.]+ GiB is available\); the largest batch that fits is about (\d+) "
                    r"\(batch_size=\1\), estimated from the memory one sample needs$", str(error)), str(error)
    assert error.exit_code == 3


def test_without_the_search_the_error_names_no_batch():
    model = BytesPerSample(per_sample=1 << 30)
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(model, batch_size=10**9, img_size=8, passes="timing", iterations=1, progress=False,
                        search_batch=False)
    assert info.value.max_batch_size is None and not info.value.searched
    assert str(info.value) == "out of host memory (RAM) at batch size 1000000000 on the CPU; try a smaller batch_size"
    assert max(model.batches) <= 2


def test_a_forward_that_runs_out_of_memory_gets_an_estimated_batch(monkeypatch):
    """The run itself fails (the guard off, as for a model whose memory the guard does not
    foresee): the failure is out of memory, not the model's fault, and names a batch."""
    monkeypatch.setattr(host_memory, "ACTIVATIONS_PER_INPUT", 0)  # never estimate before the run
    per_sample = 1 << 30
    batch = BEYOND_ADDRESS_SPACE // per_sample  # 256 Ki samples, 192 MiB of input at 8x8
    model = BytesPerSample(per_sample)
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(model, batch_size=batch, img_size=8, passes="timing", iterations=1, progress=False)
    error = info.value
    assert model.batches == [batch, 1, 2] and model.fake == [False, True, True]  # tried once, then estimated
    assert error.batch_size == batch and error.estimated
    assert error.max_batch_size == pytest.approx(int(0.8 * available_bytes() // per_sample), abs=1)
    assert f"(batch_size={error.max_batch_size})" in str(error)
    assert error.__cause__ is None and error.__context__ is None  # the failed try is let go


class HoldsThenFails(torch.nn.Module):
    """At a large batch, allocates a tensor and then fails; at batch 1 and 2 (the estimate's
    forwards) records whether the failed forward's tensors are still alive."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)
        self.failed, self.alive_during_estimate = Shared(), Shared()

    def forward(self, x):
        held = x.new_empty(x.shape[0], 16)
        if x.shape[0] > 2:
            self.failed.append(weakref.ref(held))
            x.new_empty(BEYOND_ADDRESS_SPACE, dtype=torch.uint8)  # a real failed allocation
        self.alive_during_estimate.append(any(ref() is not None for ref in self.failed))
        return self.conv(x)


def test_the_estimate_runs_after_the_failed_forward_has_let_go_of_its_tensors(monkeypatch):
    # Inside an except block the traceback keeps the failed forward's frames and tensors alive;
    # the estimate (and the GPU's batch search) must not run there.
    monkeypatch.setattr(host_memory, "ACTIVATIONS_PER_INPUT", 0)
    model = HoldsThenFails()
    with pytest.raises(OutOfMemoryError):
        visprof.profile(model, batch_size=64, img_size=8, passes="timing", iterations=1, progress=False)
    assert len(model.failed) == 1 and model.alive_during_estimate == [False, False]


def test_not_even_batch_1_fits():
    model = BytesPerSample(per_sample=BEYOND_ADDRESS_SPACE)
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(model, batch_size=2, img_size=8, passes="timing", iterations=1, progress=False)
    assert info.value.max_batch_size is None and info.value.searched
    # Batch 2 ran and failed; the estimate (fake tensors: it allocates nothing) sizes what it needed.
    assert re.match(r"out of host memory \(RAM\) at batch size 2 on the CPU \(it needs at least 512\.0 TiB, "
                    r"[\d.]+ GiB is available\); not even batch size 1 fits \(try a smaller img_size\)$",
                    str(info.value)), str(info.value)


def test_an_input_too_large_for_any_tensor_is_out_of_memory_not_a_failed_model():
    """--img-size 9999999999: torch refuses the input tensor ("Storage size calculation overflowed"), which had
    been reported as the model failing (exit 1), where the documented code is 3."""
    import torch

    with pytest.raises(OutOfMemoryError, match="not even batch size 1 fits"):
        visprof.profile(torch.nn.Conv2d(3, 4, 3), batch_size=1, img_size=9_999_999_999, passes="timing", iterations=1,
                        progress=False)


def test_a_small_batch_costs_no_estimate():
    # The default CPU batch is far from any limit: one file read, no extra forward.
    model = BytesPerSample(per_sample=16)
    visprof.profile(model, batch_size=2, img_size=8, passes="timing", iterations=1, warmup=0, progress=False)
    assert set(model.batches) == {2}  # no forward at batch 1 or 2 for an estimate
    assert 2 * math.prod((3, 8, 8)) * 4 * host_memory.ACTIVATIONS_PER_INPUT < available_bytes()


class FailsOnThirdCall(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 3:  # in the attributed pass, after the first forward fit
            x.new_empty(BEYOND_ADDRESS_SPACE, dtype=torch.uint8)
        return self.conv(x)


def test_out_of_memory_in_a_later_pass_is_out_of_memory_not_the_models_fault():
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(FailsOnThirdCall(), batch_size=2, img_size=8, passes="attributed", progress=False)
    assert str(info.value) == "out of host memory (RAM) at batch size 2 on the CPU; try a smaller batch_size"


# --- the estimate's forwards run on fake tensors -------------------------------------------------

@pytest.mark.parametrize("name", ["resnet18", "vit_tiny_patch16_224", "convnext_atto", "efficientnet_b0"])
@pytest.mark.parametrize("precision,channels_last", [("fp32", False), ("bf16", True)])
def test_fake_and_real_forwards_count_the_same_bytes(name, precision, channels_last):
    spec = resolve_model(name, img_size=64, device="cpu")
    config = RunConfig(batch_size=2, precision=precision, channels_last=channels_last, device="cpu")
    assert host_memory._forward_bytes(spec, config, fake=True) == host_memory._forward_bytes(spec, config, fake=False)


class ReflectPads(torch.nn.Module):
    """A composite op that CPU autocast runs in fp32 (``pad`` -> ``reflection_pad2d``), as tresnet's
    anti-aliased downsampling does."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(torch.nn.functional.pad(self.conv(x), (1, 1, 1, 1), mode="reflect")[:, :3])


def test_a_composite_op_is_cast_on_fake_tensors_as_in_a_real_forward():
    # The fake mode decomposes a composite op with autocast off: the pad came out bf16, not fp32,
    # and the count was short by half the pad's bytes (tresnet_l: 8%).
    spec = resolve_model(ReflectPads(), img_size=32)
    config = RunConfig(batch_size=2, precision="bf16", device="cpu")
    real = host_memory._forward_bytes(spec, config, fake=False)
    assert host_memory._forward_bytes(spec, config, fake=True) == real
    assert real >= 2 * 8 * 32 * 32 * 4  # the pad's fp32 output is in the count


def test_a_huge_image_is_estimated_in_moments_without_its_memory():
    # resnet18 at 22400x22400: a real batch-1 forward needs 65 GiB (the CPU tests' machine has
    # 24) and minutes; fake tensors allocate nothing. Activations scale with the pixels: 100x.
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    config = RunConfig(batch_size=8, precision="fp32", device="cpu")
    small = host_memory.estimate_host_memory(resolve_model("resnet18", img_size=2240, device="cpu"), config)
    started = time.perf_counter()
    huge = host_memory.estimate_host_memory(resolve_model("resnet18", img_size=22400, device="cpu"), config)
    assert time.perf_counter() - started < 30
    assert huge.per_sample == pytest.approx(100 * small.per_sample, rel=0.01) and huge.per_sample > 60 * 2**30
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - usage) * 1024 < 2**30  # Linux: KiB


class CachesOnItself(torch.nn.Module):
    """Keeps a tensor made in its forward (as levit's and tiny_vit's attention-bias caches do)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)
        self.cache: dict = {}

    def forward(self, x):
        if "bias" not in self.cache:
            self.cache["bias"] = self.conv.bias * 2
        return self.conv(x) + self.cache["bias"][:, None, None]


def test_the_fake_forward_leaves_no_fake_tensor_on_the_model():
    model = CachesOnItself().eval()
    estimate = host_memory.estimate_host_memory(resolve_model(model, img_size=8),
                                                RunConfig(batch_size=2, precision="fp32", device="cpu"))
    assert estimate is not None and model.cache == {}
    assert model(torch.ones(1, 3, 8, 8)).shape == (1, 4, 8, 8) and not is_fake(model.cache["bias"])


class ReadsAValue(BytesPerSample):
    """A forward that reads a tensor's value: fake tensors have none, so it runs for real."""

    def forward(self, x):
        if x.abs().sum().item() < 0:  # never true: the branch only reads the value
            raise AssertionError
        return super().forward(x)


def test_a_forward_fake_tensors_cannot_run_is_estimated_for_real():
    model = ReadsAValue(per_sample=1 << 20)
    estimate = host_memory.estimate_host_memory(resolve_model(model, img_size=8),
                                                RunConfig(batch_size=4, precision="fp32", device="cpu"))
    # The same count as BytesPerSample's, on real tensors; the fake tries stopped at the .item().
    assert estimate.per_sample == (1 << 20) + 3 * 8 * 8 * 4 and estimate.fixed == 0
    assert model.batches == [1, 2] and model.fake == [False, False]


class UsesItsWeightView(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(1 << 10, 3 * 8 * 8))

    def forward(self, x):
        return x.flatten(1) @ self.weight.t()  # aten::t: a view of the weight, seen by the count


@pytest.mark.parametrize("fake", [True, False])
def test_the_weights_of_a_cast_copy_are_not_counted_as_activations(fake):
    # autocast="model-cast" runs a bf16 copy of the module: its weights, not the fp32
    # original's, are there before the forward (their views were counted: 384 KiB a batch).
    spec = resolve_model(UsesItsWeightView(), img_size=8)
    config = RunConfig(batch_size=1, precision="bf16", autocast="model-cast", device="cpu")
    # the bf16 input (3x8x8) and the bf16 output (1024 columns), nothing of the weight
    assert host_memory._forward_bytes(spec, config, fake=fake) == 3 * 8 * 8 * 2 + (1 << 10) * 2
