"""visprof's launch sizes against torch.profiler's kernel events, on the GPU (issue 25, item 1).

    python bench/launch_sizes_check.py --models resnet50 vit_base_patch16_224 --json OUT.json

Per model: ``visprof.profile`` (timing and attributed passes, bf16, batch 64, its defaults) gives
``launch_sizes``, kernel time by thread blocks per launch. Then the same model, built as a user
builds it (``timm.create_model(...).cuda().eval()``, the input size visprof ran, ``inference_mode``
and bf16 autocast), runs 5 forwards under ``torch.profiler``; its Chrome trace's kernel events carry
each launch's grid and duration, binned the same way (power-of-two bins; launches of exactly the
GPU's SM count apart). Printed per model: each side's share of kernel time in launches of fewer
blocks than the SM count and in one-per-SM launches, and the largest difference of any bin's share.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402


def bin_of(blocks: int, sms: int) -> tuple[int, int]:
    """(blocks_min, blocks_max) of a launch's bin, as visprof.attribution.op_types bins it."""
    if blocks == sms:
        return sms, sms
    b = int(math.floor(math.log2(max(blocks, 1))))
    return 2 ** b, 2 ** (b + 1) - 1


def torch_profiler_bins(name: str, shape: list[int], sms: int, iterations: int = 5) -> dict[tuple[int, int], float]:
    import timm
    import torch

    model = timm.create_model(name, pretrained=False).cuda().eval()
    x = torch.randn(*shape, device="cuda")
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
        for _ in range(5):
            model(x)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(iterations):
                model(x)
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    time = defaultdict(float)
    for e in events:
        if e.get("cat") == "kernel" and "grid" in e.get("args", {}):
            gx, gy, gz = e["args"]["grid"]
            time[bin_of(gx * gy * gz, sms)] += float(e.get("dur", 0.0))
    total = sum(time.values()) or 1.0
    del model
    torch.cuda.empty_cache()
    return {k: v / total for k, v in time.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import torch

    import visprof

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for name in args.models:
        result = visprof.profile(name, batch_size=args.batch_size, passes="timing,attributed", progress=False)
        ours = {(r.blocks_min, r.blocks_max): r.share for r in result.launch_sizes}
        theirs = torch_profiler_bins(name, list(result.model.input_shape), sms)
        under = lambda bins: sum(v for (lo, hi), v in bins.items() if hi < sms and lo != sms)  # noqa: E731
        row = {"model": name, "input_shape": list(result.model.input_shape),
               "visprof_under_sm_count": under(ours), "torch_profiler_under_sm_count": under(theirs),
               "visprof_one_per_sm": ours.get((sms, sms), 0.0), "torch_profiler_one_per_sm": theirs.get((sms, sms), 0.0),
               "largest_bin_difference": max(abs(ours.get(k, 0.0) - theirs.get(k, 0.0)) for k in {*ours, *theirs})}
        rows.append(row)
        print(f"{name:<32} under {sms} SMs: visprof {row['visprof_under_sm_count']:.1%}, torch.profiler "
              f"{row['torch_profiler_under_sm_count']:.1%}; one per SM: {row['visprof_one_per_sm']:.1%} vs "
              f"{row['torch_profiler_one_per_sm']:.1%}; largest bin difference {row['largest_bin_difference']:.1%}",
              flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({"provenance": provenance(), "sm_count": sms, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
