"""Python face of the native extension visprof._C: tracer, timer, allocation hooks, NVTX.

Importing this package never touches CUDA; the extension itself is loaded on first use, and
a missing or broken extension surfaces as NativeUnavailableError with the reason, not as an
ImportError at `import visprof`.
"""
from visprof.native._loader import native, native_available, native_info

__all__ = ["native", "native_available", "native_info"]
