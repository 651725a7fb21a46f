"""The worked example of docs/hardware-sensitivity.md §7: ViT-B/16, ResNet-50 and hybrids.

For each model: where its time goes on the H200 (categories, bounds), the split the predictor
gives on the RTX 3090 at timm's batch (1024, fp16), the predicted RTX 3090 -> 4090 speed-up
in three `--excess` modes, and the published one (shared/data/timm-benchmarks).

Profiles: ResNet-50 and CoAtNet-0 from the H200 recordings in tests/data (rebuilt with
tests/recorded_results.py), ViT-B/16 and the others from the JSON files or stores given.

    python bench/worked_example.py --from bench/results/h200x2-sweep-1/visprof-profile-vit_base_patch16_224.json \\
        .sweep/sweep-h200x2.db --models vit_base_patch16_224,resnet50,vit_base_r26_s32_224,coatnet_0_rw_224 \\
        --json bench/results/h200x2-sweep-1/worked-example.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "helpers"))
from _provenance import provenance  # noqa: E402
from predict_check import CSV_DIR, published, run  # noqa: E402

from visprof.analysis import sources  # noqa: E402
from visprof.analysis.predict import predict_result, speedup_band  # noqa: E402

MODES = ("clock", "bound", "compute")  # the default first; none is in bench/predict_check.py
RECORDED = ("resnet50", "coatnet_0_rw_224", "deit_small_patch16_224", "mobilevit_s")


def profiles(paths: list[str], names: list[str]) -> dict:
    from recorded_results import recorded_result

    found = {m.result.model.name: m.result for m in sources.load(paths).profiles if m.result.model.name in names}
    for name in names:
        if name not in found and name in RECORDED:
            found[name] = recorded_result(name)
    return found


def pct(shares: dict) -> dict:
    return {k: round(v * 100, 1) for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v >= 0.0005}


def one(result, pub) -> dict:
    cats = result.category_totals()
    kernel = sum(c.time_ms for c in cats.values())
    key = (result.model.name, result.model.img_size)
    row = {"model": key[0], "img_size": key[1], "h200_batch": result.model.batch_size, "precision": result.config.precision,
           "h200_latency_ms": result.timing.latency_ms.median, "h200_idle_ms": result.timing.idle_ms,
           "h200_categories_pct": pct({c: r.time_ms / kernel for c, r in cats.items()}),
           "h200_bounds_pct": pct(result.roofline.shares)}
    for mode in MODES:
        on = {gpu: predict_result(result, gpu, batch_size=1024, precision="fp16", excess=mode) for gpu in ("rtx3090", "rtx4090")}
        row[f"predicted_{mode}"] = {"rtx3090_samples_per_s": on["rtx3090"].samples_per_s,
                                    "rtx4090_samples_per_s": on["rtx4090"].samples_per_s,
                                    "rtx3090_bounds_pct": pct(on["rtx3090"].shares),
                                    "speedup": on["rtx4090"].samples_per_s / on["rtx3090"].samples_per_s,
                                    "speedup_band": speedup_band(on["rtx3090"], on["rtx4090"])}
    if key in pub["rtx3090"] and key in pub["rtx4090"]:
        a, b = (float(pub[g][key]["infer_samples_per_sec"]) for g in ("rtx3090", "rtx4090"))
        row["published"] = {"rtx3090_samples_per_s": a, "rtx4090_samples_per_s": b, "speedup": b / a,
                            "batch": int(pub["rtx3090"][key]["infer_batch_size"])}
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="paths", nargs="*", default=[], help="profile JSON files, folders, stores")
    parser.add_argument("--models", default="vit_base_patch16_224,resnet50,vit_base_r26_s32_224,coatnet_0_rw_224")
    parser.add_argument("--csv-dir", type=Path, default=CSV_DIR)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    names = args.models.split(",")
    found = profiles(args.paths, names)
    pub = published(args.csv_dir)
    rows = [one(found[n], pub) for n in names if n in found]
    for r in rows:
        p = r.get("published", {})
        print(f"{r['model']} @{r['img_size']}: H200 b{r['h200_batch']} {r['precision']} {r['h200_latency_ms']:.2f} ms "
              f"(idle {r['h200_idle_ms']:.2f})")
        print(f"  categories on the H200: {r['h200_categories_pct']}")
        print(f"  bounds on the H200:     {r['h200_bounds_pct']}")
        for mode in MODES:
            q = r[f"predicted_{mode}"]
            band = f" (x{q['speedup_band'][0]:.3f}-{q['speedup_band'][1]:.3f} over the rate scalings)" if q["speedup_band"] else ""
            print(f"  predicted ({mode:7s}): RTX 3090 {q['rtx3090_samples_per_s']:7.0f}/s bounds {q['rtx3090_bounds_pct']}; "
                  f"RTX 4090 {q['rtx4090_samples_per_s']:7.0f}/s; speed-up x{q['speedup']:.3f}{band}")
        if p:
            print(f"  published:             RTX 3090 {p['rtx3090_samples_per_s']:7.0f}/s, RTX 4090 "
                  f"{p['rtx4090_samples_per_s']:7.0f}/s; speed-up x{p['speedup']:.3f}")
    missing = [n for n in names if n not in found]
    if missing:
        print(f"no profile of: {', '.join(missing)}")
    if args.json:
        args.json.write_text(json.dumps({"provenance": provenance(), "rows": rows, "missing": missing}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(run(main))
