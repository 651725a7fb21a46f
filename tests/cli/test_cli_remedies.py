"""The command line keeps its flags in remedies: the mistakes that tests/profiler/
test_python_remedies.py makes through the Python API (which names keywords there), made here
with ``python -m visprof`` in a real process."""
from __future__ import annotations

import re
import subprocess

import pytest
import torch

from visprof.base.child_env import child_env, module_command

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path: no GPU, host memory")


def visprof(*args) -> tuple[int, str]:
    env = child_env()
    env.pop("VISPROF_DEBUG", None)
    done = subprocess.run([*module_command("visprof"), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("visprof: error: "), done.stderr
    return done.returncode, lines[0]


def test_cuda_without_a_gpu_says_device_cpu():
    code, line = visprof("profile", "resnet18", "--device", "cuda", "-q")
    assert code == 4 and line.endswith("; run on a GPU machine, or pass --device cpu for the CPU path"), line


def test_the_memory_pass_on_the_cpu_names_the_passes_flag():
    code, line = visprof("profile", "resnet18", "-b", "1", "--img-size", "32", "--passes", "memory", "-q")
    assert code == 2 and line.endswith("; on the CPU, run --passes timing,attributed"), line


def test_a_batch_that_cannot_fit_names_the_batch_size_flag():
    code, line = visprof("profile", "resnet18", "-b", "1000000000", "--img-size", "32", "-q")
    assert code == 3 and re.search(r"the largest batch that fits is about (\d+) \(--batch-size \1\)", line), line
    assert "batch_size=" not in line


def test_a_cpu_sweep_asked_for_the_memory_pass_names_the_sweeps_flags(tmp_path):
    code, line = visprof("sweep", "resnet18", "--store", tmp_path / "s.db", "--device", "cpu", "--passes", "memory")
    assert code == 2 and "(--device cpu, or no GPU visible)" in line, line
    assert line.endswith("; on the CPU, run --passes timing,attributed"), line
    assert "device=" not in line and "passes=" not in line


def test_export_names_its_flags(tmp_path):
    code, line = visprof("export", tmp_path / "none.db", "--format", "parquet")
    assert code == 2 and line == "visprof: error: --format parquet writes a binary file: give one with -o FILE", line
