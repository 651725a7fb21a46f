"""One version: what results, stores and ``visprof --version`` record (``visprof.__version__``) is what
pyproject.toml gives the installed package's metadata."""
from __future__ import annotations

from pathlib import Path

import visprof
from visprof.base.inputs import toml_reader
from visprof.result import visprof_version

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_and_its_metadata_state_one_version():
    project = toml_reader().loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == visprof.__version__ == visprof_version()


def test_the_cli_reports_the_running_packages_version(capsys):
    from visprof.cli.app import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"visprof {visprof.__version__}"
