"""Control for the decided models: Spearman of random subsets of the same size.

    python bench/results/predict-band-2026-12-01/random_subsets.py bench/results/predict-band-2026-12-01/predict-check-300-b64.json
"""
import json
import random
import statistics
import sys

from visprof.analysis.metrics import spearman

doc = json.load(open(sys.argv[1]))
rows = doc["rows"]
size = doc["summary"]["decided"]["models"]
random.seed(0)
values = sorted(spearman([r["speedup_predicted"] for r in s], [r["speedup_published"] for r in s])
                for s in (random.sample(rows, size) for _ in range(2000)))
print(f"{len(rows)} models; decided: {size}, Spearman {doc['summary']['decided']['spearman']:.3f}")
print(f"2000 random subsets of {size}: median {statistics.median(values):.3f}, p95 {values[1899]:.3f}, "
      f"p99 {values[1979]:.3f}, max {values[-1]:.3f}; "
      f"{sum(v >= doc['summary']['decided']['spearman'] for v in values)} of 2000 at or above the decided models")
