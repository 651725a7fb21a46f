"""The in-process memory pass on PyTorch's own CUDA caching allocator, on a real GPU."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from _subprocess import run_json

import visprof
from visprof.native import alloc
from visprof.native.alloc_tracker import attach_tracker, block_counts, booking

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def test_the_tracker_books_allocations_and_frees_without_memory_history():
    attached, why = attach_tracker()
    assert attached, why
    device = torch.cuda.current_device()
    allocated = lambda: torch.cuda.memory_stats(device)["allocated_bytes.all.current"]  # noqa: E731
    with booking(device):
        before, torch_before = alloc.stats(device), allocated()
        x = torch.empty(3_000_001, dtype=torch.float32, device="cuda")  # 12,000,004 bytes asked for
        now = alloc.stats(device)
        held, requested = now.live - before.live, now.requested_live - before.requested_live
        torch_held = allocated() - torch_before
        reserved_peak = visprof.native.native().alloc.reserved_stats(device)["peak"]
        del x
        after = alloc.stats(device).live - before.live
        counts = block_counts(device)
    print({"booked": held, "torch allocated": torch_held, "requested": requested, "after free": after,
           "reserved peak": reserved_peak, "block mirror": counts})
    assert requested == 12_000_004  # the requested size, as the ALLOC event carries it
    assert held == torch_held >= 12_000_256  # the block, as torch counts it: at least 512 * ceil(n / 512)
    assert after == 0 and counts["fallbacks"] == 0
    # Nothing was booked while no pass ran: the tracker is attached but idle.
    y = torch.empty(1 << 20, device="cuda")
    assert alloc.stats(device).live - before.live == 0
    del y


def test_the_memory_pass_runs_the_forward_the_timing_pass_ran():
    # Under a Python dispatch mode hrnet_w48_ssld upsamples in bf16 instead of fp32 and its
    # peak fell 9% (bench/results/h200-checks-2026-12-03); the pass replays from C++ instead.
    result = visprof.profile("hrnet_w48_ssld", passes="timing,attributed,memory", progress=False)
    mem = result.memory
    print({"memory pass": mem.torch_peaks["max_memory_allocated"], "books": mem.peak_bytes,
           "timing pass": result.timing.max_memory_allocated_bytes, "note": result.warnings})
    assert not result.failed_checks, result.failed_checks
    assert mem.torch_peaks["max_memory_allocated"] == pytest.approx(result.timing.max_memory_allocated_bytes, rel=0.02)
    assert not any("dispatch mode" in w for w in result.warnings), result.warnings  # it replayed
    assert mem.by_category_at_peak.get("outside ops", 0) < 0.01 * mem.peak_bytes  # the replay tagged the ops


def test_under_no_grad_the_memory_pass_books_autocasts_cached_weight_copies():
    # Under no_grad autocast keeps a bf16 copy of each weight it casts until the forward's autocast
    # exits, and ViT-B/16's peak comes at its end; under inference_mode it keeps none. An H100 check
    # that compared the two regimes read the difference (168.7 MiB) as visprof's error
    # (bench/results/h100-latency-2026-12-05): each grad mode must book its own.
    import timm

    peaks = {}
    for mode in ("inference_mode", "no_grad"):
        result = visprof.profile("vit_base_patch16_224", batch_size=32, grad_mode=mode, passes="timing,memory",
                                 progress=False)
        assert not result.failed_checks, (mode, result.failed_checks)
        mem = result.memory
        # the memory pass ran the forward the timing pass ran, in the same grad mode
        assert mem.torch_peaks["max_memory_allocated"] == pytest.approx(result.timing.max_memory_allocated_bytes,
                                                                        rel=0.02), mode
        peaks[mode] = mem.peak_bytes
    model = timm.create_model("vit_base_patch16_224")
    linear_bf16 = sum(m.weight.numel() * 2 for m in model.modules() if isinstance(m, torch.nn.Linear))
    print({"peaks": peaks, "bf16 copies of the Linear weights": linear_bf16})
    assert peaks["no_grad"] - peaks["inference_mode"] >= 0.9 * linear_bf16


@pytest.mark.parametrize("name", ["resnet50", "vit_base_patch16_224"])
def test_memory_pass_agrees_with_torchs_counters_and_splits_by_category(name):
    result = visprof.profile(name, batch_size=32, passes="timing,memory", progress=False)
    mem = result.memory
    print(name, {"books peak": mem.peak_bytes, "books requested peak": mem.requested_peak_bytes,
                 "block fallbacks": mem.block_fallbacks, **mem.torch_peaks, "reserved": mem.reserved_peak_bytes,
                 "baseline": mem.baseline_bytes, "by category": mem.by_category_at_peak,
                 "reserved by category": mem.reserved_by_category_at_peak,
                 "timing max_memory_allocated": result.timing.max_memory_allocated_bytes,
                 "memory pass wall s": result.passes["memory"].wall_s})
    assert mem.method == "caching-allocator trace"
    assert not result.failed_checks, result.failed_checks
    assert sum(mem.by_category_at_peak.values()) == mem.peak_bytes
    assert mem.block_fallbacks == 0
    assert mem.peak_bytes == mem.torch_peaks["max_memory_allocated"]  # block for block, as torch counts
    assert sum(mem.reserved_by_category_at_peak.values()) == mem.reserved_peak_bytes
    assert mem.by_category_at_peak["parameters & inputs"] == mem.baseline_bytes
    assert mem.peak_bytes > mem.baseline_bytes  # activations on top of the weights
    main = "convolution" if name == "resnet50" else "attention"
    assert mem.transient_peak_by_category.get(main, 0) > 0


def test_a_script_without_a_main_guard_runs_once_and_gets_a_full_memory_breakdown(tmp_path):
    script = tmp_path / "no_guard.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        import timm, visprof
        print("SCRIPT BODY RAN", flush=True)
        m = timm.create_model("resnet18").cuda()
        r = visprof.profile("resnet18", batch_size=16, progress=False)
        print("MEMORY", r.memory.method, sorted(r.memory.by_category_at_peak), flush=True)
        print("FAILED CHECKS", [c.name for c in r.failed_checks])
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    print(proc.stdout, proc.stderr[-2000:])
    assert proc.returncode == 0
    assert proc.stdout.count("SCRIPT BODY RAN") == 1
    assert "MEMORY caching-allocator trace" in proc.stdout and "'convolution'" in proc.stdout
    assert "FAILED CHECKS []" in proc.stdout


def test_a_compiled_models_memory_is_measured_without_running_it_eagerly():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 3))
    result = visprof.profile(model, batch_size=8, img_size=64, compile=True, passes="timing,memory", progress=False)
    print(result.memory.by_category_at_peak, result.memory.torch_peaks)
    assert "compiled graph" in result.memory.by_category_at_peak
    assert not [c for c in result.failed_checks if "memory" in c.name or "peak" in c.name]


def _fresh_segments(build: str) -> list[list[int]]:
    """The allocator's segments (size, bytes in use) in a fresh process after ``build``."""
    return run_json(f"""
        import json, sys
        sys.path.insert(0, {str(REPO)!r})
        import torch, timm
        from visprof.passes.models import resolve_model
        {build}
        torch.cuda.synchronize()
        print(json.dumps(sorted([s["total_size"], s["allocated_size"]] for s in torch.cuda.memory_snapshot())))
    """)


