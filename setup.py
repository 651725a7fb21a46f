"""Builds visprof and its native extension visprof._C through CMake (CMakeLists.txt).

Environment switches:
  VISPROF_CPU_ONLY=1   hide the CUDA toolkit and build the CPU-only backend
  VISPROF_CUDA_ROOT    where the CUDA toolkit lives (default: CMake's search)
  VISPROF_BUILD_JOBS   parallel compile jobs
"""
import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


def torch_cuda_libraries() -> dict:
    """The libcupti/libcudart that an installed CUDA torch loads, so one CUPTI serves both.

    Found by path, without importing torch (that is slow and may not be installed).
    """
    found = {}
    for entry in sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_cupti/lib", "nvidia/cuda_runtime/lib"):
            lib_dir = Path(entry) / sub
            for key, pattern in (("cupti", "libcupti.so.*"), ("cudart", "libcudart.so.*")):
                matches = sorted(lib_dir.glob(pattern)) if lib_dir.is_dir() else []
                if matches and key not in found:
                    found[key] = str(matches[0])
    return found


class CMakeBuild(build_ext):
    def build_extension(self, ext: CMakeExtension) -> None:
        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = Path(self.build_temp).resolve() / ext.name
        build_dir.mkdir(parents=True, exist_ok=True)
        import pybind11

        args = [
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={out_dir}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            "-DCMAKE_BUILD_TYPE=Release",
        ]
        if os.environ.get("VISPROF_CPU_ONLY", "0") not in ("", "0"):
            args.append("-DVISPROF_WITH_CUDA=OFF")
        else:
            if os.environ.get("VISPROF_CUDA_ROOT"):
                args.append(f"-DCUDAToolkit_ROOT={os.environ['VISPROF_CUDA_ROOT']}")
            libs = torch_cuda_libraries()
            if "cupti" in libs:
                args.append(f"-DVISPROF_CUPTI_LIBRARY={libs['cupti']}")
            if "cudart" in libs:
                args.append(f"-DVISPROF_CUDART_LIBRARY={libs['cudart']}")
        jobs = os.environ.get("VISPROF_BUILD_JOBS", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), *args], check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "-j", jobs], check=True)


# Native modules compiled on first use against the user's torch (visprof/native/runtime_module.py).
RUNTIME_MODULES = ("aten_observer", "alloc_tracker")


class BuildPyWithRuntimeSources(build_py):
    """Ships the C++ sources of the runtime-compiled modules (the ATen observer, the allocator
    tracker) inside the package (visprof/_csrc/): they are compiled on first use against the
    torch of the environment they run in, which need not be the one (if any) present at build
    time (visprof/native/runtime_module.py)."""

    def run(self) -> None:
        super().run()
        csrc = ROOT / "csrc"
        for module in RUNTIME_MODULES:
            listed = (csrc / module / "sources.txt").read_text().splitlines()
            for relative in (line.strip() for line in listed):
                if relative and not relative.startswith("#"):
                    self.copy_file(str(csrc / relative), str(Path(self.build_lib) / "visprof" / "_csrc" / relative),
                                   preserve_mode=False)

    def copy_file(self, source, target, **kwargs):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        return super().copy_file(source, target, **kwargs)


setup(ext_modules=[CMakeExtension("visprof._C")],
      cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithRuntimeSources})
