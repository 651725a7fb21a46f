"""Errors that visprof raises for the user to read.

Every ``VisprofError`` carries a message written for the person at the terminal: the CLI
prints it as ``visprof: error: <message>`` with no traceback, and exits with the class's
``exit_code``. Anything that is not a ``VisprofError`` is a bug and keeps its traceback.
A remedy names options in the caller's terms (``batch_size=8`` from Python, ``--batch-size 8``
in the CLI: visprof/base/spelling.py), fixed when the error is made.

The errors pickle with all their fields, so that one raised in another process (a Ray task,
a user's multiprocessing pool) arrives whole, remedy included.
"""
from __future__ import annotations

from typing import Sequence

from visprof.base.spelling import option

# Exit codes of the CLI, one per kind of failure, so scripts driving sweeps can tell a typo
# (don't retry) from an OOM (retry smaller) from a missing GPU (retry elsewhere).
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_OUT_OF_MEMORY = 3
EXIT_NO_DEVICE = 4
EXIT_OUTPUT = 5  # an output file could not be written (full disk, permissions)
EXIT_TOOL = 6  # an external tool visprof drives (nsys, ncu) is missing or failed


def _restore(cls: type, args: tuple, state: dict) -> "VisprofError":
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class VisprofError(Exception):
    """Base class: ``str(error)`` is the message shown to the user."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        # Subclasses take structured arguments, not the message; rebuild from the fields.
        return _restore, (type(self), self.args, dict(self.__dict__))


class BadInputError(VisprofError, ValueError):
    """A batch size, image size, precision or device string that cannot be used."""

    exit_code = EXIT_BAD_INPUT


class NotAResultError(BadInputError):
    """A file given as a profile result that is another kind of document (its ``schema`` names
    something else, or none): as opposed to a result that is damaged or does not fit the schema."""


class UnknownModelError(VisprofError, LookupError):
    """A model name that timm does not know; ``suggestions`` holds close matches."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, name: str, suggestions: Sequence[str] = (), detail: str = ""):
        self.name = name
        self.suggestions = list(suggestions)
        message = f"unknown model {name!r}"
        if detail:
            message += f": {detail}"
        if self.suggestions:
            message += "; did you mean: " + ", ".join(self.suggestions) + "?"
        else:
            message += " (timm.list_models() lists the names visprof accepts)"
        super().__init__(message)


class NoGPUError(VisprofError):
    """A CUDA device was asked for but none is visible."""

    exit_code = EXIT_NO_DEVICE

    def __init__(self, reason: str = "", cpu_remedy: str | None = None):
        message = "no CUDA GPU is visible to PyTorch"
        if reason:
            message += f" ({reason})"
        cpu_remedy = cpu_remedy or f"pass {option('device', 'cpu')} for the CPU path"
        message += f"; run on a GPU machine, or {cpu_remedy}"
        super().__init__(message)
        self.reason = reason


class DeviceNotFoundError(VisprofError):
    """A device such as ``cuda:3`` that does not exist here; lists the visible ones."""

    exit_code = EXIT_NO_DEVICE

    def __init__(self, device: str, visible: Sequence[str] = (), note: str = ""):
        self.device = device
        self.visible = list(visible)
        shown = ", ".join(self.visible) if self.visible else "none"
        message = f"device {device!r} does not exist; visible devices: {shown}"
        if note:
            message += f" ({note})"
        super().__init__(message)


class OutOfMemoryError(VisprofError):
    """The model did not fit in the device's memory (GPU memory, or host RAM on the CPU) at
    ``batch_size``.

    ``max_batch_size`` is the largest batch found to fit. It is None when no search ran
    (``searched=False``) or when not even batch 1 fits (``searched=True``). On the CPU it is
    an estimate from the memory one sample needs (``estimated=True``), since trying a batch
    that fits can take minutes there; ``detail`` says how much was needed and available.
    """

    exit_code = EXIT_OUT_OF_MEMORY

    def __init__(
        self,
        batch_size: int,
        max_batch_size: int | None = None,
        device: str | None = None,
        searched: bool = False,
        estimated: bool = False,
        detail: str = "",
    ):
        self.batch_size = batch_size
        self.max_batch_size = max_batch_size
        self.device = device
        self.searched = searched
        self.estimated = estimated
        self.detail = detail
        host = device is not None and device.startswith("cpu")
        where = " on the CPU" if host else f" on {device}" if device else ""
        message = f"out of {'host memory (RAM)' if host else 'GPU memory'} at batch size {batch_size}{where}"
        if detail:
            message += f" ({detail})"
        if max_batch_size is not None:
            about = "about " if estimated else ""
            message += (f"; the largest batch that fits is {about}{max_batch_size} "
                        f"({option('batch_size', max_batch_size)})")
            if estimated:
                message += ", estimated from the memory one sample needs"
        elif searched:
            precision = "" if host else "bf16/fp16 or "
            message += f"; not even batch size 1 fits (try {precision}a smaller {option('img_size')})"
        elif batch_size > 1:
            message += f"; try a smaller {option('batch_size')}"
        super().__init__(message)


