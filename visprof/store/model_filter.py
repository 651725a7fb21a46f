"""The model filter of a store's readers and of ``visprof export``: shell patterns (fnmatch's), a
comma list of them, and a name without a pretrained tag standing for its tagged rows too
(``resnet18`` matches ``resnet18.a1_in1k``, as a sweep takes the two for one model). Export had
found no row of ``resnet18`` where the sweep had said the store held it. The other way round, a
name with timm's default tag stands for its untagged rows (``resnet50.a1_in1k`` matches ``resnet50``,
which timm builds with that tag); predict had found no profile of a name a published table gave."""
from __future__ import annotations

import fnmatch
from typing import Sequence

from visprof.base.timm_import import import_timm

GLOB_CHARACTERS = "*?["

__all__ = ["matches_model", "model_globs"]


def model_globs(model: str | Sequence[str] | None) -> list[str] | None:
    """The shell patterns ``model`` stands for; None for no filter."""
    if model is None:
        return None
    globs: list[str] = []
    for item in [model] if isinstance(model, str) else model:
        for pattern in (part.strip() for part in item.split(",")):
            if pattern:
                globs.append(pattern)
                if "." not in pattern and not pattern.endswith("*"):
                    globs.append(f"{pattern}.*")  # its tagged rows
                elif (untagged := untagged_default(pattern)) is not None:
                    globs.append(untagged)
    return globs


def untagged_default(name: str) -> str | None:
    """``name``'s architecture where ``name`` is a plain name with the pretrained tag timm gives that
    architecture by default (``resnet50.a1_in1k`` -> ``resnet50``); else None. Another tag may differ in
    more than weights (``vit_base_patch16_224.augreg_in21k`` has a 21,843-class head): no match."""
    if "." not in name or any(c in name for c in GLOB_CHARACTERS):
        return None
    architecture, tag = name.split(".", 1)
    try:
        cfg = import_timm().models.get_pretrained_cfg(architecture)
    except Exception:  # noqa: BLE001 - no timm, or a name it has no config for: a pattern as any other
        return None
    return architecture if cfg is not None and getattr(cfg, "tag", None) == tag else None


def matches_model(name: str, globs: list[str] | None) -> bool:
    """Whatever the case: sweep and profile take RESNET10T as resnet10t, and export --model RESNET10T
    had matched none of its rows."""
    return globs is None or any(fnmatch.fnmatchcase(name.casefold(), glob.casefold()) for glob in globs)
