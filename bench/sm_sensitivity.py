"""How each op group's time depends on the number of SMs: the same model profiled on all of
the GPU's SMs and inside a CUDA green context that holds a part of them.

A group that takes twice as long on half the SMs is limited by per-SM throughput (issue, or
the memory requests each SM keeps in flight): on a GPU with more SMs it gains with them. One
that takes as long is limited by something the SMs do not multiply: DRAM bandwidth, a grid
too small to fill the GPU, a dependent chain. The predictor cannot read that from a datasheet
(visprof.analysis.group_scaling.RATE_SCALINGS); this measures it on the GPU you have.

    python bench/sm_sensitivity.py --models resnet50 vit_base_patch16_224 --sms 66 --out sm66/
    python bench/sm_sensitivity.py --model-list bench/sweep_models_300.txt --sms 66 --out sm66/ --time-budget 500

Writes, per model, MODEL.all.json and MODEL.smN.json (ProfileResults of the attributed pass,
batch --batch-size, bf16 autocast, NCHW) and a summary line per model; a model that fails is
listed and the rest go on; models already in --out are skipped (a later call resumes).

Record: bench/results/h200-s22-sm/; its profiles: bench/results/h200-profiles/sm-partitions.tar.xz.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402


def green_stream(num_sms: int):
    """A stream whose kernels run on ``num_sms`` SMs (torch.cuda.GreenContext), and the
    SM count the driver granted (it rounds to its partition granularity)."""
    import torch
    from torch.cuda.green_contexts import GreenContext

    ctx = GreenContext.create(num_sms=num_sms, device_id=torch.cuda.current_device())
    return ctx, ctx.Stream()


def matmul_ms(stream=None, n: int = 8192, reps: int = 20) -> float:
    """A compute-bound check that the green context holds fewer SMs: bf16 GEMM time."""
    import torch

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    with torch.cuda.stream(stream):  # None: the current stream
        for _ in range(3):
            a @ b
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            a @ b
        end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def profile_once(name: str, batch: int, stream=None):
    import torch

    import visprof

    with torch.cuda.stream(stream):  # None: the current stream
        result = visprof.profile(name, batch_size=batch, precision="bf16", passes=["attributed"], progress=False,
                                 search_batch=False)
    torch.cuda.synchronize()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=[])
    parser.add_argument("--model-list", type=Path)
    parser.add_argument("--sms", type=int, default=66, help="SMs of the green context")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--time-budget", type=float, default=None, help="stop starting models after S seconds")
    args = parser.parse_args()
    models = list(args.models)
    if args.model_list:
        if not args.model_list.is_file():
            parser.error(f"--model-list {args.model_list}: no such file")
        models += [line.strip() for line in args.model_list.read_text().splitlines() if line.strip() and not line.startswith("#")]
    if not models:
        parser.error("name models with --models or --model-list")
    from visprof.base.outputs import atomic_write_text

    args.out.mkdir(parents=True, exist_ok=True)
    ctx, stream = green_stream(args.sms)
    full, part = matmul_ms(), matmul_ms(stream)
    check = {"sms_asked": args.sms, "matmul_ms_all": full, "matmul_ms_green": part, "ratio": part / full}
    print(f"green context of {args.sms} SMs: 8192^3 bf16 GEMM {full:.3f} ms on all SMs, {part:.3f} ms in it (x{part / full:.2f})",
          flush=True)
    # Every file whole or absent after Ctrl-C or a full disk: the results, the provenance, the failures.
    atomic_write_text(args.out / "provenance.json", json.dumps({**provenance(), "check": check}, indent=1) + "\n")
    start = time.perf_counter()
    failed = []
    for i, name in enumerate(models):
        if args.time_budget and time.perf_counter() - start > args.time_budget:
            print(f"time budget spent: {len(models) - i} model(s) left", flush=True)
            break
        paths = (args.out / f"{name}.all.json", args.out / f"{name}.sm{args.sms}.json")
        if all(p.exists() for p in paths):
            continue
        t0 = time.perf_counter()
        try:
            results = (profile_once(name, args.batch_size), profile_once(name, args.batch_size, stream))
        except Exception as exc:  # noqa: BLE001 - one model failing does not stop the sweep
            failed.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            print(f"[{i + 1}/{len(models)}] {failed[-1]}", flush=True)
            continue
        for path, result in zip(paths, results):
            result.to_json(path)
        kernel_ms = [sum(g.time_ms for g in r.roofline.groups) for r in results]
        print(f"[{i + 1}/{len(models)}] {name}: kernels {kernel_ms[0]:.2f} ms on all SMs, {kernel_ms[1]:.2f} ms on "
              f"{args.sms} (x{kernel_ms[1] / kernel_ms[0]:.2f}), {time.perf_counter() - t0:.1f} s", flush=True)
    if failed:
        atomic_write_text(args.out / "failed.txt", "".join(f"{f}\n" for f in failed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
