"""GPU facts and counters through NVML (package ``nvidia-ml-py``, module ``pynvml``).

Everything here degrades to ``None`` / empty without raising when pynvml, the NVML library,
a GPU or torch is missing, so reports and CI work on any machine.

Device indices in this module's API are *torch* indices (``cuda:N``). NVML numbers all
GPUs of the machine in PCI order and ignores ``CUDA_VISIBLE_DEVICES``/``CUDA_DEVICE_ORDER``,
so a torch index is mapped to an NVML handle by UUID (or PCI bus id), never by position.
"""
from __future__ import annotations

import functools
import os
import re
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from visprof.base.errors import BadInputError, DeviceNotFoundError, NoGPUError

# NVML clock-event ("throttle") reason bits, from nvml.h; decoded here rather than read from
# pynvml so the table is testable without it and stable across its renames.
THROTTLE_REASONS = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}

_init_lock = threading.Lock()
_nvml_module: Any = None
_nvml_failure: str | None = None


# --- pure helpers (tested without a GPU) -----------------------------------------------------

def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the reason bits set in ``mask``; unknown bits come out as ``unknown_0x...``."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    bit = 1
    while unknown >= bit:
        if unknown & bit:
            names.append(f"unknown_{bit:#x}")
        bit <<= 1
    return names


def normalize_uuid(uuid: Any) -> str:
    """``GPU-1a2b...`` (NVML) and ``1a2b...`` (torch) compare equal after this."""
    text = str(uuid).strip().lower()
    return text[4:] if text.startswith("gpu-") else text


def parse_pci_bus_id(bus_id: str) -> tuple[int, int, int] | None:
    """``"00000000:17:00.0"`` (or ``"0000:17:00.0"``) -> (domain, bus, device)."""
    try:
        domain, bus, rest = str(bus_id).strip().split(":")
        return int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)
    except (ValueError, AttributeError):
        return None


def match_nvml_index(torch_device: dict, nvml_devices: Sequence[dict]) -> int | None:
    """The NVML index of ``torch_device``, matched by UUID, else by PCI location.

    ``torch_device`` has ``uuid`` and/or ``pci`` ((domain, bus, device) ints);
    each ``nvml_devices`` entry has ``index``, ``uuid`` and ``pci_bus_id`` (NVML string).
    """
    uuid = torch_device.get("uuid")
    if uuid:
        wanted = normalize_uuid(uuid)
        for dev in nvml_devices:
            if dev.get("uuid") and normalize_uuid(dev["uuid"]) == wanted:
                return dev["index"]
    pci = torch_device.get("pci")
    if pci is not None:
        for dev in nvml_devices:
            if parse_pci_bus_id(dev.get("pci_bus_id", "")) == tuple(pci):
                return dev["index"]
    return None