@pytest.mark.parametrize("name", ["resnet50", "mixer_b16_224"])
def test_a_model_built_from_its_name_lies_in_memory_as_a_plain_scripts_cuda_copy(name):
    """visprof builds a timm model on the GPU (fast) and copies it to the host and back: its
    weights then fill the allocator's segments exactly as timm.create_model(name).cuda()
    does, which the reserved peak of every forward depends on."""
    plain = _fresh_segments(f"m = timm.create_model({name!r}).cuda()")
    visprofs = _fresh_segments(f"m = resolve_model({name!r}, device='cuda').module")
    print(name, "plain", plain, "visprof", visprofs)
    assert visprofs == plain


def test_without_the_tracker_the_pass_reports_torchs_counters_over_the_same_forwards():
    """VISPROF_ALLOC_TRACKER=0: no split by category, and the peaks are torch's counters over
    the pass's forwards, which agree with the timing pass's allocated peak."""
    import os

    got = run_json(f"""
        import json, sys
        sys.path.insert(0, {str(REPO)!r})
        import visprof
        r = visprof.profile("resnet18", batch_size=16, passes="timing,memory", progress=False)
        m = r.memory
        print(json.dumps({{"method": m.method, "peak": m.peak_bytes, "reserved": m.reserved_peak_bytes,
                          "torch": m.torch_peaks, "failed": [c.name for c in r.failed_checks]}}))
    """, env={**os.environ, "VISPROF_ALLOC_TRACKER": "0"})
    print(got)
    assert got["method"] == "torch counters only"
    assert got["peak"] == got["torch"]["max_memory_allocated"] > 0
    assert got["reserved"] == got["torch"]["max_memory_reserved"] >= got["peak"]
    assert got["failed"] == []
