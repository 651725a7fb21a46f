"""The spec-table rows for L4, L40, A10, T4, V100, B200 and the RTX PRO 6000 Blackwell Max-Q and
Server editions: each resolves by its aliases and by the name nvidia-smi prints, every figure has a
source, and the figures agree with each other, with the datasheets' headline numbers and with the
other rows of the table."""
from __future__ import annotations

import pytest

from visprof.analysis.gpus import DEFAULT_GPUS_PATH, NUMBERS, device_warnings, gpu_table, normalize_name, read_specs

# id -> (names a user types, device names NVML / torch / nvidia-smi report)
NEW_ROWS = {
    "l4": (["l4", "L4", "NVIDIA L4"], ["NVIDIA L4"]),
    "l40": (["l40", "L40"], ["NVIDIA L40"]),
    "a10": (["a10", "A10"], ["NVIDIA A10"]),
    "t4": (["t4", "T4", "Tesla T4"], ["Tesla T4", "NVIDIA T4"]),
    "v100-sxm2-32gb": (["v100", "V100", "v100 32gb", "V100 SXM2", "v100-sxm2-32gb"], ["Tesla V100-SXM2-32GB"]),
    "v100-sxm2-16gb": (["v100 16gb", "V100 SXM2 16GB"], ["Tesla V100-SXM2-16GB"]),
    "v100-pcie-32gb": (["v100 pcie", "V100 PCIe 32GB"], ["Tesla V100-PCIE-32GB"]),
    "v100-pcie-16gb": (["v100 pcie 16gb"], ["Tesla V100-PCIE-16GB"]),
    "b200": (["b200", "B200", "HGX B200"], ["NVIDIA B200"]),
    "rtx-pro-6000-blackwell-max-q": (["rtx pro 6000 max-q", "RTX PRO 6000 Blackwell Max-Q Workstation Edition"],
                                     ["NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"]),
    "rtx-pro-6000-blackwell-server": (["rtx pro 6000 blackwell server edition", "RTX PRO 6000 Server",
                                       "rtx-pro-6000-server"],
                                      ["NVIDIA RTX PRO 6000 Blackwell Server Edition"]),
}

# Device names that must not land on one of the new rows (a different card, or no row at all).
OTHER_DEVICES = {
    "NVIDIA A10G": None,                     # AWS's variant: another configuration
    "NVIDIA A100-SXM4-80GB": "a100-sxm4-80gb",
    "NVIDIA L40S": "l40s",
    "NVIDIA GB200": None,
    "NVIDIA T400": None,
    "NVIDIA T4000": None,
    "Tesla V100S-PCIE-32GB": None,
    "NVIDIA H200": "h200",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "rtx-pro-6000-blackwell",
    "NVIDIA GeForce RTX 5090": "rtx5090",
}

# Headline figures as the datasheets print them (tensor figures dense, FP32 accumulation).
#        id: (SMs, fp32 TFLOP/s, dense fp16 TFLOP/s, GB/s, GB, compute capability)
HEADLINE = {
    "l4": (58, 30.3, 121, 300, 24, "8.9"),
    "l40": (142, 90.5, 181.05, 864, 48, "8.9"),
    "a10": (72, 31.2, 125, 600, 24, "8.6"),
    "t4": (40, 8.1, 65, 320, 16, "7.5"),
    "v100-sxm2-32gb": (80, 15.7, 125, 900, 32, "7.0"),
    "v100-sxm2-16gb": (80, 15.7, 125, 900, 16, "7.0"),
    "v100-pcie-32gb": (80, 14, 112, 900, 32, "7.0"),
    "v100-pcie-16gb": (80, 14, 112, 900, 16, "7.0"),
    "b200": (148, 75, 2250, 8000, 180, "10.0"),
    "rtx-pro-6000-blackwell-max-q": (188, 110, 440.1, 1792, 96, "12.0"),
    "rtx-pro-6000-blackwell-server": (188, 117, 468, 1597, 96, "12.0"),
}

# FP32 FLOP per clock per SM (2 x FP32 lanes) and dense fp16 tensor FLOP per clock per SM of each
# design, at the row's boost clock; Hopper/B200-style datacenter parts quote tensor rates at a
# lower clock than their FP32 rate, so B200's tensor check has its own tolerance.
PER_SM = {
    "7.0": (128, 1024), "7.5": (128, 1024), "8.6": (256, 1024), "8.9": (256, 1024),
    "10.0": (256, 8192), "12.0": (256, 1024),
}


