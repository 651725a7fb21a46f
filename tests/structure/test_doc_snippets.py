"""The Python examples of README.md and docs/ name only what visprof has: every visprof import resolves,
and every attribute read off an imported visprof module or class exists (a renamed or moved function
leaves a copied example raising AttributeError in a user's notebook)."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def snippets():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for i, code in enumerate(BLOCK.findall(path.read_text())):
            yield pytest.param(code, id=f"{path.name}#{i}")


def visprof_names(tree: ast.AST) -> tuple[dict[str, object], list[str]]:
    """The names the code imports from visprof (name -> module, class or function) and those that do
    not resolve."""
    bound, missing = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "visprof":
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if value is None:
                    try:
                        value = importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        missing.append(f"from {node.module} import {alias.name}")
                        continue
                bound[alias.asname or alias.name] = value
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "visprof":
                    importlib.import_module(alias.name)
                    top = alias.asname or alias.name.split(".")[0]
                    bound[top] = importlib.import_module(alias.name if alias.asname else top)
    return bound, missing


@pytest.mark.parametrize("code", list(snippets()))
def test_a_documented_example_names_only_what_visprof_has(code):
    tree = ast.parse(code)
    bound, missing = visprof_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            if not hasattr(bound[node.value.id], node.attr):
                missing.append(f"{node.value.id}.{node.attr}")
    assert not missing, f"the example names what visprof lacks: {', '.join(missing)}"


def test_the_check_catches_a_moved_function():
    """The example this check was written for: fleet_from_comparison lives in calibration_fleet."""
    tree = ast.parse("from visprof.analysis import calibrate\nfleet = calibrate.fleet_from_comparison(c, p, t)\n")
    bound, missing = visprof_names(tree)
    assert not missing and not hasattr(bound["calibrate"], "fleet_from_comparison")
