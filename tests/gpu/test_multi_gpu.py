"""Per-device behaviour on a machine with two or more GPUs (the lent nvidia-h200-x2)."""
import pytest
import torch

from _subprocess import run_json

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs"),
]


def test_records_carry_their_device_and_timers_take_any_devices_stream():
    from visprof.native.timer import EventTimer
    from visprof.native.tracer import KernelTracer

    x0 = torch.randn(1 << 22, device="cuda:0")
    x1 = torch.randn(1 << 22, device="cuda:1")
    s1 = torch.cuda.Stream(device="cuda:1")
    timer1 = EventTimer(1)
    torch.cuda.synchronize(0), torch.cuda.synchronize(1)
    with KernelTracer() as tracer:
        for _ in range(3):
            x0.mul_(1.5)
        with torch.cuda.stream(s1):
            i = timer1.start(s1)
            for _ in range(5):
                x1.add_(1.0)
            timer1.stop(i, s1)
        torch.cuda.synchronize(0), torch.cuda.synchronize(1)
    k = tracer.records.kernel_rows
    devices = sorted(set(int(d) for d in k["device"]))
    assert devices == [0, 1]
    assert (k["device"] == 0).sum() == 3 and (k["device"] == 1).sum() == 5
    on1 = k[k["device"] == 1]
    assert int(timer1.elapsed_ns()[0]) >= int((on1["end_ns"] - on1["start_ns"]).sum()) * 0.95


def test_allocation_books_are_kept_per_device():
    out = run_json("""
        import json, torch
        from visprof.native import alloc
        alloc.install_torch_allocator()
        a = torch.empty(1 << 20, dtype=torch.uint8, device="cuda:0")
        b = torch.empty(3 << 20, dtype=torch.uint8, device="cuda:1")
        print(json.dumps({"dev0": alloc.stats(0).live, "dev1": alloc.stats(1).live}))
    """)
    assert out == {"dev0": 1 << 20, "dev1": 3 << 20}


def test_profile_on_the_second_gpu_passes_its_checks():
    import visprof
    from visprof.base.hardware import gpu_identity

    result = visprof.profile("resnet18", batch_size=32, device="cuda:1", progress=False)
    assert result.config.device == "cuda:1"
    assert not result.failed_checks, result.failed_checks
    assert result.gpu["uuid"] == gpu_identity(1)["uuid"] != gpu_identity(0)["uuid"]