@pytest.fixture(scope="module")
def table():
    return gpu_table()


def test_built_in_file_loads_with_sources_required_and_has_every_new_row():
    ids = {spec.id for spec in read_specs(DEFAULT_GPUS_PATH, require_sources=True)}
    assert set(NEW_ROWS) <= ids, sorted(set(NEW_ROWS) - ids)


@pytest.mark.parametrize("gpu_id", sorted(NEW_ROWS))
def test_resolves_by_alias_and_by_device_name(table, gpu_id):
    typed, devices = NEW_ROWS[gpu_id]
    for name in typed:
        assert table.get(name).id == gpu_id, name
    for device in devices:
        assert table.for_device(device) is not None, device
        assert table.for_device(device).id == gpu_id, device
        assert table.get(device).id == gpu_id, device
        # exactly one row's regexes fit it: the answer does not depend on row order
        hits = [spec.id for spec in table if spec.matches(device)]
        assert hits == [gpu_id], (device, hits)


@pytest.mark.parametrize("device, gpu_id", sorted(OTHER_DEVICES.items()))
def test_other_devices_do_not_land_on_a_new_row(table, device, gpu_id):
    spec = table.for_device(device)
    assert (spec.id if spec else None) == gpu_id, device


def test_no_two_rows_share_a_name_once_normalized(table):
    owner: dict[str, str] = {}
    for spec in table:
        for name in spec.names():
            key = normalize_name(name)
            assert owner.setdefault(key, spec.id) == spec.id, f"{name!r} of {spec.id} is also a name of {owner[key]}"


@pytest.mark.parametrize("gpu_id", sorted(NEW_ROWS))
def test_every_figure_has_a_source(table, gpu_id):
    spec = table.get(gpu_id)
    for key in [*NUMBERS, "tensor_tflops"]:
        source = spec.source.get(key, "")
        assert len(source) > 20 and not source.startswith("user file"), (gpu_id, key, source)
    assert spec.arch and spec.compute_capability and spec.note


@pytest.mark.parametrize("gpu_id, key", [
    ("b200", "sms"), ("b200", "l2_mb"), ("b200", "boost_clock_mhz"), ("b200", "fp32_tflops"),
    ("rtx-pro-6000-blackwell-server", "fp32_tflops"), ("rtx-pro-6000-blackwell-server", "memory_bandwidth_gbs"),
    ("rtx-pro-6000-blackwell-max-q", "boost_clock_mhz"), ("l4", "sms"), ("l40", "l2_mb"), ("a10", "l2_mb"),
    ("t4", "l2_mb"), ("v100-pcie-32gb", "boost_clock_mhz"),
])
def test_figures_not_printed_by_nvidia_say_so(table, gpu_id, key):
    """Figures taken from outside the datasheets, or remembered, are flagged in their source."""
    assert "uncertain" in table.get(gpu_id).source[key].lower(), (gpu_id, key)


@pytest.mark.parametrize("gpu_id", sorted(HEADLINE))
def test_headline_figures(table, gpu_id):
    sms, fp32, fp16, gbs, gb, cc = HEADLINE[gpu_id]
    spec = table.get(gpu_id)
    assert spec.sms == sms
    assert spec.fp32_tflops == pytest.approx(fp32)
    assert spec.tensor_peak("fp16") == pytest.approx(fp16)
    assert spec.memory_bandwidth_gbs == pytest.approx(gbs)
    assert spec.memory_gb == pytest.approx(gb)
    assert spec.compute_capability == cc


@pytest.mark.parametrize("gpu_id", sorted(HEADLINE))
def test_tensor_precisions_follow_the_architecture(table, gpu_id):
    spec = table.get(gpu_id)
    cc = float(spec.compute_capability)
    rates = spec.tensor_tflops
    assert set(rates) <= {"fp16", "bf16", "tf32", "fp8"}, rates  # no fp16_acc16 guessed for these
    # BF16 and TF32 tensor cores from Ampere (8.0) on, FP8 from Ada (8.9) on; before that the
    # math runs on the FP32 units, so there must be no key the roofline would take as a tensor peak
    assert ("bf16" in rates) == (cc >= 8.0) and ("tf32" in rates) == (cc >= 8.0)
    assert ("fp8" in rates) == (cc >= 8.9)
    if "bf16" in rates:
        assert rates["bf16"] == rates["fp16"]
        assert rates["tf32"] == pytest.approx(rates["fp16"] / 2, rel=0.01)
    if "fp8" in rates:
        assert rates["fp8"] == pytest.approx(rates["fp16"] * 2, rel=0.01)
    assert spec.tensor_peak("fp32") is None
    assert spec.tensor_peak("fp16") > spec.fp32_tflops


