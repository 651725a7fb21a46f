"""Where bench/predict_check.py's ranking is lost: a diagnostic on its JSON, not a predictor.

1. How the error of each predicted speed-up relates to the predicted shares by bound on the
   base GPU (Spearman of error against each share).
2. Whether the datasheet ratios are to blame: the share model speed-up = 1 / sum(share_b /
   ratio_b), with the tensor and bandwidth ratios fitted to the published speed-ups (grid
   search, median absolute error), fitted on one half of the models and judged on the other
   (2-fold, fixed seed), and fitted on all. A fit to the data it is judged on is not a method;
   it says how far better ratios alone could take the ranking.
3. How far the published data itself allows a ranking: the speed-ups of the same
   architectures at their two smallest image sizes in the CSVs, ranked against each other.

    python bench/predict_diagnose.py bench/results/h200x2-sweep-1/predict-check-h200-115models.json \\
        --json bench/results/h200x2-sweep-1/predict-diagnosis.json
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402
from predict_check import CSV_DIR, published as published_rows  # noqa: E402

from visprof.analysis.metrics import ratio_errors, spearman  # noqa: E402

GRID = [(t / 100, m / 100) for t in range(120, 260, 5) for m in range(100, 240, 5)]
FP32_RATIO = 2.32  # RTX 4090 / RTX 3090 FP32 (other compute); launch time does not scale


def share_model(shares: dict, tensor: float, bandwidth: float) -> float:
    time = (shares.get("tensor", 0) / tensor + (shares.get("memory", 0) + shares.get("unknown", 0)) / bandwidth
            + shares.get("compute", 0) / FP32_RATIO + shares.get("launch", 0))
    return 1 / time


def fit(rows: list[dict], published: list[float], indices: list[int]) -> tuple[float, float]:
    return min(GRID, key=lambda g: statistics.median(abs(share_model(rows[i]["rtx3090_shares"], *g) / published[i] - 1)
                                                     for i in indices))


def judged(rows, published, indices, ratios) -> dict:
    predicted = [share_model(rows[i]["rtx3090_shares"], *ratios) for i in indices]
    truth = [published[i] for i in indices]
    return {"ratios": ratios, "models": len(indices), "spearman": spearman(predicted, truth),
            "median_abs_error": ratio_errors(predicted, truth)["median_abs"]}


def size_consistency(csv_dir: Path) -> dict:
    pub = published_rows(csv_dir)
    by_model: dict[str, dict[int, float]] = {}
    for key in set(pub["rtx3090"]) & set(pub["rtx4090"]):
        speedup = float(pub["rtx4090"][key]["infer_samples_per_sec"]) / float(pub["rtx3090"][key]["infer_samples_per_sec"])
        by_model.setdefault(key[0], {})[key[1]] = speedup
    pairs = [tuple(v for _, v in sorted(sizes.items())[:2]) for sizes in by_model.values() if len(sizes) >= 2]
    if len(pairs) < 3:
        return {"architectures": len(pairs), "spearman": None}
    first, second = zip(*pairs)
    return {"architectures": len(pairs), "spearman": spearman(first, second)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", type=Path, help="a JSON file bench/predict_check.py wrote")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--csv-dir", type=Path, default=CSV_DIR)
    args = parser.parse_args(argv)
    rows = json.loads(args.check.read_text())["rows"]
    published = [r["speedup_published"] for r in rows]
    errors = [r["speedup_error"] for r in rows]
    out: dict = {"provenance": provenance(), "source": str(args.check), "models": len(rows)}
    out["error_vs_share_spearman"] = {b: spearman([r["rtx3090_shares"].get(b, 0) for r in rows], errors)
                                      for b in ("tensor", "memory", "compute", "launch")}
    everyone = list(range(len(rows)))
    out["datasheet_ratios"] = judged(rows, published, everyone, (2.33, 1.08))
    random.seed(0)
    shuffled = everyone[:]
    random.shuffle(shuffled)
    halves = (shuffled[::2], shuffled[1::2])
    out["two_fold"] = [judged(rows, published, test, fit(rows, published, train))
                       for train, test in (halves, halves[::-1])]
    out["fitted_on_all"] = judged(rows, published, everyone, fit(rows, published, everyone))
    out["published_two_sizes"] = size_consistency(args.csv_dir)
    print(json.dumps({k: v for k, v in out.items() if k != "provenance"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
