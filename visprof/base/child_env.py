"""The environment of a child Python that must import this very visprof.

Sweep workers, the process ncu profiles and the tests' subprocesses all start
``python -m visprof...``. Two things decide which visprof such a child imports:

* ``PYTHONPATH``: when visprof runs from a source tree (not installed), the tree goes first;
  an installed visprof (site-packages) is found anyway, and a site-packages folder is never
  put ahead of the standard library.
* the current directory: ``python -m`` and ``python -c`` put it first on ``sys.path``. Run from
  inside a visprof checkout, an installed visprof would be shadowed by the checkout's unbuilt
  sources (no ``_C``); ``PYTHONSAFEPATH`` (Python 3.11+) turns that off, and on Python 3.10,
  which ignores it, ``module_command`` starts the module with that entry dropped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

# The folder that holds the visprof package this process imported.
VISPROF_PATH = str(Path(__file__).resolve().parents[2])


def pythonpath_with_visprof(current: str | None) -> str:
    parts = [p for p in (current or "").split(os.pathsep) if p]
    if Path(VISPROF_PATH).name in ("site-packages", "dist-packages") or VISPROF_PATH in parts:
        return os.pathsep.join(parts)
    return os.pathsep.join([VISPROF_PATH, *parts])


def shadowing_checkout(cwd: Path | None = None) -> Path | None:
    """The current directory, when it holds visprof sources other than the visprof imported
    here. Ray puts its driver's working directory first on its workers' path (no
    ``PYTHONSAFEPATH`` helps there): they would import those sources instead."""
    cwd = (cwd or Path.cwd()).resolve()
    if (cwd / "visprof" / "__init__.py").is_file() and cwd != Path(VISPROF_PATH):
        return cwd
    return None


def child_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (default: this process's environment) plus ``extra``, set up so that a child
    Python imports the visprof this process runs."""
    env = {**(os.environ if base is None else base), **extra}
    env["PYTHONPATH"] = pythonpath_with_visprof(env.get("PYTHONPATH"))
    env["PYTHONSAFEPATH"] = "1"
    return env


# Python 3.10 has no PYTHONSAFEPATH. There the child drops the entry ``-c`` puts first on its path
# (the current directory, as '') itself, then runs the module as ``-m`` would: its ``__main__``,
# with sys.argv[0] the module's file.
HAS_SAFE_PATH = sys.version_info >= (3, 11)
_RUN_WITHOUT_CURRENT_DIR = ("import runpy, sys; sys.path[:1] = [p for p in sys.path[:1] if p]; "
                            "runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")


def module_command(module: str, *args: str) -> list[str]:
    """``python -m MODULE ARGS``, whose child (given ``child_env``) imports this visprof and not
    the sources in its working directory, on every Python visprof supports."""
    if HAS_SAFE_PATH:
        return [sys.executable, "-m", module, *args]
    return [sys.executable, "-c", _RUN_WITHOUT_CURRENT_DIR.format(module=module), *args]
