"""Where visprof keeps what it makes once and reads again: compiled runtime modules
(``visprof.native.runtime_module``), timm's model -> family map (``visprof.analysis.families``).
``$VISPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/visprof``, else ``~/.cache/visprof``. Anything in it
may be deleted at any time: it is made again when next needed."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    if os.environ.get("VISPROF_CACHE_DIR"):
        return Path(os.environ["VISPROF_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "visprof"


__all__ = ["cache_dir"]