class CuptiUnavailableError(VisprofError):
    """CUPTI is held by another profiler, so the attributed pass cannot trace kernels."""

    HOLDERS = "torch.profiler, Nsight Systems (nsys) or Nsight Compute (ncu)"

    def __init__(self, detail: str = ""):
        message = (
            "CUPTI is unavailable: another profiler holds it in this process "
            f"({self.HOLDERS}); run visprof outside it, or skip the attributed pass "
            f"with {option('passes', ('timing', 'memory'))}"
        )
        if detail:
            message += f" [{detail}]"
        super().__init__(message)
        self.detail = detail


class ModelForwardError(VisprofError):
    """The model raised during its forward pass; the original is kept as ``__cause__``."""

    def __init__(self, model_name: str, input_shape: Sequence[int], cause: BaseException, hint: str = ""):
        self.model_name = model_name
        self.input_shape = tuple(input_shape)
        self.cause_text = error_text(cause)
        shape = "x".join(str(d) for d in self.input_shape)
        message = f"model {model_name!r} failed on an input of shape {shape}: {self.cause_text}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)
        # Set here as well as by `raise ... from cause`, so callers cannot lose it.
        self.__cause__ = cause


# TorchScript's interpreter re-raises a forward's error with its own traceback between this line and
# the error's, which comes last ("RuntimeError: Given groups=1, weight of size ...").
_TORCHSCRIPT_HEADER = "The following operation failed in the TorchScript interpreter."


# torch's C++ errors (c10::Error) can end in where they were raised and a native backtrace of some
# fifty frames: "Exception raised from THPUtils_unpackLong at .../python_numbers.h:79 (most recent
# call first):", "frame #0: c10::Error::Error(...)", ... (an --img-size too large for an int64).
_TORCH_BACKTRACE = "Exception raised from "


def error_text(cause: BaseException) -> str:
    """``Type: message`` on one line: a message of many lines had made the error as many lines (a
    TorchScript module's, its whole TorchScript traceback); its lines are joined, and TorchScript's
    traceback and torch's native backtrace are left out (the cause, kept as ``__cause__``, still has them)."""
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    if lines and lines[0] == _TORCHSCRIPT_HEADER and len(lines) > 1:
        return lines[-1]
    native = next((i for i, line in enumerate(lines) if line.startswith(_TORCH_BACKTRACE)), None)
    if native:
        lines = lines[:native]
    return f"{type(cause).__name__}: {' / '.join(lines)}"


class OutputWriteError(VisprofError):
    """An output file could not be written; the previous file (or none) is left in place."""

    exit_code = EXIT_OUTPUT

    def __init__(self, path, reason: str, previous_kept: bool = False, left: str | None = None):
        self.path = str(path)
        self.reason = reason
        self.previous_kept = previous_kept
        # ``left``: what is there now, where a file written in parts (a store) is neither of these
        left = left or ("the previous file is unchanged" if previous_kept else "no file was created")
        super().__init__(f"could not write {self.path}: {reason}; {left}")


class StdoutWriteError(VisprofError):
    """Standard output failed for a reason other than a reader that went away (a full disk behind
    `> file`, an I/O error). The command still wrote its output files; this is said after it."""

    exit_code = EXIT_OUTPUT

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"could not write to standard output: {reason}")


class NativeUnavailableError(VisprofError):
    """The native extension ``visprof._C`` could not be loaded or lacks a backend."""

    def __init__(self, reason: str):
        super().__init__(f"the native extension visprof._C is unavailable: {reason}")
        self.reason = reason


class BrokenDependencyError(VisprofError):
    """A library visprof needs is installed but cannot be imported (e.g. timm, because its
    torchvision was built for another torch)."""

    def __init__(self, library: str, cause: BaseException):
        import importlib.metadata as metadata

        def version(name: str) -> str:
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                return "not installed"

        why = f"{type(cause).__name__}: {(str(cause).splitlines() or [''])[0]}"
        super().__init__(f"{library} cannot be imported ({why}); installed: torch {version('torch')}, torchvision "
                         f"{version('torchvision')}, {library} {version(library)}. torch and torchvision must be "
                         f"builds of one another (both from one index, e.g. both CPU builds)")
        self.library = library


class ExternalToolError(VisprofError):
    """An external tool visprof drives (Nsight Systems, Nsight Compute) is missing or failed."""

    exit_code = EXIT_TOOL

    def __init__(self, tool: str, reason: str):
        self.tool = tool
        self.reason = reason
        super().__init__(f"{tool}: {reason}")


class VisprofWarning(UserWarning):
    """What a user should know of an input or a result that does not stop the work (rows of a
    store left unread). A Python warning, so a script or notebook can filter or log it; the CLI
    shows it as one ``visprof: warning:`` line."""


def exit_code_for(error: BaseException) -> int:
    """The CLI exit code for ``error`` (1 for anything that is not a VisprofError)."""
    return error.exit_code if isinstance(error, VisprofError) else EXIT_FAILURE


__all__ = [
    "error_text",
    "VisprofError",
    "BrokenDependencyError",
    "BadInputError",
    "NotAResultError",
    "UnknownModelError",
    "NoGPUError",
    "DeviceNotFoundError",
    "OutOfMemoryError",
    "StdoutWriteError",
    "CuptiUnavailableError",
    "ModelForwardError",
    "NativeUnavailableError",
    "OutputWriteError",
    "ExternalToolError",
    "exit_code_for",
]
