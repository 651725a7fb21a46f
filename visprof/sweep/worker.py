"""A sweep worker: ``python -m visprof.sweep.worker --device cuda:0 [--import MODULE ...] [--command-line]``.

The driver starts one per GPU (pinned with ``CUDA_VISIBLE_DEVICES``), or one or more for the
CPU, as a plain subprocess: a fresh interpreter that never runs the user's ``__main__`` (a
``multiprocessing`` spawn child would, and an unguarded script would then run twice). The
worker stays warm across cells: imports, torch and the CUDA context are paid for once.

Protocol: JSON lines. The driver writes ``{"type": "run", "id": N, "cell": {...}}`` or
``{"type": "exit"}`` to stdin; the worker writes ``{"type": "ready", "facts": {...}}`` once,
then ``{"type": "done", "id": N, "outcome": {...}}`` per cell, or ``{"type": "fatal", ...}``
if it cannot start. The protocol has a private copy of the original stdout; file descriptor
1 is pointed at stderr, so whatever a model prints (from Python or C++) cannot corrupt it.

Its messages name options as its driver's do (``--command-line``: as the CLI's flags, else as
Python's keywords; visprof/base/spelling.py), so a cell's failure reads alike from either.

A worker dies with its driver (``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread
everywhere), so a ``kill -9`` of the driver leaves no worker holding a GPU.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import threading
import time
from typing import IO, Any, Iterator

from visprof.base.spelling import command_line

__all__ = ["encode_message", "LineDecoder", "main"]


def encode_message(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":"), allow_nan=True) + "\n").encode()


class LineDecoder:
    """Bytes read from a pipe in chunks -> the JSON messages of its complete lines."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> Iterator[dict[str, Any]]:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _take_stdout() -> IO[bytes]:
    """A private handle on the original stdout for the protocol; fd 1 becomes stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return protocol


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch() -> None:  # also covers the race before prctl, and systems without it
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(1.0)

    if parent_pid:
        if os.getppid() != parent_pid:
            os._exit(1)
        threading.Thread(target=watch, name="visprof-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m visprof.sweep.worker")
    parser.add_argument("--device", default="cpu", help="cuda:0 (pinned with CUDA_VISIBLE_DEVICES) or cpu")
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE")
    parser.add_argument("--parent-pid", type=int, default=0)
    parser.add_argument("--command-line", action="store_true", help="name options as the CLI's flags")
    args = parser.parse_args(argv)
    with command_line(args.command_line):
        return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    protocol = _take_stdout()

    def send(message: dict[str, Any]) -> None:
        protocol.write(encode_message(message))
        protocol.flush()

    _die_with_parent(args.parent_pid)
    faulthandler.enable(file=sys.stderr, all_threads=True)  # a segfault leaves its Python stack in stderr
    started = time.perf_counter()
    try:
        from visprof.sweep.selection import import_modules

        import_modules(args.imports)
        from visprof.sweep.execute import execute_cell, worker_facts

        import visprof.profiler  # noqa: F401 - warm: torch, timm and the native extension
        facts = worker_facts(args.device)
        if args.device.startswith("cuda"):
            import torch

            # The CUDA context, once, outside every cell's time; no tensor yet, so the caching
            # allocator starts empty for the first cell's memory pass.
            torch.cuda.synchronize(args.device)
    except Exception as exc:  # noqa: BLE001 - told to the driver, which stops the sweep
        send({"type": "fatal", "error_class": type(exc).__name__, "message": str(exc)})
        return 2
    facts["startup_s"] = time.perf_counter() - started
    send({"type": "ready", "facts": facts})

    from visprof.sweep.plan import Cell

    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("type") == "exit":
            break
        if message.get("type") == "run":
            outcome = execute_cell(Cell.from_dict(message["cell"]), args.device)
            send({"type": "done", "id": message["id"], "outcome": outcome})
    return 0


if __name__ == "__main__":
    sys.exit(main())
