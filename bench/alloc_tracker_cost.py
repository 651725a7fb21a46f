"""What the allocator tracker costs while no memory pass runs (torch cannot detach it).

Fresh processes alternate with and without the tracker attached (idle: attached, booking
off), each measuring an allocate/free loop of 1 MiB tensors and a ResNet-50 forward (batch 64,
bf16 autocast per forward, CUDA events, median of 50). A third kind books every event (a
memory pass running), for scale.

    python bench/alloc_tracker_cost.py --json bench/results/h200-memory-2/alloc-tracker-cost-h200.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

KINDS = ("none", "idle", "booking")


def measure(kind: str) -> dict:
    import time

    import timm
    import torch

    from visprof.native.alloc_tracker import attach_tracker, booking

    torch.cuda.init()
    context = None
    if kind != "none":
        attached, why = attach_tracker()
        assert attached, why
        if kind == "booking":
            context = booking(torch.cuda.current_device())
            context.__enter__()
    for _ in range(1000):  # warm the allocator's cache
        del_me = torch.empty(1 << 18, device="cuda")
        del del_me
    pairs = 20000
    start = time.perf_counter_ns()
    for _ in range(pairs):
        t = torch.empty(1 << 18, device="cuda")
        del t
    alloc_ns = (time.perf_counter_ns() - start) / pairs
    model = timm.create_model("resnet50").cuda().eval()
    x = torch.randn(64, 3, 224, 224, device="cuda")
    times = []
    with torch.no_grad():
        for i in range(70):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                model(x)
            b.record()
            torch.cuda.synchronize()
            if i >= 20:
                times.append(a.elapsed_time(b))
    if context is not None:
        context.__exit__(None, None, None)
    return {"kind": kind, "alloc_free_ns": alloc_ns, "resnet50_ms": statistics.median(times)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return 0
    rows = []
    for _ in range(args.rounds):
        for kind in KINDS:
            proc = subprocess.run([sys.executable, __file__, "--one", kind], capture_output=True, text=True)
            if proc.returncode != 0:
                print(kind, "FAILED", proc.stderr[-1500:])
                continue
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    summary = {kind: {key: statistics.median(r[key] for r in rows if r["kind"] == kind)
                      for key in ("alloc_free_ns", "resnet50_ms")} for kind in KINDS if any(r["kind"] == kind for r in rows)}
    for kind, values in summary.items():
        print(f"{kind:8s} alloc+free {values['alloc_free_ns']:8.0f} ns   resnet50 {values['resnet50_ms']:.3f} ms")
    if args.json:
        args.json.write_text(json.dumps({"provenance": provenance(), "rows": rows, "median": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
