"""The names a package serves on first use, so that importing it stays cheap (torch, timm and the
native extension load only when something needs them), and what completion lists for it.

    __getattr__, __dir__ = lazy_names(__name__, {"profile": ("visprof.profiler", "profile"),
                                                 "compare": ("visprof.analysis.compare", None)})

A name maps to (module, attribute), or (module, None) for the module itself. The package's own
submodules are served the same way (``visprof.analysis.sources`` after ``import visprof``), and
``dir(package)`` lists all of them with ``__all__``: a notebook's completion after ``package.``
had offered the package's own imports (``importlib``, ``Any``) and none of its API.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Callable, Iterable, Mapping


def lazy_names(package: str, names: Mapping[str, tuple[str, str | None]], public: Iterable[str] | None = None
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package named ``package``; ``public``: the submodules it
    serves and lists (default: every one whose name has no leading underscore)."""
    chosen = None if public is None else frozenset(public)

    def submodules() -> set[str]:
        if chosen is not None:
            return set(chosen)
        import pkgutil  # here: importing a package must stay cheap

        return {info.name for info in pkgutil.iter_modules(sys.modules[package].__path__)
                if not info.name.startswith("_")}

    def get(name: str) -> Any:
        if name in names:
            module, attribute = names[name]
            value = importlib.import_module(module)
            if attribute is not None:
                value = getattr(value, attribute)
                # kept, so the next read is the same object without this call (a module binds itself)
                setattr(sys.modules[package], name, value)
            return value
        if not name.startswith("_") and name in submodules():
            return importlib.import_module(f"{package}.{name}")  # importing it binds it on the package
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def listed() -> list[str]:
        module = sys.modules[package]
        own = {name for name, value in vars(module).items() if not name.startswith("_") and _ours(value, package)}
        version = ["__version__"] if hasattr(module, "__version__") else []
        return sorted({*getattr(module, "__all__", ()), *names, *submodules(), *own, *version})

    return get, listed


def _ours(value: Any, package: str) -> bool:
    """A package global that is its API, not one of its own imports (``importlib``, ``typing.Any``,
    ``from __future__ import annotations``): a submodule of it, or a value visprof defines."""
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith(f"{package}.")
    defined_in = getattr(value, "__module__", None)  # None: a plain value (a dict, a number) set in the package
    return defined_in is None or defined_in.split(".")[0] == "visprof"


__all__ = ["lazy_names"]
