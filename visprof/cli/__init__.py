"""The ``visprof`` command line: one module per command group, shared argument types in one place.

app        the parser, ``profile`` and ``info``, and ``main`` (the entry point)
arguments  the argument types the commands share
sweep      ``sweep`` and ``export``
compile    ``compare-compile``
nsight     ``--nvtx-only``, ``nsys import/run``, ``ncu``
analysis   ``import-timm``, ``compare``, ``predict``, ``report``
"""
from visprof.cli.app import main

__all__ = ["main"]
