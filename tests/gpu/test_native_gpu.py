"""The native core on a real GPU: tracer timing vs CUDA events, external correlation,
allocation hooks for torch and CuPy, NVTX filtering in Nsight Compute."""
import shutil
import subprocess
import sys

import pytest

from _subprocess import run_json

pytestmark = pytest.mark.gpu

# 1000 launches of one known kernel, each timed by CUDA events and traced by CUPTI.
KNOWN_KERNEL_LOOP = """
import json, torch, numpy as np
from visprof.native.tracer import KernelTracer, span_check
from visprof.native.timer import EventTimer

def run_profiler_first():
    from torch.profiler import profile, ProfilerActivity
    x = torch.randn(4096, 4096, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        for _ in range(20):
            x = x @ x
        torch.cuda.synchronize()

if PROFILER_FIRST:
    run_profiler_first()

x = torch.randn(64 * 1024 * 1024, device="cuda")  # 256 MB: ~100 us per pass on an H200
for _ in range(20):
    x.mul_(1.0000001)
torch.cuda.synchronize()
stream = torch.cuda.current_stream()
timer = EventTimer(0)
span = EventTimer(0)
with KernelTracer() as tracer:
    whole = span.start(stream)
    for _ in range(1000):
        i = timer.start(stream)
        x.mul_(1.0000001)
        timer.stop(i, stream)
    span.stop(whole, stream)
    torch.cuda.synchronize()
records = tracer.records
k = records.kernel_rows
names = [records.kernel_names[i] for i in k["name_id"]]
events = timer.elapsed_ns().astype(np.float64)
durations = (k["end_ns"] - k["start_ns"]).astype(np.float64)
check = span_check(records, int(span.elapsed_ns()[0]))
print(json.dumps({
    "kernels": int(len(k)),
    "distinct_names": sorted(set(names)),
    "kernel_sum_ns": float(durations.sum()),
    "event_sum_ns": float(events.sum()),
    "median_ratio": float(np.median(durations / events)) if len(k) == len(events) else None,
    "span_ratio": check.ratio,
    "span_passed": check.passed,
    "dropped": records.dropped,
}))
"""


@pytest.mark.parametrize("profiler_first", [False, True], ids=["clean", "after-torch-profiler"])
def test_1000_launches_match_cuda_events(profiler_first):
    out = run_json(f"PROFILER_FIRST = {profiler_first}\n" + KNOWN_KERNEL_LOOP)
    print(out)
    assert out["kernels"] == 1000, out
    assert len(out["distinct_names"]) == 1
    assert out["dropped"] == 0
    assert out["kernel_sum_ns"] == pytest.approx(out["event_sum_ns"], rel=0.05)
    assert out["median_ratio"] == pytest.approx(1.0, abs=0.05)
    assert out["span_passed"], out


def test_external_correlation_links_every_resnet50_kernel():
    out = run_json("""
        import json, torch, timm
        from torch.utils._python_dispatch import TorchDispatchMode
        from visprof.native.tracer import KernelTracer, push_external_id, pop_external_id

        class PushIds(TorchDispatchMode):
            next_id = 1
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                push_external_id(self.next_id); self.next_id += 1
                try:
                    return func(*args, **(kwargs or {}))
                finally:
                    pop_external_id()

        model = timm.create_model("resnet50", pretrained=False).cuda().eval()
        x = torch.randn(64, 3, 224, 224, device="cuda")
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            model(x); torch.cuda.synchronize()
            with KernelTracer() as tracer, PushIds():
                model(x)
                torch.cuda.synchronize()
        r = tracer.records
        print(json.dumps({"kernels": int(len(r.kernel_rows)), "linked": r.linked_fraction(),
                          "external_correlations": r.external_correlations}))
    """)
    print(out)
    assert out["kernels"] > 100
    assert out["linked"] == 1.0, out


