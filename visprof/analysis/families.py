"""A model's family: the timm module that defines its architecture.

``vit_base_patch16_224`` and ``deit3_small_patch16_224`` are both ``vision_transformer``;
``resnet50d`` and ``seresnext26t_32x4d`` are ``resnet``; ``coatnet_0_rw_224`` is
``maxxvit``. Name prefixes would get these wrong (``vit_base_resnet50_384`` is a hybrid,
``vision_transformer_hybrid``), the registry does not.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import sys
from functools import lru_cache
from pathlib import Path

from visprof.base.cache import cache_dir
from visprof.base.errors import OutputWriteError
from visprof.base.outputs import atomic_write_all
from visprof.base.timm_import import import_timm

UNKNOWN = "unknown"


def architecture(name: str) -> str:
    """``timm/resnet50.a1_in1k`` -> ``resnet50``: the name without hub prefix or pretrained tag."""
    name = name.strip()
    for prefix in ("hf-hub:", "hf_hub:", "timm/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name.startswith("timm/"):
        name = name[len("timm/"):]
    return name.split(".", 1)[0]


@lru_cache(maxsize=None)
def family(name: str) -> str:
    """The timm module defining ``name`` (e.g. ``vision_transformer``), or "unknown" for a
    name this timm does not register (a user module, a model renamed since)."""
    arch = architecture(name)
    if "timm" in sys.modules:  # imported already: the live registry costs nothing, and has the models a script registered
        registry = _timm_registry()
        return UNKNOWN if registry is None else _module_of(registry, arch)
    return _saved_registry().get(arch, UNKNOWN)


def _timm_registry():
    """timm's model registry module, or None without timm."""
    try:
        import_timm()
        from timm.models import _registry
    except ModuleNotFoundError:
        return None
    return _registry


def _module_of(registry, arch: str) -> str:
    """The timm module registering ``arch`` (``is_model``), else UNKNOWN. Deprecated names
    (``vit_base_resnet50_384``) are registered under the module of the model they now stand for,
    while their entry point is a wrapper defined in timm's registry module."""
    entry = registry._model_entrypoints.get(arch)
    if entry is None:
        return UNKNOWN
    return registry._model_to_module.get(arch) or entry.__module__.rsplit(".", 1)[-1]


def _live_registry() -> dict[str, str]:
    """Every model the installed timm registers -> its module."""
    registry = _timm_registry()
    return {} if registry is None else {arch: _module_of(registry, arch) for arch in registry._model_entrypoints}


@lru_cache(maxsize=1)
def _saved_registry() -> dict[str, str]:
    """``_live_registry`` of the installed timm, kept in the cache folder: importing timm (and torch
    with it) to read it took 3-4 s of an analysis command that needs neither otherwise. Keyed by
    timm's version, place and the time its models folder last changed, so an upgrade or an edited
    checkout of timm is read afresh; a file that cannot be read or written is made or skipped
    without a word (the cache is a speed-up, never a source of truth)."""
    spec = importlib.util.find_spec("timm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    models = Path(next(iter(spec.submodule_search_locations))) / "models"
    try:
        key = f"{importlib.metadata.version('timm')}|{models}|{models.stat().st_mtime_ns}"
    except (importlib.metadata.PackageNotFoundError, OSError):
        return _live_registry()
    path = cache_dir() / f"timm-families-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    try:
        saved = json.loads(path.read_text())
        if isinstance(saved, dict) and saved.get("key") == key and isinstance(saved.get("families"), dict):
            return saved["families"]
    except (OSError, ValueError):
        pass
    families = _live_registry()
    with contextlib.suppress(OSError, OutputWriteError):  # written whole or not at all: processes may race to make it
        atomic_write_all({path: json.dumps({"key": key, "families": families})}, make_folders=True)
    return families


__all__ = ["UNKNOWN", "architecture", "family"]