def summarize(values: Iterable[float | None]) -> dict[str, float] | None:
    """{min, median, max} of the non-None values, or None when there are none."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {"min": min(present), "median": statistics.median(present), "max": max(present)}


# --- NVML access -----------------------------------------------------------------------------

def nvml() -> Any:
    """The initialized pynvml module, or None (``nvml_unavailable_reason()`` says why)."""
    global _nvml_module, _nvml_failure
    with _init_lock:
        if _nvml_module is None and _nvml_failure is None:
            try:
                import pynvml

                pynvml.nvmlInit()
                _nvml_module = pynvml
            except ImportError:
                _nvml_failure = "pynvml is not installed (pip install nvidia-ml-py)"
            except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
                _nvml_failure = f"NVML could not start: {exc}"
        return _nvml_module


def nvml_unavailable_reason() -> str | None:
    nvml()
    return _nvml_failure


def _call(fn, *args, default=None):
    """An NVML query that may be unsupported on this GPU/driver: its value, or ``default``."""
    try:
        value = fn(*args)
    except Exception:  # NVMLError_NotSupported, _NoPermission, _GpuIsLost, ...
        return default
    return value.decode() if isinstance(value, bytes) else value


def _nvml_devices(lib) -> list[dict]:
    devices = []
    for index in range(_call(lib.nvmlDeviceGetCount, default=0)):
        handle = _call(lib.nvmlDeviceGetHandleByIndex, index)
        if handle is None:
            continue
        devices.append(
            {
                "index": index,
                "uuid": _call(lib.nvmlDeviceGetUUID, handle),
                "pci_bus_id": _pci_bus_id(lib, handle) or "",
            }
        )
    return devices


def _pci_bus_id(lib, handle) -> str | None:
    pci = _call(lib.nvmlDeviceGetPciInfo, handle)
    if pci is None:
        return None
    return pci.busId.decode() if isinstance(pci.busId, bytes) else str(pci.busId)


def torch_cuda():
    """torch.cuda when torch is installed with CUDA and sees a GPU, else None."""
    try:
        import torch
    except ImportError:
        return None
    try:
        return torch.cuda if torch.cuda.is_available() else None
    except Exception:
        return None


def _torch_device_facts(index: int) -> dict | None:
    cuda = torch_cuda()
    if cuda is None or not 0 <= index < cuda.device_count():
        return None
    props = cuda.get_device_properties(index)
    return {
        "name": props.name,
        "uuid": str(getattr(props, "uuid", "") or ""),
        "pci": (props.pci_domain_id, props.pci_bus_id, props.pci_device_id),
        "compute_capability": f"{props.major}.{props.minor}",
        "memory_total_bytes": int(props.total_memory),
        "sm_count": props.multi_processor_count,
        # Bytes, as the driver reports it (None where this torch has no such property).
        "l2_cache_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None,
    }


def _nvml_handle(facts: dict) -> tuple[int | None, Any]:
    """(NVML index, NVML handle) of the torch device described by ``facts``, or (None, None)."""
    lib = nvml()
    if lib is None:
        return None, None
    index = match_nvml_index(facts, _nvml_devices(lib))
    if index is None:
        return None, None
    return index, _call(lib.nvmlDeviceGetHandleByIndex, index)


def nvml_index(torch_index: int) -> int | None:
    """The NVML index of torch device ``cuda:torch_index``, or None if unknown."""
    facts = _torch_device_facts(torch_index)
    return _nvml_handle(facts)[0] if facts is not None else None


# --- public queries --------------------------------------------------------------------------

def gpu_identity(index: int = 0) -> dict | None:
    """Facts about torch device ``cuda:index`` that a result must carry to be comparable.

    None when no such GPU is visible. Fields NVML cannot give (no pynvml, or unsupported
    on this GPU) are None; the torch-derived ones are filled whenever torch sees the GPU.
    """
    facts = _torch_device_facts(index)
    if facts is None:
        return None
    identity: dict[str, Any] = {
        "torch_index": index,
        "nvml_index": None,
        "name": facts["name"],
        "uuid": facts["uuid"] or None,
        "pci_bus_id": "{:08x}:{:02x}:{:02x}.0".format(*facts["pci"]).upper(),
        "compute_capability": facts["compute_capability"],
        "sm_count": facts["sm_count"],
        "memory_total_bytes": facts["memory_total_bytes"],
        "l2_cache_bytes": facts["l2_cache_bytes"],
        "driver_version": None,
        "cuda_driver_version": None,
        "power_limit_w": None,
        "max_sm_clock_mhz": None,
        "max_mem_clock_mhz": None,
    }
    nvml_idx, handle = _nvml_handle(facts)
    if handle is not None:
        identity.update(_nvml_identity(nvml(), handle))
        identity["nvml_index"] = nvml_idx
    return identity


def _nvml_identity(lib, handle) -> dict:
    memory = _call(lib.nvmlDeviceGetMemoryInfo, handle)
    power_mw = _call(lib.nvmlDeviceGetEnforcedPowerLimit, handle)
    cuda_version = _call(lib.nvmlSystemGetCudaDriverVersion)
    facts = {
        "name": _call(lib.nvmlDeviceGetName, handle),
        "uuid": _call(lib.nvmlDeviceGetUUID, handle),
        "memory_total_bytes": int(memory.total) if memory is not None else None,
        "driver_version": _call(lib.nvmlSystemGetDriverVersion),
        # NVML encodes 13.0 as 13000.
        "cuda_driver_version": f"{cuda_version // 1000}.{cuda_version % 1000 // 10}" if cuda_version else None,
        "power_limit_w": power_mw / 1000.0 if power_mw is not None else None,
        "max_sm_clock_mhz": _call(lib.nvmlDeviceGetMaxClockInfo, handle, lib.NVML_CLOCK_SM),
        "max_mem_clock_mhz": _call(lib.nvmlDeviceGetMaxClockInfo, handle, lib.NVML_CLOCK_MEM),
        "pci_bus_id": _pci_bus_id(lib, handle),
    }
    # Keep torch's value where NVML has none (e.g. a query unsupported under a VM).
    return {key: value for key, value in facts.items() if value is not None}


def device_summary() -> list[dict]:
    """``gpu_identity`` of every GPU visible to torch; [] when there is none."""
    cuda = torch_cuda()
    if cuda is None:
        return []
    return [identity for i in range(cuda.device_count()) if (identity := gpu_identity(i)) is not None]


def visible_device_names() -> list[str]:
    """``["cuda:0 (NVIDIA H200)", ...]`` for error messages."""
    return [f"cuda:{d['torch_index']} ({d['name']})" for d in device_summary()]


def no_gpu_reason() -> str:
    """Why torch sees no GPU, in words for the user ("" when it sees one)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) was built without CUDA"
    if torch_cuda() is not None:
        return ""
    driver = _driver_missing()
    if driver:  # before the variable: a scheduler's CUDA_VISIBLE_DEVICES=0 had been blamed on a machine with no driver
        return driver
    lib, visible = nvml(), os.environ.get("CUDA_VISIBLE_DEVICES")
    on_machine = _call(lib.nvmlDeviceGetCount, default=0) if lib is not None else 0
    if visible is not None and on_machine:  # NVML sees every GPU, whatever the variable says
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from this process (the machine has {on_machine})"
    return nvml_unavailable_reason() or "the CUDA driver reports no usable GPU"


