"""Native modules compiled on first use against the torch in this process.

Some of visprof's native code calls torch's C++ API (RecordFunction for the ATen observer,
the CUDA caching allocator's trace for the memory pass), which has no stable ABI across torch
versions. visprof._C cannot link it, so each such module is compiled on first use against the
running torch, once per (sources, torch, Python, compiler) combination, and cached in
``$VISPROF_CACHE_DIR`` (default ``~/.cache/visprof``). Compiling takes about 10 s with the
system C++ compiler (``$CXX``, default ``c++``, C++20). Without a compiler ``load()`` says why
and visprof takes its fallback for that module.

Each module's files are listed in ``csrc/<dir>/sources.txt`` (first line: the file to
compile); setup.py ships every listed file inside the package (visprof/_csrc/).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from visprof.base.cache import cache_dir

_PACKAGE = Path(__file__).resolve().parent.parent
# NDEBUG as torch's release builds: some torch structs hold debug-only members, and inline code
# compiled here must see the layout libtorch was built with.
_FLAGS = ("-O2", "-DNDEBUG", "-shared", "-fPIC", "-std=c++20", "-fvisibility=hidden")


@dataclass(frozen=True)
class RuntimeModule:
    name: str  # the Python module name it is compiled as
    source_dir: str  # under csrc/: holds sources.txt
    libraries: tuple[str, ...] = ("c10", "torch_cpu")
    cuda_headers: bool = False  # includes CUDA runtime headers (c10/cuda/...)
    purpose: str = ""  # shown once while it compiles
    # A -D the module is compiled with where it compiles, and without where it does not: code
    # that leans on torch internals that may change (the ATen observer's schema check).
    optional_define: str = ""

    def load(self) -> tuple[Any, str | None]:
        """(module, None), or (None, why it is unavailable). Compiles when not cached on disk;
        callers keep the loaded module (each wrapper caches it per process)."""
        root = sources_root(self.source_dir)
        if root is None:
            return None, "its C++ sources are not installed with visprof"
        try:
            path = _build(self, root)
            spec = importlib.util.spec_from_file_location(self.name, path)
            loaded = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded)
        except (OSError, RuntimeError, ImportError) as exc:
            return None, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return loaded, None


def sources_root(source_dir: str) -> Path | None:
    """The C++ sources: shipped inside an installed package, or the checkout's csrc/."""
    for root in (_PACKAGE / "_csrc", _PACKAGE.parent / "csrc"):
        if (root / source_dir / "sources.txt").is_file():
            return root
    return None


def _source_files(root: Path, source_dir: str) -> list[Path]:
    lines = (root / source_dir / "sources.txt").read_text().splitlines()
    return [root / line.strip() for line in lines if line.strip() and not line.startswith("#")]


def cuda_include_dir() -> Path | None:
    """A folder holding cuda_runtime_api.h: $CUDA_HOME/$CUDA_PATH, /usr/local/cuda, or the
    headers of NVIDIA's pip packages that a CUDA build of torch pulls in."""
    candidates = [Path(os.environ[v]) / "include" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    candidates.append(Path("/usr/local/cuda/include"))
    for entry in sys.path:
        for sub in ("nvidia/cu13/include", "nvidia/cuda_runtime/include"):
            candidates.append(Path(entry) / sub)
    return next((c for c in candidates if (c / "cuda_runtime_api.h").is_file()), None)


def _compile_command(module: RuntimeModule, source: Path, root: Path, output: Path, cuda_include: Path | None,
                     defines: tuple[str, ...] = ()) -> list[str]:
    import torch

    torch_dir = Path(torch.__file__).resolve().parent
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    includes = [f"-I{root}", f"-I{torch_dir / 'include'}", f"-I{sysconfig.get_paths()['include']}"]
    if cuda_include is not None:
        includes.append(f"-I{cuda_include}")
    return [
        os.environ.get("CXX", "c++"), *_FLAGS, f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        f"-DTORCH_EXTENSION_NAME={module.name}", *defines, *includes,
        str(source), f"-L{torch_dir / 'lib'}", *(f"-l{lib}" for lib in module.libraries),
        f"-Wl,-rpath,{torch_dir / 'lib'}", "-o", str(output),
    ]


def _build(module: RuntimeModule, root: Path) -> Path:
    """Compiles (or finds in the cache) the module for this torch and Python; its path."""
    import torch

    cuda_include = cuda_include_dir() if module.cuda_headers else None
    if module.cuda_headers and cuda_include is None:
        raise RuntimeError("no CUDA headers found (cuda_runtime_api.h); set CUDA_HOME")
    files = _source_files(root, module.source_dir)
    key = hashlib.sha256()
    for part in (*_FLAGS, module.optional_define, torch.__version__, str(Path(torch.__file__).resolve()),
                 sys.version, os.environ.get("CXX", "c++"), str(cuda_include)):
        key.update(part.encode())
    for path in files:
        key.update(path.read_bytes())
    target_dir = cache_dir() / f"{module.source_dir}-{key.hexdigest()[:16]}"
    target = target_dir / f"{module.name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if target.is_file():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    # Once per torch install: say why this run pauses.
    print(f"visprof: compiling its {module.purpose or module.name} for torch {torch.__version__} "
          "(first use only, ~10 s)", file=sys.stderr, flush=True)
    # Compile beside the target and rename: concurrent processes never load half a file.
    with tempfile.TemporaryDirectory(dir=target_dir) as scratch:
        partial = Path(scratch) / target.name
        for defines in ((f"-D{module.optional_define}",), ()) if module.optional_define else ((),):
            proc = subprocess.run(_compile_command(module, files[0], root, partial, cuda_include, defines),
                                  capture_output=True, text=True)
            if proc.returncode == 0:
                break
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if "error" in line] or proc.stderr.splitlines()[-1:]
            raise RuntimeError(f"compiling the {module.purpose or module.name} failed: "
                               f"{errors[0] if errors else proc.returncode}")
        os.replace(partial, target)
    return target
