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


def test_a_notebooks_completion_offers_the_lazy_names_and_not_the_packages_own_imports():
    """dir(visprof), what completion after ``visprof.`` lists, had the package's own imports (importlib,
    Any, annotations) and none of profile, trace or the subpackages, which load on first use."""
    code = "import visprof, json; print(json.dumps(dir(visprof)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    import json

    offered = set(json.loads(done.stdout))
    assert {"profile", "trace", "text_report", "ProfileResult", "analysis", "sweep", "__version__"} <= offered
    assert not offered & {"importlib", "Any", "annotations"}
