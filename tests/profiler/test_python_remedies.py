"""Errors and notes of the Python API name its keyword arguments, not the CLI's flags.

A notebook's ``visprof.profile(model, device="cuda")`` on a machine without a GPU was told "pass
--device cpu", ``passes="memory"`` on the CPU "run --passes timing,attributed", and an
out-of-memory batch "(--batch-size 8)": options of a command the caller never ran. The same
mistakes on the command line keep their flags (tests/cli/test_cli_remedies.py).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

import visprof
from visprof.base.errors import BadInputError, NoGPUError, OutOfMemoryError
from small_modules import TwoLinears

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path: no GPU, host memory")

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")
FAST = dict(img_size=8, iterations=2, warmup=0, progress=False)


class BytesPerSample(nn.Module):
    """Asks for (never touches) ``per_sample`` bytes a sample: no real memory is used."""

    def __init__(self, per_sample: int):
        super().__init__()
        self.per_sample = per_sample
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        scratch = x.new_empty(x.shape[0] * self.per_sample, dtype=torch.uint8)
        del scratch
        return self.conv(x)


def no_flags(message: str) -> None:
    assert not re.search(r"(^|[\s(])--?[a-z]", message), f"a command-line flag in a Python message: {message}"


def test_cuda_without_a_gpu_says_device_cpu():
    with pytest.raises(NoGPUError) as info:
        visprof.profile(TwoLinears(), device="cuda:0", **FAST)
    message = str(info.value)
    assert message.endswith("; run on a GPU machine, or pass device='cpu' for the CPU path"), message
    no_flags(message)


@pytest.mark.parametrize("passes, remedy", [
    ("memory", "passes=['timing', 'attributed']"),
    (("timing", "memory"), "passes=['timing']"),
])
def test_the_memory_pass_on_the_cpu_names_the_passes_keyword(passes, remedy):
    with pytest.raises(BadInputError) as info:
        visprof.profile(TwoLinears(), passes=passes, **FAST)
    message = str(info.value)
    assert message.endswith(f"; on the CPU, run {remedy}"), message
    no_flags(message)


def test_a_batch_that_cannot_fit_names_batch_size():
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(BytesPerSample(1 << 30), batch_size=10**9, passes="timing", **FAST)
    error = info.value
    assert error.max_batch_size and f"(batch_size={error.max_batch_size})" in str(error), str(error)
    no_flags(str(error))
    with pytest.raises(OutOfMemoryError) as info:
        visprof.profile(BytesPerSample(1 << 30), batch_size=10**9, passes="timing", search_batch=False, **FAST)
    assert str(info.value).endswith("; try a smaller batch_size")


def test_a_bf16_module_at_fp32_names_the_precision_keyword():
    with pytest.raises(BadInputError, match=r"profile it at precision bf16 \(precision='bf16'\)") as info:
        visprof.profile(TwoLinears().to(torch.bfloat16), precision="fp32", **FAST)
    no_flags(str(info.value))


def test_the_weight_cast_note_names_the_regime_keywords(monkeypatch):
    from visprof import profiler

    monkeypatch.setattr(profiler, "CAST_NOTE_SHARE", 0.0)  # host-clock shares are noisy
    result = visprof.profile(TwoLinears(), batch_size=2, precision="bf16", passes="timing,attributed", **FAST)
    (note,) = [n for n in result.notes if "re-casts the fp32 weights" in n]
    assert "(grad_mode='no_grad', autocast='whole-loop')" in note and "(autocast='model-cast')" in note, note
    no_flags(note)


def test_a_cpu_sweep_asked_for_the_memory_pass_names_run_sweeps_keywords(tmp_path):
    store = tmp_path / "s.db"
    with pytest.raises(BadInputError) as info:
        visprof.sweep.run_sweep(["resnet18"], store=store, device="cpu", passes="memory", progress=False)
    message = str(info.value)
    assert message.startswith("this sweep runs on the CPU (device='cpu', or no GPU visible), and the memory pass")
    assert message.endswith("; on the CPU, run passes=['timing', 'attributed']"), message
    no_flags(message)
    assert not store.exists()


@pytest.mark.parametrize("kwargs, start", [
    ({"retries": -1}, "retries must be an integer >= 0"),
    ({"time_budget_s": 0}, "time_budget_s must be a positive"),
    ({"gpus": "0", "device": "cpu"}, "gpus='0' picks GPUs, and device='cpu' runs on the CPU"),
])
def test_run_sweeps_refusals_name_its_keywords(tmp_path, kwargs, start):
    with pytest.raises(BadInputError) as info:
        visprof.sweep.run_sweep(["resnet18"], store=tmp_path / "s.db", progress=False, **kwargs)
    assert str(info.value).startswith(start), str(info.value)
    no_flags(str(info.value))


def test_export_and_the_gpu_table_name_python_arguments(tmp_path):
    from visprof.analysis.gpus import gpu_table
    from visprof.sweep import export_store

    with pytest.raises(BadInputError) as info:
        export_store(tmp_path / "none.db", None, "parquet")
    assert str(info.value) == "fmt='parquet' writes a binary file: give one with output=FILE"
    with pytest.raises(BadInputError) as info:
        gpu_table().get("no-such-gpu")
    assert "(add a row with table=gpu_table(extra=FILE)," in str(info.value)
    no_flags(str(info.value))


def test_a_python_sweeps_workers_name_its_keywords_too(tmp_path):
    """A cell's failure is made in a worker process and stored as text: the worker says it in
    its driver's terms (a CLI sweep's say --batch-size: tests/sweep/test_sweep_host_memory.py)."""
    store = tmp_path / "s.db"
    summary = visprof.sweep.run_sweep(["visprof_fake_tiny"], store=store, batch_sizes=[10**8], device="cpu",
                                      passes="timing", imports=[FAKE_MODELS], progress=False,
                                      profile_options={"iterations": 2, "warmup": 0})
    assert summary.failed_total == 1
    with visprof.sweep.open_store(store) as s:
        (failure,) = s.failures()
    message = failure["message"]
    assert failure["error_class"] == "OutOfMemoryError"
    assert re.search(r"the largest batch that fits is about (\d+) \(batch_size=\1\)", message), message
    no_flags(message)
