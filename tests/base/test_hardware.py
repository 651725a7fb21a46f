"""visprof.base.hardware without a GPU: pure helpers, fake NVML/torch devices, and graceful absence."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from visprof.base import hardware
from visprof.base.errors import BadInputError, DeviceNotFoundError, NoGPUError

# Three GPUs in NVML's (PCI) order.
NVML_GPUS = [
    {"uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000", "bus_id": "00000000:17:00.0", "name": "NVIDIA H200"},
    {"uuid": "GPU-bbbbbbbb-0000-0000-0000-000000000000", "bus_id": "00000000:1B:00.0", "name": "NVIDIA H200"},
    {"uuid": "GPU-cccccccc-0000-0000-0000-000000000000", "bus_id": "00000000:2A:00.0", "name": "NVIDIA H100 80GB HBM3"},
]


class NotSupported(Exception):
    """Stands in for pynvml.NVMLError_NotSupported."""


class FakeNVML:
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, gpus=NVML_GPUS, sm_clocks=(1980,), energy_mj=(1000, 3500), throttle=(0,)):
        self.gpus = gpus
        self.sm_clocks = list(sm_clocks)
        self.energy_mj = list(energy_mj)
        self.throttle = list(throttle)
        self.calls = {"sm": 0, "throttle": 0, "energy": 0}

    def _next(self, key, values):
        value = values[min(self.calls[key], len(values) - 1)]
        self.calls[key] += 1
        return value

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        return self.gpus[index]

    def nvmlDeviceGetPciInfo(self, handle):
        return SimpleNamespace(busId=handle["bus_id"].encode())  # pynvml may return bytes

    def nvmlDeviceGetUUID(self, handle):
        return handle["uuid"]

    def nvmlDeviceGetName(self, handle):
        return handle["name"].encode()

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(total=150_754_820_096)

    def nvmlSystemGetDriverVersion(self):
        return "580.159.04"

    def nvmlSystemGetCudaDriverVersion(self):
        return 13000

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700_000

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        return {1: 1980, 2: 3201}[kind]

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return self._next("sm", self.sm_clocks) if kind == self.NVML_CLOCK_SM else 3201

    def nvmlDeviceGetPowerUsage(self, handle):
        return 350_500

    def nvmlDeviceGetTemperature(self, handle, sensor):
        raise NotSupported("temperature not supported")

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self._next("throttle", self.throttle)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        return self._next("energy", self.energy_mj)


class FakeCuda:
    """torch.cuda as seen with CUDA_VISIBLE_DEVICES=2,1: cuda:0 is NVML 2, cuda:1 is NVML 1."""

    def __init__(self, visible=(2, 1), uuids=True):
        self.props = []
        for nvml_index in visible:
            gpu = NVML_GPUS[nvml_index]
            self.props.append(
                SimpleNamespace(
                    name=gpu["name"],
                    uuid=gpu["uuid"][4:] if uuids else "",  # torch prints no "GPU-" prefix
                    pci_domain_id=0,
                    pci_bus_id=int(gpu["bus_id"].split(":")[1], 16),
                    pci_device_id=0,
                    major=9,
                    minor=0,
                    total_memory=150_000_000_000,
                    multi_processor_count=132,
                    L2_cache_size=50 * 2**20,
                )
            )

    def device_count(self):
        return len(self.props)

    def get_device_properties(self, index):
        return self.props[index]

    def current_device(self):
        return 0


@pytest.fixture
def fake_gpus(monkeypatch):
    fake_nvml = FakeNVML()
    monkeypatch.setattr(hardware, "nvml", lambda: fake_nvml)
    monkeypatch.setattr(hardware, "torch_cuda", lambda: FakeCuda())
    return fake_nvml


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(hardware, "nvml", lambda: None)
    monkeypatch.setattr(hardware, "torch_cuda", lambda: None)


# --- pure helpers --------------------------------------------------------------------------

def test_throttle_reasons_decode_each_bit():
    assert hardware.decode_throttle_reasons(0) == []
    assert hardware.decode_throttle_reasons(0x1) == ["gpu_idle"]
    assert hardware.decode_throttle_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert hardware.decode_throttle_reasons(0x8 | 0x80 | 0x20) == [
        "hw_slowdown",
        "sw_thermal_slowdown",
        "hw_power_brake_slowdown",
    ]


def test_unknown_throttle_bits_are_kept_not_dropped():
    assert hardware.decode_throttle_reasons(0x4 | 0x1000 | 0x800) == ["sw_power_cap", "unknown_0x800", "unknown_0x1000"]


def test_uuid_and_pci_normalization():
    assert hardware.normalize_uuid("GPU-ABCD-12") == hardware.normalize_uuid("abcd-12") == "abcd-12"
    assert hardware.parse_pci_bus_id("00000000:1B:00.0") == (0, 0x1B, 0)
    assert hardware.parse_pci_bus_id("0001:2a:03.1") == (1, 0x2A, 3)
    assert hardware.parse_pci_bus_id("garbage") is None


NVML_LIST = [{"index": i, "uuid": g["uuid"], "pci_bus_id": g["bus_id"]} for i, g in enumerate(NVML_GPUS)]


def test_index_mapping_uses_uuid_not_position():
    # CUDA_VISIBLE_DEVICES=2: torch's cuda:0 is NVML's device 2.
    assert hardware.match_nvml_index({"uuid": "cccccccc-0000-0000-0000-000000000000"}, NVML_LIST) == 2
    assert hardware.match_nvml_index({"uuid": "GPU-BBBBBBBB-0000-0000-0000-000000000000"}, NVML_LIST) == 1


def test_index_mapping_falls_back_to_pci_location():
    assert hardware.match_nvml_index({"uuid": "", "pci": (0, 0x2A, 0)}, NVML_LIST) == 2
    # A UUID that matches wins over a PCI location that points elsewhere.
    assert hardware.match_nvml_index({"uuid": NVML_GPUS[0]["uuid"], "pci": (0, 0x2A, 0)}, NVML_LIST) == 0


def test_index_mapping_without_a_match_is_none():
    assert hardware.match_nvml_index({"uuid": "dddd", "pci": (0, 0x99, 0)}, NVML_LIST) is None
    assert hardware.match_nvml_index({}, NVML_LIST) is None


def test_summarize_skips_missing_values():
    assert hardware.summarize([3, None, 1, 2]) == {"min": 1, "median": 2, "max": 3}
    assert hardware.summarize([None, None]) is None


def test_energy_needs_two_readings_in_order():
    assert hardware.energy_joules(1000, 3500) == 2.5
    assert hardware.energy_joules(None, 3500) is None
    assert hardware.energy_joules(3500, 1000) is None  # counter reset: unknown, not negative


# --- with fake devices ---------------------------------------------------------------------

def test_gpu_identity_maps_through_visible_devices(fake_gpus):
    first = hardware.gpu_identity(0)
    assert first["nvml_index"] == 2
    assert first["uuid"] == NVML_GPUS[2]["uuid"]
    assert first["name"] == "NVIDIA H100 80GB HBM3"
    assert first["pci_bus_id"] == "00000000:2A:00.0"
    assert first["driver_version"] == "580.159.04"
    assert first["cuda_driver_version"] == "13.0"
    assert first["power_limit_w"] == 700.0
    assert (first["max_sm_clock_mhz"], first["max_mem_clock_mhz"]) == (1980, 3201)
    assert first["compute_capability"] == "9.0"
    assert first["memory_total_bytes"] == 150_754_820_096
    assert first["l2_cache_bytes"] == 50 * 2**20  # torch's, which NVML does not give
    assert hardware.gpu_identity(1)["nvml_index"] == 1
    assert hardware.gpu_identity(2) is None


def test_gpu_identity_matches_by_pci_when_torch_has_no_uuid(monkeypatch, fake_gpus):
    monkeypatch.setattr(hardware, "torch_cuda", lambda: FakeCuda(visible=(1, 0), uuids=False))
    assert [hardware.gpu_identity(i)["nvml_index"] for i in (0, 1)] == [1, 0]


def test_gpu_identity_without_nvml_keeps_torch_facts(monkeypatch):
    monkeypatch.setattr(hardware, "nvml", lambda: None)
    monkeypatch.setattr(hardware, "torch_cuda", lambda: FakeCuda())
    identity = hardware.gpu_identity(0)
    assert identity["name"] == "NVIDIA H100 80GB HBM3"
    assert identity["nvml_index"] is None and identity["power_limit_w"] is None
    assert identity["memory_total_bytes"] == 150_000_000_000


def test_device_summary_lists_visible_gpus(fake_gpus):
    assert [d["nvml_index"] for d in hardware.device_summary()] == [2, 1]
    assert hardware.visible_device_names() == ["cuda:0 (NVIDIA H100 80GB HBM3)", "cuda:1 (NVIDIA H200)"]


def test_clock_sampler_summarizes_what_it_saw(monkeypatch):
    fake = FakeNVML(sm_clocks=(1000, 1980), throttle=(0x4, 0x1 | 0x40), energy_mj=(1000, 3500))
    monkeypatch.setattr(hardware, "nvml", lambda: fake)
    monkeypatch.setattr(hardware, "torch_cuda", lambda: FakeCuda())
    # A long interval leaves exactly the samples taken on entry and exit.
    with hardware.ClockSampler(0, interval_s=60) as sampler:
        pass
    summary = sampler.summary()
    assert summary["samples"] == 2
    assert summary["sm_clock_mhz"] == {"min": 1000, "median": 1490.0, "max": 1980}
    assert summary["mem_clock_mhz"] == {"min": 3201, "median": 3201, "max": 3201}
    assert summary["power_w"]["median"] == 350.5
    assert summary["temperature_c"] is None  # unsupported: absent, not an error
    assert summary["throttle_reasons"] == ["gpu_idle", "hw_thermal_slowdown", "sw_power_cap"]
    assert summary["energy_j"] == 2.5
    assert summary["duration_s"] >= 0


def test_mean_sm_clock_reads_only_the_samples_inside_the_windows(monkeypatch):
    fake = FakeNVML(sm_clocks=(1000, 1980), throttle=(0x4, 0x4), energy_mj=(1000, 3500))
    monkeypatch.setattr(hardware, "nvml", lambda: fake)
    monkeypatch.setattr(hardware, "torch_cuda", lambda: FakeCuda())
    with hardware.ClockSampler(0, interval_s=60) as sampler:
        pass
    first, last = (s["t"] for s in sampler.samples)
    assert sampler.mean_sm_clock([(first, first)]) == 1000
    assert sampler.mean_sm_clock([(first, first), (last, last)]) == 1490
    assert sampler.mean_sm_clock([(first - 2, first - 1)]) is None  # no sample there: unknown, not 0


def test_clock_sampler_polls_while_open(fake_gpus):
    with hardware.ClockSampler(1, interval_s=0.005) as sampler:
        time.sleep(0.2)
    assert sampler.summary()["samples"] >= 4
    assert sampler._thread is None  # joined


# --- without a GPU (as in CI) ------------------------------------------------------------------

def test_everything_degrades_without_a_gpu(no_gpu):
    assert hardware.gpu_identity(0) is None
    assert hardware.device_summary() == []
    assert hardware.nvml_index(0) is None
    with hardware.ClockSampler(0) as sampler:
        pass
    assert sampler.summary() is None
    assert sampler.samples == []


def test_real_environment_never_raises():
    # Whatever this machine has (CI: no GPU, maybe no NVML library), nothing raises.
    hardware.device_summary()
    hardware.gpu_identity(0)
    hardware.nvml_unavailable_reason()
    with hardware.ClockSampler(0, interval_s=0.01):
        pass


def test_resolve_device_without_a_gpu(no_gpu):
    assert hardware.resolve_device(None) == "cpu"
    assert hardware.resolve_device("auto") == "cpu"
    assert hardware.resolve_device(" CPU ") == "cpu"
    with pytest.raises(NoGPUError, match="device='cpu'"):  # from Python; the CLI's says --device cpu
        hardware.resolve_device("cuda")


def test_resolve_device_with_gpus(fake_gpus):
    assert hardware.resolve_device(None) == "cuda:0"
    assert hardware.resolve_device("cuda") == "cuda:0"
    assert hardware.resolve_device("1") == "cuda:1"
    assert hardware.resolve_device("cuda:1") == "cuda:1"


def test_missing_device_lists_the_visible_ones(fake_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,1")
    with pytest.raises(DeviceNotFoundError) as info:
        hardware.resolve_device("cuda:3")
    assert info.value.visible == ["cuda:0 (NVIDIA H100 80GB HBM3)", "cuda:1 (NVIDIA H200)"]
    assert "CUDA_VISIBLE_DEVICES='2,1'" in str(info.value)


@pytest.mark.parametrize("bad", ["gpu0", "cuda:x", "tpu", "cpu:3", ""])
def test_malformed_device_strings(bad, no_gpu):
    with pytest.raises(BadInputError, match="device must be"):
        hardware.resolve_device(bad)


class _NvmlSeeing:
    """NVML that sees ``count`` GPUs (it ignores CUDA_VISIBLE_DEVICES, as the real one does)."""

    def __init__(self, count: int):
        self.count = count

    def nvmlDeviceGetCount(self) -> int:
        return self.count


def test_no_gpu_reason_blames_the_visible_devices_list_only_where_it_hides_gpus(no_gpu, monkeypatch):
    """A scheduler's CUDA_VISIBLE_DEVICES=0 had been blamed ("hides every GPU") on a machine with no
    driver: the variable is the reason only where the machine's GPUs are there and it hides them."""
    import torch

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(hardware, "_nvml_failure", None)
    monkeypatch.setattr(hardware, "_driver_missing", lambda: "")
    monkeypatch.setattr(hardware, "nvml", lambda: _NvmlSeeing(2))
    for value in ("", "-1", "7"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
        assert hardware.no_gpu_reason() == (f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU from this process "
                                            "(the machine has 2)")
    monkeypatch.setattr(hardware, "nvml", lambda: _NvmlSeeing(0))
    assert hardware.no_gpu_reason() == "the CUDA driver reports no usable GPU"
    no_driver = "no NVIDIA driver found (libcuda.so.1 cannot be loaded)"
    monkeypatch.setattr(hardware, "_driver_missing", lambda: no_driver)
    for value in ("0", ""):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
        assert hardware.no_gpu_reason() == no_driver
    monkeypatch.setattr(torch.version, "cuda", None)
    assert "built without CUDA" in hardware.no_gpu_reason()


def test_a_machine_without_a_driver_says_so():
    """This CPU-only machine (and CI's) has no libcuda: the reason names the driver, not NVML's library."""
    import ctypes.util

    if ctypes.util.find_library("cuda"):
        pytest.skip("this machine has a CUDA driver library")
    assert hardware._driver_missing() == "no NVIDIA driver found (libcuda.so.1 cannot be loaded)"
