"""The package's layering, read from the code's own imports (docs/architecture.md).

Every import of a visprof module, at the top of a file or inside a function, must go to the
same layer or one below it; the module graph has no cycle; and no module imports another
module's private (`_name`) attribute. A new import that breaks one of these fails here, with
the file, the line and the rule.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "visprof"

# Bottom to top. A module of layer i may import layers 0..i; the top-level modules
# `visprof/__init__.py` and `__main__.py` are the package's face and may import anything.
LAYERS = [
    ("base", ["visprof.base"]),
    ("native", ["visprof.native", "visprof._C"]),
    ("result", ["visprof.result"]),
    ("attribution", ["visprof.attribution"]),
    ("capture", ["visprof.capture"]),
    ("passes", ["visprof.passes"]),
    ("store", ["visprof.store"]),
    ("analysis", ["visprof.analysis"]),
    ("report", ["visprof.report"]),
    ("entry points", ["visprof.profiler", "visprof.trace_session"]),
    ("nsight", ["visprof.nsight"]),
    ("sweep", ["visprof.sweep"]),
    ("cli", ["visprof.cli"]),
]
FACE = {"visprof", "visprof.__main__"}
# The one private name imported from outside its package: the compiled extension, loaded in one place.
ALLOWED_PRIVATE = {("visprof.native._loader", "visprof", "_C")}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def imports(path: Path):
    """(line, imported module, imported names) for every visprof import in the file, at any depth."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "visprof" or target.startswith("visprof."):
                yield node.lineno, target, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("visprof"):
                    yield node.lineno, alias.name, []


def resolved_targets(target: str, names: list[str]) -> list[str]:
    """`from visprof.x import y`: y is a submodule when visprof/x/y(.py) exists."""
    out = []
    for name in names or [None]:
        candidate = f"{target}.{name}" if name else target
        path = PACKAGE.parent.joinpath(*candidate.split("."))
        out.append(candidate if name and (path.with_suffix(".py").exists() or path.is_dir()) else target)
    return out


SOURCES = sorted(PACKAGE.rglob("*.py"))
EDGES = [(module_name(p), line, target, names, resolved_targets(target, names))
         for p in SOURCES for line, target, names in imports(p)]


def test_every_module_has_a_layer():
    missing = [module_name(p) for p in SOURCES if module_name(p) not in FACE and layer_of(module_name(p)) is None]
    assert not missing, f"modules outside every layer (add them to a package): {missing}"


def test_imports_only_go_down():
    upward = []
    for source, line, target, names, targets in EDGES:
        if source in FACE:
            continue
        for t in targets:
            here, there = layer_of(source), layer_of(t)
            if there is None and t == "visprof" and names not in (["__version__"], ["_C"]):
                there = len(LAYERS)  # the package's face is above every layer (its version string and the extension are not)
            if there is not None and there > here:
                upward.append(f"{source}:{line} imports {t} ({LAYERS[here][0]} -> {LAYERS[min(there, len(LAYERS) - 1)][0]})")
    assert not upward, "imports that climb a layer:\n" + "\n".join(upward)


def test_no_private_name_crosses_a_module():
    crossing = []
    for source, line, target, names, _ in EDGES:
        private = [n for n in names if is_private(n) and (source, target, n) not in ALLOWED_PRIVATE]
        # A package's private module (native/_loader.py) serves its own package only, as
        # CuPy's cupyx/profiler/_time.py does behind its __init__.
        parts = target.split(".")
        private_module = [p for i, p in enumerate(parts) if is_private(p) and not within(source, ".".join(parts[:i]))]
        if (private or private_module) and target != source:
            crossing.append(f"{source}:{line} imports {', '.join(private) or target} from {target}")
    assert not crossing, "private names imported across modules:\n" + "\n".join(crossing)


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_module_graph_has_no_cycle():
    graph: dict[str, set[str]] = {}
    for source, _, _, _, targets in EDGES:
        graph.setdefault(source, set()).update(t for t in targets if t != source)
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, stack: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(nxt_key(node), ())):
            if state.get(nxt) == 1:
                cycle.extend(stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt])
                return True
            if state.get(nxt) is None and visit(nxt, stack + [nxt]):
                return True
        state[node] = 2
        return False

    def nxt_key(node: str) -> str:
        return node

    for start in sorted(graph):
        if state.get(start) is None and visit(start, [start]):
            break
    assert not cycle, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("source,expected", [
    ("import visprof.cli.app\n", "visprof.cli.app"),
    ("from visprof.base import hardware\n", "visprof.base.hardware"),
])
def test_the_reader_sees_imports_inside_functions(tmp_path, source, expected):
    # The rule is only as good as the reader: imports inside functions count too.
    path = PACKAGE / "base" / "errors.py"
    wrapped = "def f():\n    " + source
    found = [resolved_targets(t, n) for _, t, n in imports_of_text(wrapped, path)]
    assert [expected] in found


def imports_of_text(text: str, path: Path):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            yield node.lineno, node.names[0].name, []
