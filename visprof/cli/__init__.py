"""The ``visprof`` command line: one module per command group, shared argument types in one place.

app          the parser, ``main`` (the entry point), Ctrl-C and termination signals
stop_watchdog  a stop signal that one long native call cannot put off
arguments    the argument types the commands share
info         ``info``
profile      ``profile``
sweep        ``sweep`` and ``export``
compile      ``compare-compile``
diff         ``diff``
nsight       ``--nvtx-only``, ``nsys import/run``, ``ncu``
analysis     ``import-timm``, ``compare``, ``predict``, ``calibrate``, ``report``
calibration  the ``--calibration FILE`` option and ``calibrate --save``
bounds       ``bounds build/coverage``
"""
from visprof.cli.app import main

__all__ = ["main"]