@pytest.mark.parametrize("gpu_id", sorted(HEADLINE))
def test_rates_match_sms_times_clock(table, gpu_id):
    """SM count, clock and rates are one configuration: FP32 and tensor TFLOP/s over
    (SMs x boost clock) give the design's per-SM rate (the L40 runs tensors at half)."""
    spec = table.get(gpu_id)
    fp32_per_sm, tensor_per_sm = PER_SM[spec.compute_capability]
    if gpu_id == "l40":
        tensor_per_sm //= 2
    per_clock = spec.sms * spec.boost_clock_mhz * 1e6
    assert spec.fp32_tflops * 1e12 / per_clock == pytest.approx(fp32_per_sm, rel=0.02)
    tolerance = 0.1 if gpu_id == "b200" else 0.02  # B200's tensor figure is quoted near 1856 MHz
    assert spec.tensor_peak("fp16") * 1e12 / per_clock == pytest.approx(tensor_per_sm, rel=tolerance)


@pytest.mark.parametrize("gpu_id, ridge", [
    ("b200", 281.25), ("l4", 403.3), ("l40", 209.5), ("a10", 208.3), ("t4", 203.1),
    ("v100-sxm2-32gb", 138.9), ("rtx-pro-6000-blackwell-server", 293.0), ("rtx-pro-6000-blackwell-max-q", 245.6),
])
def test_ridge_point_is_tensor_rate_over_bandwidth(table, gpu_id, ridge):
    spec = table.get(gpu_id)
    assert spec.tensor_peak("fp16") * 1e12 / spec.bandwidth_bytes_per_s == pytest.approx(ridge, rel=0.002)


def test_ridge_point_through_the_roofline():
    """At the ridge an op's compute-bound and memory-bound times are equal; on a T4 bf16 math
    has no tensor peak and is timed at the FP32 rate."""
    roofline = pytest.importorskip("visprof.analysis.roofline")
    table = gpu_table()
    b200 = table.get("b200")
    nbytes = 1e9
    compute_ms, memory_ms, kind = roofline.roofline_ms(b200, 281.25 * nbytes, nbytes, "bf16")
    assert kind == "tensor" and compute_ms == pytest.approx(memory_ms)
    t4 = table.get("t4")
    assert roofline.compute_peak(t4, "fp16") == (65, "tensor")
    assert roofline.compute_peak(t4, "bf16") == (8.1, "compute")
    assert roofline.compute_peak(table.get("v100"), "tf32") == (15.7, "compute")


def test_relations_between_rows(table):
    g = table.get
    # B200 against H200: more bandwidth, memory and tensor throughput, a design of its own
    assert g("b200").memory_bandwidth_gbs > g("h200").memory_bandwidth_gbs
    assert g("b200").memory_gb > g("h200").memory_gb
    assert g("b200").tensor_peak("bf16") / g("h200").tensor_peak("bf16") == pytest.approx(2.27, abs=0.01)
    assert g("b200").compute_capability != g("h200").compute_capability
    # T4 -> L4: 1.86x the fp16 tensor rate, 3.7x FP32, yet less bandwidth (300 vs 320 GB/s)
    assert g("t4").tensor_peak("fp16") < g("l4").tensor_peak("fp16")
    assert g("l4").tensor_peak("fp16") / g("t4").tensor_peak("fp16") == pytest.approx(1.86, abs=0.01)
    assert g("l4").memory_bandwidth_gbs < g("t4").memory_bandwidth_gbs
    assert g("l4").tensor_peak("bf16") and not g("t4").tensor_peak("bf16")
    # the L40 runs tensors at half the L40S's rate, at about its FP32 rate, bandwidth and memory
    assert g("l40").tensor_peak("bf16") == pytest.approx(g("l40s").tensor_peak("bf16") / 2, rel=0.01)
    assert g("l40").fp32_tflops < g("l40s").fp32_tflops
    assert (g("l40").sms, g("l40").memory_gb, g("l40").memory_bandwidth_gbs) == (142, 48, 864)
    # the A10 runs bf16 with FP32 accumulation at the full rate, the RTX 3090 (same die) at half
    assert g("a10").tensor_peak("bf16") > g("rtx3090").tensor_peak("bf16")
    assert g("a10").sms < g("rtx3090").sms
    # V100: SXM2 > PCIe in clock and rates, same SMs and bandwidth; both above the T4
    sxm, pcie = g("v100"), g("v100 pcie")
    assert sxm.boost_clock_mhz > pcie.boost_clock_mhz and sxm.tensor_peak("fp16") > pcie.tensor_peak("fp16")
    assert (sxm.sms, sxm.memory_bandwidth_gbs) == (pcie.sms, pcie.memory_bandwidth_gbs)
    assert g("t4").tensor_peak("fp16") < pcie.tensor_peak("fp16")
    assert g("t4").memory_bandwidth_gbs < g("a10").memory_bandwidth_gbs < sxm.memory_bandwidth_gbs
    # RTX PRO 6000 Blackwell: one configuration at three power limits: Max-Q < Server < Workstation
    ws, server, maxq = g("rtx-pro-6000"), g("rtx pro 6000 server"), g("rtx pro 6000 max-q")
    assert ws.id == "rtx-pro-6000-blackwell"
    assert maxq.fp32_tflops < server.fp32_tflops < ws.fp32_tflops
    assert maxq.tensor_peak("bf16") < server.tensor_peak("bf16") < ws.tensor_peak("bf16")
    assert maxq.boost_clock_mhz < server.boost_clock_mhz < ws.boost_clock_mhz
    assert {s.sms for s in (ws, server, maxq)} == {188} and {s.memory_gb for s in (ws, server, maxq)} == {96}
    assert maxq.memory_bandwidth_gbs == ws.memory_bandwidth_gbs
    assert {s.compute_capability for s in (ws, server, maxq, g("rtx5090"))} == {"12.0"}


