"""ProfileResults rebuilt from the H200 recordings in tests/data/ (bf16, batch 64, NCHW).

Categories, attribution and roofline come from the recorded kernels. Timing and peak memory
come from the validation run that wrote the recordings
(bench/results/h200-validation-1/profile-validation-h200-first.json: its ``latency_ms``,
``idle_ms`` and ``max_memory_allocated`` per model; its ``attributed_kernel_ms`` equals the
recordings' median kernel time). The recordings predate per-op bytes, so their rooflines are
the legacy kind (ops without FLOPs are "unknown").
"""
from __future__ import annotations

import json
from pathlib import Path

from visprof.analysis import roofline
from visprof.attribution.attribute import attribute
from visprof.native.records import CapturedTrace
from visprof.result import LatencyStats, ModelInfo, ProfileResult, RunConfig, Timing

DATA = Path(__file__).resolve().parents[1] / "data"
H200 = {"name": "NVIDIA H200", "sm_count": 132, "memory_total_bytes": 150754820096, "max_sm_clock_mhz": 1980}
# model: (latency ms, idle ms, max_memory_allocated bytes, params, img size) from the validation run
VALIDATION = {
    "resnet50": (8.484016, 1.7312745, 536585728, 25_557_032, 224),
    "deit_small_patch16_224": (5.765168, 2.243982, 316579328, 22_050_664, 224),
    "coatnet_0_rw_224": (17.304608, 5.802856, 637107200, 27_436_232, 224),
    "mobilevit_s": (10.7776, 1.3653795, 744884736, 5_578_632, 256),
}
MODELS = tuple(VALIDATION)


def load_trace(name: str, with_costs: bool = True) -> CapturedTrace:
    trace = CapturedTrace.load(DATA / f"{name}.trace.json.gz")
    if with_costs:
        costs = json.loads((DATA / f"{name}.costs.json").read_text())["costs"]
        per_iteration = len(costs)
        assert len(trace.ops) == per_iteration * trace.iterations
        # ops are stored iteration after iteration, each in the template's order
        for index, op in enumerate(trace.ops):
            assert op.iteration == index // per_iteration
            cost = costs[index % per_iteration]
            if cost is not None:
                op.bytes, op.param_bytes, op.tensor_core = cost
    return trace


def recorded_result(name: str, with_costs: bool = True) -> ProfileResult:
    trace = load_trace(name, with_costs)
    attr = attribute(trace)
    latency, idle, peak, params, img = VALIDATION[name]
    timing = Timing(LatencyStats.from_samples([latency]), 64 / latency * 1e3, 1, busy_ms=latency - idle, idle_ms=idle,
                    max_memory_allocated_bytes=peak)
    result = ProfileResult(ModelInfo(name, "timm", params, [64, 3, img, img], 64, img),
                           RunConfig("bf16", device="cuda:0", passes=["timing", "attributed"]), "gpu", timing=timing,
                           gpu=dict(H200), created_at="2026-11-30T01:44:14+00:00")
    result.categories = attr.category_rows()
    result.attribution = attr.summary()
    roofline.attach(result, attr)
    return result


def write_results(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in MODELS:
        path = folder / f"{name}.json"
        recorded_result(name).to_json(path)
        paths.append(path)
    return paths
