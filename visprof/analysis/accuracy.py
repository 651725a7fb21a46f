"""ImageNet-1k top-1 of timm's pretrained weights, for the accuracy axes of the report.

The data is a compact copy of timm's ``results-imagenet.csv`` shipped in the package
(``visprof/data/imagenet_accuracy.csv``; provenance and license in its header).
"""
from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

from visprof.analysis.families import architecture

ACCURACY_PATH = Path(__file__).resolve().parent.parent / "data" / "imagenet_accuracy.csv"


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, float], dict[tuple[str, int], float], dict[str, float]]:
    """(top-1 by tagged name, best top-1 by (architecture, size), best top-1 by architecture)."""
    tagged: dict[str, float] = {}
    by_size: dict[tuple[str, int], float] = {}
    by_arch: dict[str, float] = {}
    with open(ACCURACY_PATH, encoding="utf-8") as fh:
        for row in csv.DictReader(line for line in fh if not line.startswith("#")):
            top1 = float(row["top1"])
            tagged[row["model"]] = top1
            arch = architecture(row["model"])
            key = (arch, int(row["img_size"]))
            by_size[key] = max(top1, by_size.get(key, 0.0))
            by_arch[arch] = max(top1, by_arch.get(arch, 0.0))
    return tagged, by_size, by_arch


def top1(model: str, img_size: int | None = None) -> float | None:
    """Top-1 (%) of ``model``: its own tag's if it names one (``resnet50.a1_in1k``), else the
    best pretrained tag of the architecture evaluated at ``img_size``; None if unknown.
    (An architecture evaluated at other sizes only is unknown at this one: accuracy depends on it.)"""
    tagged, by_size, by_arch = _table()
    if "." in model and model in tagged:
        return tagged[model]
    arch = architecture(model)
    if img_size is None:
        return by_arch.get(arch)
    return by_size.get((arch, int(img_size)))


__all__ = ["ACCURACY_PATH", "top1"]
