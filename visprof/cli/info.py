"""``visprof info``: the versions, the native backend and the visible GPUs, each line said even
where what it reports cannot be imported (a broken torch install is a line, not a traceback).
"""
from __future__ import annotations

import argparse
import importlib

from visprof.result import visprof_version

__all__ = ["add_commands", "cmd_info", "visprof_version"]


def add_commands(commands) -> None:
    """Registers ``info`` on the CLI's sub-parsers (called from visprof.cli.app.build_parser)."""
    info = commands.add_parser("info", help="show versions, the native backend and the visible GPUs")
    info.set_defaults(handler=cmd_info)


def cmd_info(args: argparse.Namespace) -> int:
    rows = [
        ("visprof", visprof_version()),
        ("native", _native_line()),
        ("torch", _torch_line()),
        ("timm", _package_version("timm")),
        ("NVML", _guarded(_nvml_line)),
    ]
    # timm imports torchvision: shown on its own only when its import fails, so the line
    # above that fails with it is explained.
    vision = _package_version("torchvision")
    if vision.startswith("import failed"):
        rows.insert(4, ("torchvision", vision))
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(_guarded(_gpu_lines, "GPUs: unknown ({})"))
    return 0


def _native_line() -> str:
    try:
        info = importlib.import_module("visprof.native").native_info()
    except Exception as exc:  # not built, a library it links is missing, ...
        return f"unavailable ({type(exc).__name__}: {exc})"
    if not isinstance(info, dict):
        return str(info)
    if info.get("backend") == "unavailable":
        return f"unavailable ({info.get('error', 'no reason given')})"
    return ", ".join(f"{key}={value}" for key, value in info.items())


def _failure(exc: BaseException) -> str:
    """``Type: message``, on one line (the first of a message that has several)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _import(name: str):
    """The module ``name``; None when it is not installed; raises _ImportFailed with one line
    when importing it (or something it imports) raises, whatever it raises."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise _ImportFailed(f"import failed: {_failure(exc)}") from None
    except Exception as exc:  # a broken install: a missing dependency, a library that does not load, ...
        raise _ImportFailed(f"import failed: {_failure(exc)}") from None


class _ImportFailed(Exception):
    pass


def _guarded(line, template: str = "unavailable ({})") -> str:
    """``line()``, or ``template`` with the reason when it raises (torch failing to import)."""
    try:
        return line()
    except _ImportFailed as exc:
        return template.format(str(exc))
    except Exception as exc:
        return template.format(_failure(exc))


def _torch_line() -> str:
    try:
        torch = _import("torch")
    except _ImportFailed as exc:
        return str(exc)
    if torch is None:
        return "not installed"
    cuda = f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU-only build"
    return f"{torch.__version__} ({cuda})"


def _package_version(name: str) -> str:
    try:
        module = _import(name)
    except _ImportFailed as exc:
        return str(exc)
    return "not installed" if module is None else str(getattr(module, "__version__", "unknown version"))


def _nvml_line() -> str:
    from visprof.base.hardware import nvml_unavailable_reason

    reason = nvml_unavailable_reason()
    return f"unavailable ({reason})" if reason else "available"


def _gpu_lines() -> str:
    from visprof.base.hardware import device_summary, no_gpu_reason

    gpus = device_summary()
    if not gpus:
        return f"GPUs: none ({no_gpu_reason()})"
    return "\n".join([f"GPUs: {len(gpus)}"] + [f"  {_format_gpu(gpu)}" for gpu in gpus])


# A GPU's facts as its line shows them, each where the GPU's summary has it.
_GPU_FACTS = (
    ("memory_total_bytes", lambda gpu: f"{gpu['memory_total_bytes'] / 2**30:.1f} GiB"),
    ("compute_capability", lambda gpu: f"sm_{gpu['compute_capability'].replace('.', '')}"),
    ("driver_version", lambda gpu: f"driver {gpu['driver_version']} (CUDA {gpu.get('cuda_driver_version')})"),
    ("power_limit_w", lambda gpu: f"power limit {gpu['power_limit_w']:.0f} W"),
    ("max_sm_clock_mhz", lambda gpu: f"max clocks SM {gpu['max_sm_clock_mhz']} / mem {gpu.get('max_mem_clock_mhz')} MHz"),
    ("pci_bus_id", lambda gpu: f"pci {gpu['pci_bus_id']}"),
)


def _format_gpu(gpu: dict) -> str:
    parts = [f"cuda:{gpu['torch_index']}", str(gpu["name"])]
    parts += [show(gpu) for key, show in _GPU_FACTS if gpu.get(key)]
    return ", ".join(parts)
