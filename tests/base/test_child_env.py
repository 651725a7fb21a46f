"""A child ``python -m visprof...`` started in a folder that holds other visprof sources (a
checkout, unbuilt) imports the visprof of its parent, on Python 3.11+ (PYTHONSAFEPATH) and 3.10."""
from __future__ import annotations

import subprocess

import pytest

from visprof.base import child_env as child


@pytest.fixture
def shadowing_folder(tmp_path):
    (tmp_path / "visprof").mkdir()
    (tmp_path / "visprof" / "__init__.py").write_text('raise ImportError("the sources in the current folder")\n')
    return tmp_path


def _run(command, folder, env):
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_without_pythonsafepath_python_m_imports_the_current_folder(shadowing_folder):
    """What the fix is for: 3.10 ignores PYTHONSAFEPATH, and ``-m`` puts the folder first."""
    env = child.child_env()
    del env["PYTHONSAFEPATH"]
    done = _run([child.sys.executable, "-m", "visprof", "--version"], shadowing_folder, env)
    assert done.returncode != 0 and "the sources in the current folder" in done.stderr


@pytest.mark.parametrize("has_safe_path", [
    pytest.param(True, id="python3.11+", marks=pytest.mark.skipif(not child.HAS_SAFE_PATH, reason="Python 3.10")),
    pytest.param(False, id="python3.10")])
def test_module_command_imports_the_parents_visprof(shadowing_folder, monkeypatch, has_safe_path):
    monkeypatch.setattr(child, "HAS_SAFE_PATH", has_safe_path)
    env = child.child_env()
    if not has_safe_path:  # as Python 3.10 would: the variable is read by no one
        del env["PYTHONSAFEPATH"]
    done = _run(child.module_command("visprof", "--version"), shadowing_folder, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("visprof ")
    # run as __main__ with the arguments after the module's name: argparse sees them, under visprof's name
    refused = _run(child.module_command("visprof", "no-such-command"), shadowing_folder, env)
    assert refused.returncode == 2 and "visprof: error:" in refused.stderr and "no-such-command" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_module_command_on_python_3_10_runs_the_module_by_name(monkeypatch):
    monkeypatch.setattr(child, "HAS_SAFE_PATH", False)
    command = child.module_command("visprof.sweep.worker", "--device", "cpu")
    assert command[0] == child.sys.executable and command[1] == "-c"
    assert "'visprof.sweep.worker'" in command[2] and command[3:] == ["--device", "cpu"]