PEAK_SNIPPET = """
import json, torch, timm
HOOKS = {hooks}
if HOOKS:
    from visprof.native import alloc
    alloc.install_torch_allocator()
model = timm.create_model("resnet50", pretrained=False).cuda().eval()
x = torch.randn(64, 3, 224, 224, device="cuda")
with torch.inference_mode():
    model(x)
    torch.cuda.synchronize()
    if HOOKS:
        alloc.reset_peaks()
    else:
        torch.cuda.reset_peak_memory_stats()
    model(x)
    torch.cuda.synchronize()
peak = alloc.stats(0).peak if HOOKS else torch.cuda.max_memory_allocated()
print(json.dumps({{"peak": int(peak)}}))
"""


def test_hooked_peak_matches_max_memory_allocated():
    hooked = run_json(PEAK_SNIPPET.format(hooks=True))["peak"]
    reference = run_json(PEAK_SNIPPET.format(hooks=False))["peak"]
    print({"hooked": hooked, "max_memory_allocated": reference})
    assert hooked == pytest.approx(reference, rel=0.01)


def test_allocator_too_late_is_explained():
    out = run_json("""
        import json, torch
        from visprof.native import alloc
        torch.zeros(1, device="cuda")
        try:
            alloc.install_torch_allocator()
            print(json.dumps({"raised": None}))
        except alloc.AllocatorTooLateError as e:
            print(json.dumps({"raised": str(e)}))
    """)
    assert out["raised"] and "before the first CUDA" in out["raised"]


def test_cupy_allocator_counts_bytes_exactly():
    pytest.importorskip("cupy")
    out = run_json("""
        import json, cupy
        from visprof.native import alloc
        alloc.install_cupy_allocator()
        base = alloc.stats(0).live
        sizes = [1, 1000, 4096, 12345, 1 << 20, 3 * (1 << 20) + 7]
        arrays = [cupy.empty(n, dtype=cupy.uint8) for n in sizes]
        live = alloc.stats(0).live - base
        expected = sum(a.nbytes for a in arrays)
        del arrays
        after = alloc.stats(0).live - base
        print(json.dumps({"live": live, "expected": expected, "after": after}))
    """)
    print(out)
    assert out["live"] == out["expected"]
    assert out["after"] == 0


NCU_TARGET = """
import torch
from visprof.native import nvtx
x = torch.randn(1 << 20, device="cuda")
for _ in range(2):
    x.add_(1.0)            # outside: must not be profiled
with nvtx.range("target"):
    for _ in range(3):
        x.mul_(1.5)        # inside: exactly these three
x.add_(1.0)
torch.cuda.synchronize()
"""


@pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute (ncu) not on PATH")
def test_ncu_nvtx_filter_profiles_exactly_the_range(tmp_path):
    script = tmp_path / "target.py"
    script.write_text(NCU_TARGET)
    proc = subprocess.run(
        ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "visprof@target/",
         "--metrics", "gpu__time_duration.sum", "--csv", sys.executable, str(script)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if "gpu__time_duration.sum" in line]
    names = [r for r in rows if "mul" in r.lower()]
    print("\n".join(rows))
    assert len(rows) == 3, proc.stdout[-3000:]
    assert len(names) == 3


@pytest.mark.parametrize("mode", ["work", "callback"])
def test_cheaper_correlation_modes_still_link_every_kernel(mode):
    out = run_json(f"""
        import json, os, torch, timm
        os.environ["VISPROF_API_TRACE"] = "{mode}"
        from visprof.capture.op_capture import ModuleTracker, OpCapture
        from visprof.native.tracer import KernelTracer
        from visprof.passes.attributed import api_activity_kinds

        model = timm.create_model("resnet50", pretrained=False).cuda().eval()
        x = torch.randn(64, 3, 224, 224, device="cuda")
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            model(x); torch.cuda.synchronize()
            tracker = ModuleTracker(model)
            with KernelTracer(kinds=api_activity_kinds()) as tracer, tracker, OpCapture(tracker):
                model(x)
                torch.cuda.synchronize()
        r = tracer.records
        print(json.dumps({{"kernels": int(len(r.kernel_rows)), "linked": r.linked_fraction(),
                          "api_calls": int(len(r.api_calls))}}))
    """)
    print(out)
    assert out["kernels"] > 100
    assert out["linked"] == 1.0, out
