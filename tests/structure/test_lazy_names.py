"""The lazily loaded names of visprof and visprof.analysis are the same object on every read.

visprof.analysis once gave ``compare`` as the function of its ``compare`` module: the first read
loaded the module, which bound the module under the same name, so ``visprof.analysis.compare`` was
the function once and the module after, and ``from visprof.analysis import compare`` the module.
Each package is read in a fresh interpreter, since an earlier test's imports would hide the order.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import importlib, sys
package = importlib.import_module(sys.argv[1])
for name in package.__all__:
    first = getattr(package, name)  # loads what it needs
    again = getattr(package, name)
    assert first is again, f"{sys.argv[1]}.{name}: {first!r} on the first read, {again!r} after"
print("ok", len(package.__all__))
"""


@pytest.mark.parametrize("package", ["visprof.analysis", "visprof"])
def test_each_lazy_name_is_one_object(package):
    done = subprocess.run([sys.executable, "-c", CHECK, package], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1]
    assert done.stdout.startswith("ok ")


DIR = """
import importlib, json, sys
package = importlib.import_module(sys.argv[1])
offered = dir(package)
submodule = getattr(package, sys.argv[2])  # served on first use, as completion offered it
print(json.dumps({"offered": offered, "all": package.__all__, "submodule": submodule.__name__}))
"""


@pytest.mark.parametrize("package, submodule", [("visprof", "sweep"), ("visprof.analysis", "sources"),
                                                ("visprof.sweep", "selection"), ("visprof.nsight", "ncu_csv")])
def test_a_notebooks_completion_offers_the_lazy_names_and_submodules_not_the_packages_own_imports(package, submodule):
    """dir(visprof), what completion after ``visprof.`` lists, had the package's own imports (importlib,
    Any, annotations) and none of profile, trace or the subpackages, which load on first use; the
    same in visprof.analysis, visprof.sweep and visprof.nsight."""
    import json

    done = subprocess.run([sys.executable, "-c", DIR, package, submodule], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    offered = set(listed["offered"])
    assert set(listed["all"]) <= offered and submodule in offered
    assert listed["submodule"] == f"{package}.{submodule}"
    assert not offered & {"importlib", "Any", "annotations"}
    if package == "visprof":
        assert {"profile", "trace", "text_report", "analysis", "__version__"} <= offered
        assert "cli" not in offered  # only the subpackages the docs name


def test_an_unknown_name_is_an_attribute_error_naming_the_package():
    import visprof.analysis

    with pytest.raises(AttributeError, match="^module 'visprof.analysis' has no attribute 'sourcez'$"):
        visprof.analysis.sourcez