def _driver_missing() -> str:
    """"no NVIDIA driver found (...)" where the driver's library cannot be loaded, else ""."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return ""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver found (libcuda.so.1 cannot be loaded)"
    return ""


_DEVICE_PATTERN = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def resolve_device(device: str | None = None) -> str:
    """Check a device string and return it canonical: ``"cpu"`` or ``"cuda:N"``.

    ``None`` or ``"auto"`` picks ``cuda:0`` when a GPU is visible, else ``"cpu"``.
    Raises ``BadInputError`` for a malformed string, ``NoGPUError`` when CUDA is asked for
    and no GPU is visible, ``DeviceNotFoundError`` for an index past the visible GPUs.
    """
    text = "auto" if device is None else str(device).strip().lower()
    if text == "auto":
        return "cuda:0" if torch_cuda() is not None else "cpu"
    if text.isdigit():
        text = f"cuda:{text}"
    match = _DEVICE_PATTERN.match(text)
    if match is None or (match.group(1) == "cpu" and match.group(2) not in (None, "0")):
        # "gpu" is refused like any other word: devices are named as PyTorch names them.
        hint = " (a GPU is 'cuda' or 'cuda:N', as PyTorch names it)" if text.startswith("gpu") else ""
        raise BadInputError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}{hint}")
    if match.group(1) == "cpu":
        return "cpu"
    cuda = torch_cuda()
    if cuda is None:
        raise NoGPUError(no_gpu_reason())
    index = int(match.group(2)) if match.group(2) is not None else cuda.current_device()
    if index >= cuda.device_count():
        visible_env = os.environ.get("CUDA_VISIBLE_DEVICES")
        note = f"CUDA_VISIBLE_DEVICES={visible_env!r}" if visible_env is not None else ""
        raise DeviceNotFoundError(f"cuda:{index}", visible_device_names(), note)
    return f"cuda:{index}"


# --- sampling while work runs ----------------------------------------------------------------

class ClockSampler:
    """Samples clocks, power, temperature and throttle reasons of ``cuda:index`` while open.

        with ClockSampler(0) as sampler:
            run_the_loop()
        sampler.summary()  # {"sm_clock_mhz": {"min":..,"median":..,"max":..}, ..., "energy_j": ..}

    Runs a daemon thread that polls NVML every ``interval_s``. Without NVML or the GPU it
    does nothing and ``summary()`` returns None. The summary says what the GPU did during
    the measurement: a low SM clock or a power cap explains a slow run.
    """

    METRICS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c")

    def __init__(self, index: int = 0, interval_s: float = 0.05):
        self.index = index
        self.interval_s = interval_s
        self.samples: list[dict] = []
        self._lib = None
        self._handle = None
        self._throttle_fn = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._energy_start_mj: int | None = None
        self._energy_end_mj: int | None = None
        self._started = self._ended = 0.0
        self._max_sm_clock: int | None = None

    def __enter__(self) -> "ClockSampler":
        self.samples = []
        self._stop.clear()
        facts = _torch_device_facts(self.index)
        self._handle = _nvml_handle(facts)[1] if facts is not None else None
        if self._handle is None:
            return self
        self._lib = nvml()
        # Renamed "clocks event reasons" in newer NVML; older pynvml has only the old name.
        self._throttle_fn = getattr(self._lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            self._lib, "nvmlDeviceGetCurrentClocksThrottleReasons"
        )
        self._energy_start_mj = _call(self._lib.nvmlDeviceGetTotalEnergyConsumption, self._handle)
        self._started = time.perf_counter()
        self._sample()  # at least one sample, however short the body
        self._thread = threading.Thread(target=self._run, name="visprof-clock-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._sample()
        self._ended = time.perf_counter()
        self._energy_end_mj = _call(self._lib.nvmlDeviceGetTotalEnergyConsumption, self._handle)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def clocks_ramped(self, fraction: float = 0.9) -> bool:
        """Whether the latest sample shows the SM clock at ``fraction`` of its maximum or more
        (an idle GPU parks it low; the warm-up waits for it). False when unknown."""
        if self._handle is None or not self.samples:
            return False
        if self._max_sm_clock is None:
            self._max_sm_clock = _call(self._lib.nvmlDeviceGetMaxClockInfo, self._handle, self._lib.NVML_CLOCK_SM)
        now = self.samples[-1]["sm_clock_mhz"]
        return bool(now and self._max_sm_clock and now >= fraction * self._max_sm_clock)

    def _sample(self) -> None:
        lib, handle = self._lib, self._handle
        power_mw = _call(lib.nvmlDeviceGetPowerUsage, handle)
        self.samples.append(
            {
                "t": time.perf_counter(),
                "sm_clock_mhz": _call(lib.nvmlDeviceGetClockInfo, handle, lib.NVML_CLOCK_SM),
                "mem_clock_mhz": _call(lib.nvmlDeviceGetClockInfo, handle, lib.NVML_CLOCK_MEM),
                "power_w": power_mw / 1000.0 if power_mw is not None else None,
                "temperature_c": _call(lib.nvmlDeviceGetTemperature, handle, lib.NVML_TEMPERATURE_GPU),
                "throttle_mask": _call(self._throttle_fn, handle),
            }
        )

    def mean_sm_clock(self, windows: Sequence[tuple[float, float]]) -> float | None:
        """Mean SM clock (MHz) of the samples taken inside the ``time.perf_counter()`` windows;
        None when no sample fell inside one."""
        clocks = [s["sm_clock_mhz"] for s in self.samples if s["sm_clock_mhz"]
                  and any(begin <= s["t"] <= end for begin, end in windows)]
        return sum(clocks) / len(clocks) if clocks else None

    def summary(self) -> dict | None:
        if not self.samples:
            return None
        result: dict[str, Any] = {metric: summarize(s[metric] for s in self.samples) for metric in self.METRICS}
        reasons = set()
        for sample in self.samples:
            if sample["throttle_mask"] is not None:
                reasons.update(decode_throttle_reasons(sample["throttle_mask"]))
        result["throttle_reasons"] = sorted(reasons)  # a list, so the result stays JSON
        result["samples"] = len(self.samples)
        result["duration_s"] = self._ended - self._started if self._ended else None
        result["energy_j"] = energy_joules(self._energy_start_mj, self._energy_end_mj)
        return result


def energy_joules(start_mj: int | None, end_mj: int | None) -> float | None:
    """Energy between two NVML total-energy readings (millijoules), None if either is missing."""
    if start_mj is None or end_mj is None or end_mj < start_mj:
        return None
    return (end_mj - start_mj) / 1000.0


@functools.lru_cache(maxsize=1)
def _proc_cpuinfo() -> str | None:
    """/proc/cpuinfo's text, read once a process (the CPU does not change under it); None without it."""
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return None


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str] | None:
    """The CPU's feature flags as /proc/cpuinfo lists them ("flags" on x86, "Features" on
    ARM), read from ``cpuinfo`` if given; None where unknown (no /proc, another format)."""
    cpuinfo = _proc_cpuinfo() if cpuinfo is None else cpuinfo
    if cpuinfo is None:
        return None
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("flags", "features"):
            return frozenset(value.split())
    return None


def cpu_identity(cpuinfo: str | None = None) -> dict[str, Any]:
    """The CPU a run had: its model name (/proc/cpuinfo's "model name"; the machine type, e.g.
    "aarch64", where it names none) and the logical CPUs this process may run on. A CPU row's
    device in a results store (``cpu_device_id``): rows from another machine's CPU are its own."""
    import platform

    cpuinfo = (_proc_cpuinfo() or "") if cpuinfo is None else cpuinfo
    name = ""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("model name", "cpu model") and value.strip():
            name = " ".join(value.split())
            break
    try:
        logical = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        logical = os.cpu_count() or 0
    return {"name": name or platform.processor() or platform.machine() or "unknown", "logical_cpus": logical}


def cpu_device_id(cpu: dict[str, Any] | None) -> str:
    """A CPU row's device id: "cpu:<model name> x<logical CPUs>", lower case; "cpu" where the
    row names no CPU (results made before visprof recorded it)."""
    if not isinstance(cpu, dict) or not cpu.get("name"):
        return "cpu"
    count = cpu.get("logical_cpus")
    return f"cpu:{' '.join(str(cpu['name']).split()).lower()}" + (f" x{count}" if isinstance(count, int) and count > 0 else "")
