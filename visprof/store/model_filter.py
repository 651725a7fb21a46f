"""The model filter of a store's readers and of ``visprof export``: shell patterns (fnmatch's), a
comma list of them, and a name without a pretrained tag standing for its tagged rows too
(``resnet18`` matches ``resnet18.a1_in1k``, as a sweep takes the two for one model). Export had
found no row of ``resnet18`` where the sweep had said the store held it."""
from __future__ import annotations

import fnmatch
from typing import Sequence

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
    return globs


def matches_model(name: str, globs: list[str] | None) -> bool:
    return globs is None or any(fnmatch.fnmatchcase(name, glob) for glob in globs)
