"""Issue 24: `visprof info` names an import that fails instead of a traceback; `--device gpu`
is refused like any other word, naming cuda/cuda:N; `report --png-dir` is checked before any
work. Real processes, real (broken) packages on PYTHONPATH."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from visprof.base import hardware
from visprof.base.child_env import child_env, module_command
from visprof.base.errors import BadInputError

VIT = Path(__file__).resolve().parents[1] / "data" / "h200-result-vit_base_patch16_224.json"


def visprof(cwd: Path, *argv, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    extra = {"PYTHONPATH": str(pythonpath)} if pythonpath is not None else {}
    return subprocess.run([*module_command("visprof"), *map(str, argv)], cwd=cwd, capture_output=True,
                          text=True, env=child_env(VISPROF_DEBUG="", **extra), timeout=120)


def broken(folder: Path, package: str, body: str) -> Path:
    (folder / package).mkdir(parents=True)
    (folder / package / "__init__.py").write_text(body)
    return folder


def info_lines(proc) -> dict[str, str]:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return dict(line.split(None, 1) for line in proc.stdout.splitlines() if not line.startswith(("GPUs", " ")))


def test_info_names_a_missing_dependency_of_timm(tmp_path):
    fakes = broken(tmp_path / "fakes", "timm", "import visprof_no_such_dependency\n")
    lines = info_lines(visprof(tmp_path, "info", pythonpath=fakes))
    assert lines["timm"] == "import failed: ModuleNotFoundError: No module named 'visprof_no_such_dependency'"
    assert "torchvision" not in lines  # it imports fine: no line of its own


def test_info_names_a_torchvision_that_fails_to_load(tmp_path):
    fakes = broken(tmp_path / "fakes", "torchvision",
                   "raise RuntimeError('operator torchvision::nms does not exist\\n(a second line)')\n")
    lines = info_lines(visprof(tmp_path, "info", pythonpath=fakes))
    assert lines["torchvision"] == "import failed: RuntimeError: operator torchvision::nms does not exist"
    assert lines["timm"].startswith("import failed: RuntimeError: operator torchvision::nms")
    assert lines["torch"][0].isdigit()  # torch itself is fine


def test_info_names_a_torch_that_fails_to_load(tmp_path):
    fakes = broken(tmp_path / "fakes", "torch", "raise OSError('libcudart.so.13: cannot open shared object file')\n")
    proc = visprof(tmp_path, "info", pythonpath=fakes)
    lines = info_lines(proc)
    assert lines["torch"] == "import failed: OSError: libcudart.so.13: cannot open shared object file"
    assert lines["visprof"] and lines["NVML"]
    assert "GPUs: unknown (OSError: libcudart.so.13" in proc.stdout


def test_info_says_not_installed_for_a_package_that_is_not(tmp_path, monkeypatch):
    from visprof.cli import info

    monkeypatch.setitem(sys.modules, "timm", None)  # import timm -> ModuleNotFoundError(name="timm")
    assert info._package_version("timm") == "not installed"


@pytest.mark.parametrize("text", ["gpu", "GPU", "gpu:0", "gpu:1"])
def test_gpu_is_refused_naming_cuda(text):
    with pytest.raises(BadInputError, match=r"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got .*'cuda:N'"):
        hardware.resolve_device(text)


def test_device_gpu_on_the_command_line_is_one_line_as_tpu_is(tmp_path):
    for text in ("gpu", "tpu"):
        proc = visprof(tmp_path, "profile", "resnet18", "--device", text)
        assert proc.returncode == 2, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert lines == [f"visprof: error: device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {text!r}"
                         + (" (a GPU is 'cuda' or 'cuda:N', as PyTorch names it)" if text == "gpu" else "")]


@pytest.mark.parametrize("png_dir", ["/proc/visprof-figs", "vit.json/figs", "vit.json", "/sys/visprof-figs"])
def test_report_png_dir_is_checked_before_the_report_is_written(tmp_path, png_dir):
    shutil.copy(VIT, tmp_path / "vit.json")
    proc = visprof(tmp_path, "report", "vit.json", "-o", "report.html", "--png-dir", png_dir)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("visprof: error: --png-dir: "), proc.stderr
    assert "drawing" not in proc.stderr  # before any work
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vit.json"]  # no report.html


def test_report_png_dir_is_created_when_it_can_be(tmp_path):
    shutil.copy(VIT, tmp_path / "vit.json")
    proc = visprof(tmp_path, "report", "vit.json", "-o", "report.html", "--png-dir", "figs/png")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report.html").is_file() and list((tmp_path / "figs" / "png").glob("*.png"))
