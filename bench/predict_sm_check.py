"""The predictor on a GPU made on the spot: the profiled H200 with part of its SMs.

`bench/sm_sensitivity.py` profiles each model on all of the GPU's SMs and inside a CUDA green
context holding part of them. That partition is a GPU nobody sells, measured: the same
clock, memory and L2 with fewer SMs. This predicts each model's kernel time there from its
all-SM profile, on a spec row with the SMs (and the peaks they set) scaled down, under each
of the rate scalings (visprof.analysis.group_scaling.RATE_SCALINGS), and says how far each is
from the measured time and whether the measured time lies within the prediction's range.

The partition's real SM count is not reported by every torch: the check is run for the
count asked for, that count rounded up to the driver's granularity (8 SMs on compute
capability 9.0), and the count a compute-bound GEMM's slow-down implies.

    python bench/predict_sm_check.py FOLDER [--json out.json]

Record: bench/results/h200-s22-sm/ (predict-sm-check.txt, predict-sm96-check.txt).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402
from predict_check import run  # noqa: E402

GRANULARITY = 8  # SMs per green-context partition step on compute capability 9.0


def partition_spec(full, sms: float):
    """``full`` with ``sms`` SMs: the SM-bound peaks scale with them, memory and L2 do not."""
    share = sms / full.sms
    return dataclasses.replace(full, id=f"{full.id}-{round(sms)}sm", name=f"{full.name}, {round(sms)} SMs", match=(),
                               aliases=(), sms=round(sms), fp32_tflops=full.fp32_tflops * share,
                               tensor_tflops={k: v * share for k, v in full.tensor_tflops.items()})


def pairs(folder: Path, sms_asked: int):
    from visprof.result import ProfileResult

    for path in sorted(folder.glob("*.all.json")):
        other = path.with_name(path.name.replace(".all.json", f".sm{sms_asked}.json"))
        if other.exists():
            yield path.name[: -len(".all.json")], ProfileResult.load(path), ProfileResult.load(other)


def check(folder: Path) -> dict:
    from visprof.analysis.gpus import gpu_table
    from visprof.analysis.group_scaling import RATE_SCALINGS
    from visprof.analysis.predict import predict_result, source_spec
    from visprof.base.errors import BadInputError

    if not (folder / "provenance.json").is_file():
        raise BadInputError(f"{folder}: no provenance.json; give the --out folder of bench/sm_sensitivity.py")
    meta = json.loads((folder / "provenance.json").read_text())
    asked = meta["check"]["sms_asked"]
    table = gpu_table()
    loaded = list(pairs(folder, asked))
    if not loaded:
        raise BadInputError(f"{folder}: no MODEL.all.json with its MODEL.sm{asked}.json")
    full = source_spec(loaded[0][1], table)
    counts = {"asked": asked, "rounded up to the partition granularity": -(-asked // GRANULARITY) * GRANULARITY,
              "implied by the GEMM": full.sms / meta["check"]["ratio"]}
    out = {"sms_asked": asked, "gemm_ratio": meta["check"]["ratio"], "profile_gpu": full.id, "by_sm_count": []}
    for label, sms in counts.items():
        target = partition_spec(full, sms)
        rows = []
        for name, all_sms, part in loaded:
            p = predict_result(all_sms, target, source=full, table=table)
            measured = sum(g.time_ms for g in part.roofline.groups)
            low, high = p.latency_range_ms
            rows.append({"model": name, "measured_ms": measured, "all_sms_ms": sum(g.time_ms for g in all_sms.roofline.groups),
                         "predicted_ms": p.latency_ms, "rate_scaling": p.rate_scaling, "range_ms": [low, high],
                         "inside": low <= measured <= high,
                         "error": {s: p.latency_by_scaling[s] / measured - 1 for s in RATE_SCALINGS}})
        errors = {s: [r["error"][s] for r in rows] for s in RATE_SCALINGS}
        out["by_sm_count"].append({
            "label": label, "sms": sms, "models": len(rows), "inside_range": sum(r["inside"] for r in rows),
            "median_signed_error": {s: statistics.median(v) for s, v in errors.items()},
            "median_abs_error": {s: statistics.median(abs(e) for e in v) for s, v in errors.items()}, "rows": rows})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the --out folder of bench/sm_sensitivity.py")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    out = check(args.folder)
    print(f"{out['profile_gpu']} profiles, a green context asked for {out['sms_asked']} SMs "
          f"(a bf16 GEMM x{out['gemm_ratio']:.2f} slower in it)")
    for part in out["by_sm_count"]:
        print(f"\nas {part['sms']:.0f} SMs ({part['label']}): measured within the range for {part['inside_range']} of "
              f"{part['models']}; median signed error " + ", ".join(
                  f"{s} {v:+.1%}" for s, v in part["median_signed_error"].items()) + "; median |error| " + ", ".join(
                  f"{s} {v:.1%}" for s, v in part["median_abs_error"].items()))
        for r in part["rows"]:
            print(f"  {r['model']:30s} all SMs {r['all_sms_ms']:8.2f} ms, measured {r['measured_ms']:8.2f}, predicted "
                  f"{r['predicted_ms']:8.2f} ({r['rate_scaling']}; range {r['range_ms'][0]:.2f}-{r['range_ms'][1]:.2f})")
    if args.json:
        from visprof.base.outputs import atomic_write_text

        atomic_write_text(args.json, json.dumps({"provenance": provenance(), **out}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main))
