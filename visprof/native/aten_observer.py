"""visprof._aten_observer: the C++ RecordFunction observer that links kernels to ops in the
attributed pass without Python per op (csrc/aten_observer/aten_observer.cpp).

RecordFunction is torch C++ API with no stable ABI across torch versions, so the module is
compiled on first use against the torch in this process, once per (sources, torch, Python)
combination, and cached in ``$VISPROF_CACHE_DIR`` (default ``~/.cache/visprof``). Compiling
takes about 10 s with the system C++ compiler (``$CXX``, default ``c++``). Without a
compiler, or with ``VISPROF_ATEN_OBSERVER=0``, ``load_observer()`` says why and visprof
captures ops with its Python dispatch mode instead (same results, more overhead per op).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

MODULE_NAME = "_visprof_aten_observer"
_PACKAGE = Path(__file__).resolve().parent.parent


def sources_root() -> Path | None:
    """The C++ sources: shipped inside an installed package, or the checkout's csrc/."""
    for root in (_PACKAGE / "_csrc", _PACKAGE.parent / "csrc"):
        if (root / "aten_observer" / "sources.txt").is_file():
            return root
    return None


def _source_files(root: Path) -> list[Path]:
    lines = (root / "aten_observer" / "sources.txt").read_text().splitlines()
    return [root / line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _cache_dir() -> Path:
    if os.environ.get("VISPROF_CACHE_DIR"):
        return Path(os.environ["VISPROF_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "visprof"


def _compile_command(source: Path, root: Path, output: Path) -> list[str]:
    import torch

    torch_dir = Path(torch.__file__).resolve().parent
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return [
        os.environ.get("CXX", "c++"), "-O2", "-shared", "-fPIC", "-std=c++20", "-fvisibility=hidden",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-DTORCH_EXTENSION_NAME={MODULE_NAME}",
        f"-I{root}", f"-I{torch_dir / 'include'}", f"-I{sysconfig.get_paths()['include']}",
        str(source), f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{torch_dir / 'lib'}",
        "-o", str(output),
    ]


def _build(root: Path) -> Path:
    """Compiles (or finds in the cache) the module for this torch and Python; its path."""
    import torch

    files = _source_files(root)
    key = hashlib.sha256()
    for part in (torch.__version__, str(Path(torch.__file__).resolve()), sys.version, os.environ.get("CXX", "c++")):
        key.update(part.encode())
    for path in files:
        key.update(path.read_bytes())
    target_dir = _cache_dir() / f"aten_observer-{key.hexdigest()[:16]}"
    target = target_dir / f"{MODULE_NAME}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if target.is_file():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    # Once per torch install: say why this run pauses.
    print(f"visprof: compiling its ATen observer for torch {torch.__version__} (first use only, ~10 s)",
          file=sys.stderr, flush=True)
    # Compile beside the target and rename: concurrent processes never load half a file.
    with tempfile.TemporaryDirectory(dir=target_dir) as scratch:
        partial = Path(scratch) / target.name
        proc = subprocess.run(_compile_command(files[0], root, partial), capture_output=True, text=True)
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if "error" in line] or proc.stderr.splitlines()[-1:]
            raise RuntimeError(f"compiling the ATen observer failed: {errors[0] if errors else proc.returncode}")
        os.replace(partial, target)
    return target


@functools.lru_cache(maxsize=1)
def load_observer() -> tuple[Any, str | None]:
    """(module, None), or (None, why it is unavailable)."""
    if os.environ.get("VISPROF_ATEN_OBSERVER", "1") in ("0", ""):
        return None, "VISPROF_ATEN_OBSERVER=0"
    root = sources_root()
    if root is None:
        return None, "its C++ sources are not installed with visprof"
    try:
        path = _build(root)
        spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (OSError, RuntimeError, ImportError) as exc:
        return None, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return module, None