def test_same_sm_design_decides_the_rate_scaling(table):
    predict = pytest.importorskip("visprof.analysis.group_scaling")
    g = table.get
    same = [("rtx pro 6000 server", "rtx pro 6000 max-q"), ("l4", "l40"), ("l40", "rtx4090"), ("a10", "rtx3090"),
            ("v100", "v100 pcie")]
    different = [("h200", "b200"), ("b200", "rtx pro 6000 server"), ("t4", "v100"), ("a10", "a100"), ("t4", "l4")]
    for a, b in same:
        assert predict.default_rate_scaling(g(a), g(b)) == "throughput", (a, b)
    for a, b in different:
        assert predict.default_rate_scaling(g(a), g(b)) == "clock", (a, b)


@pytest.mark.parametrize("gpu_id", sorted(HEADLINE))
def test_device_check_on_consistent_and_on_wrong_facts(table, gpu_id):
    """NVML reports memory in GiB less what ECC reserves (1/16 on GDDR6 cards): that passes; a
    different SM count, a clock capped 10% below the row's boost or an L2 a fifth larger than the
    row's is flagged."""
    spec = table.get(gpu_id)
    device = NEW_ROWS[gpu_id][1][0]
    facts = {"name": device, "sm_count": spec.sms, "memory_total_bytes": spec.memory_gb * 2**30 * 15 / 16,
             "max_sm_clock_mhz": spec.boost_clock_mhz, "l2_cache_bytes": spec.l2_mb * 2**20}
    assert device_warnings(table.for_device(device), facts) == []
    assert len(device_warnings(spec, {**facts, "sm_count": spec.sms - 2})) == 1
    assert len(device_warnings(spec, {**facts, "max_sm_clock_mhz": 0.9 * spec.boost_clock_mhz})) == 1
    wrong_l2 = device_warnings(spec, {**facts, "l2_cache_bytes": 1.2 * spec.l2_mb * 2**20})
    assert len(wrong_l2) == 1 and "L2" in wrong_l2[0], wrong_l2


@pytest.mark.parametrize("device, l2_bytes", [
    ("NVIDIA H200", 62_914_560),           # torch on the lent H200 (bench/results/h200-sizes-2026-12-05/l2-check.txt)
    ("NVIDIA H100 80GB HBM3", 52_428_800),  # torch on a lent H100 (the device library's machine notes)
])
def test_hopper_rows_hold_the_l2_the_lent_gpus_report(table, device, l2_bytes):
    """The H200 enables 60 MiB of GH100's L2 where the H100 has 50: the rows follow the devices."""
    spec = table.for_device(device)
    facts = {"name": device, "sm_count": spec.sms, "memory_total_bytes": spec.memory_gb * 2**30 * 0.98,
             "max_sm_clock_mhz": spec.boost_clock_mhz, "l2_cache_bytes": l2_bytes}
    assert device_warnings(spec, facts) == []
