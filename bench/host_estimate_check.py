"""The CPU's host-memory estimate on fake tensors against the same count on real ones, over one
model of every timm module family (its default input size; larger than --max-size is skipped).

    python bench/host_estimate_check.py --out host-estimate.jsonl [--max-size 448]

Per model and regime (fp32; bf16 autocast channels-last), batch 2: the peak live bytes of one
forward on fake tensors and on real tensors (``visprof.passes.host_memory._forward_bytes``), the
seconds each took, and whether the model still runs a real forward afterwards (the fake forward
runs a copy, so nothing fake may be left on the model). Prints the summary; the JSON lines keep
every model, the first line the provenance.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

REGIMES = (("fp32", False), ("bf16", True))


def one_per_family() -> list[str]:
    import timm

    first: dict = {}
    for name in timm.list_models():
        first.setdefault(timm.models._registry._model_to_module.get(name), name)
    return list(first.values())


def check(name: str, max_size: int) -> dict:
    import torch

    from visprof.passes import host_memory
    from visprof.passes.models import resolve_model
    from visprof.passes.runner import RunConfig

    spec = resolve_model(name, device="cpu")
    if max(spec.input_size[1:]) > max_size:
        return {"model": name, "skipped": f"input {spec.input_size}"}
    row = {"model": name}
    for precision, channels_last in REGIMES:
        config = RunConfig(batch_size=2, precision=precision, channels_last=channels_last, device="cpu")
        timed = {}
        for fake in (True, False):
            started = time.perf_counter()
            try:
                timed[fake] = host_memory._forward_bytes(spec, config, fake=fake)
            except Exception as exc:  # noqa: BLE001 - recorded: the estimate would run it for real
                timed[fake] = f"{type(exc).__name__}: {str(exc)[:120]}"
            timed[f"s{fake}"] = round(time.perf_counter() - started, 3)
        row[precision] = {"fake": timed[True], "real": timed[False], "fake_s": timed["sTrue"],
                          "real_s": timed["sFalse"], "same": timed[True] == timed[False]}
    with torch.inference_mode():
        spec.module(spec.make_input(1, "cpu"))
    row["runs_after"] = True
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-size", type=int, default=448)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    rows = []
    with args.out.open("x") as out:
        print(json.dumps(provenance(" ".join(sys.argv))), file=out, flush=True)
        for name in one_per_family():
            try:
                row = check(name, args.max_size)
            except Exception as exc:  # noqa: BLE001 - a model that does not build or run
                row = {"model": name, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            rows.append(row)
            print(json.dumps(row), file=out, flush=True)
    checked = [row for row in rows if "fp32" in row]
    pairs = [row[precision] for row in checked for precision, _ in REGIMES]
    print(f"{len(rows)} families: {len(checked)} checked, {sum('skipped' in r for r in rows)} skipped (input > "
          f"{args.max_size}), {sum('error' in r for r in rows)} errors")
    print(f"fake == real: {sum(p['same'] for p in pairs)} of {len(pairs)} (model x regime); fake failed: "
          f"{sum(isinstance(p['fake'], str) for p in pairs)}; real forward after the estimate: "
          f"{sum(r.get('runs_after', False) for r in checked)} of {len(checked)}")
    print(f"seconds a forward, median (max): fake {statistics.median(p['fake_s'] for p in pairs):.2f} "
          f"({max(p['fake_s'] for p in pairs):.2f}), real {statistics.median(p['real_s'] for p in pairs):.2f} "
          f"({max(p['real_s'] for p in pairs):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
