"""Native modules compiled on first use (visprof/native/runtime_module.py): a module whose
optional define does not compile is compiled without it, and a module that does not compile at
all is reported in one line. Real compiles with the system compiler; each test names its module
apart, because a process keeps the first extension module it loaded under a name."""
from __future__ import annotations

import shutil

import pytest

from visprof.native import runtime_module
from visprof.native.runtime_module import RuntimeModule

pytestmark = pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")

SOURCE = """
#include <pybind11/pybind11.h>
#ifdef VISPROF_TEST_NEEDS_MISSING_API
#include "no_such_header_anywhere.h"
#endif
#ifdef VISPROF_TEST_BROKEN
#error this module does not compile
#endif
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
#ifdef VISPROF_TEST_NEEDS_MISSING_API
  m.attr("with_define") = true;
#else
  m.attr("with_define") = false;
#endif
}
"""


@pytest.fixture
def sources(tmp_path, monkeypatch):
    root = tmp_path / "csrc"
    (root / "probe").mkdir(parents=True)
    (root / "probe" / "sources.txt").write_text("probe/probe.cpp\n")
    monkeypatch.setattr(runtime_module, "sources_root", lambda source_dir: root)
    monkeypatch.setenv("VISPROF_CACHE_DIR", str(tmp_path / "cache"))
    return root / "probe" / "probe.cpp"


def test_an_optional_define_that_does_not_compile_is_left_out(sources):
    sources.write_text(SOURCE)
    module, why = RuntimeModule("_visprof_probe_left_out", "probe", libraries=(),
                                optional_define="VISPROF_TEST_NEEDS_MISSING_API").load()
    assert why is None and module.with_define is False


def test_an_optional_define_that_compiles_is_kept(sources):
    sources.write_text(SOURCE.replace('#include "no_such_header_anywhere.h"', ""))
    module, why = RuntimeModule("_visprof_probe_kept", "probe", libraries=(),
                                optional_define="VISPROF_TEST_NEEDS_MISSING_API").load()
    assert why is None and module.with_define is True


def test_a_module_that_does_not_compile_says_why_in_one_line(sources):
    sources.write_text("#define VISPROF_TEST_BROKEN\n" + SOURCE)
    module, why = RuntimeModule("_visprof_probe", "probe", libraries=(), purpose="probe").load()
    assert module is None and why.startswith("compiling the probe failed") and "\n" not in why
