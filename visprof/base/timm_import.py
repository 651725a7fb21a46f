"""timm, for every visprof module that builds or names models. A timm that is installed but does
not import (most often: a torchvision built for another torch, whose ops fail to register with a
RuntimeError) is one line naming the versions, not a traceback from deep inside torchvision."""
from __future__ import annotations

from types import ModuleType

from visprof.base.errors import BrokenDependencyError


def import_timm() -> ModuleType:
    try:
        import timm
    except ModuleNotFoundError:
        raise  # not installed at all: pip's own message is the clearer one
    except Exception as exc:  # an ImportError or RuntimeError raised while timm imports torchvision
        raise BrokenDependencyError("timm", exc) from exc
    return timm


__all__ = ["import_timm"]
