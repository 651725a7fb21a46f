"""visprof.sweep.selection.import_roots: the folders a sweep's workers must search for the modules
its driver imported by name, on every Python visprof supports."""
from __future__ import annotations

import sys
import types

from visprof.sweep.selection import import_modules, import_roots


def _module_beside_the_script(tmp_path, monkeypatch):
    (tmp_path / "my_models_for_roots.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver's first sys.path entry: the script's folder
    monkeypatch.delitem(sys.modules, "my_models_for_roots", raising=False)
    import_modules(["my_models_for_roots"])


def test_a_module_beside_the_driver_script_is_a_root_for_the_workers(tmp_path, monkeypatch):
    _module_beside_the_script(tmp_path, monkeypatch)
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace(safe_path=False))
    assert import_roots(["my_models_for_roots"]) == [str(tmp_path.resolve())]


def test_python_310_has_no_safe_path_flag_and_the_roots_are_still_found(tmp_path, monkeypatch):
    """sys.flags.safe_path is Python 3.11's: read as an attribute, every sweep on 3.10 stopped on it."""
    _module_beside_the_script(tmp_path, monkeypatch)
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace())  # 3.10's flags: no safe_path
    assert import_roots(["my_models_for_roots"]) == [str(tmp_path.resolve())]


def test_under_safe_path_the_driver_searched_no_hidden_folder(tmp_path, monkeypatch):
    _module_beside_the_script(tmp_path, monkeypatch)
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace(safe_path=True))
    assert import_roots(["my_models_for_roots"]) == []
