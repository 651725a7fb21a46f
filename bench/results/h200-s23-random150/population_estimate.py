"""What a uniform sample of the models in both timm CSVs would give, from every profiled model.

    python bench/results/h200-s23-random150/population_estimate.py bench/results/h200-s23-random150/predict-check-all557.json

The profiled models are the 300 of bench/sweep_models_300.txt (spread over families: each
odd family weighs as much as ResNet) and uniform draws from the rest of the population (the
1,109 models in both CSVs at their default size with at most 1B parameters). A uniform sample
holds the two parts in proportion to their size in the population: every drawn model, with a
random subset of the 300 of the matching size. Repeated 2000 times for the spread that choice
adds; then a bootstrap of the same construction (both parts drawn with replacement) for the
sampling uncertainty of the population's Spearman.
"""
import json
import random
import statistics
import sys

sys.path.insert(0, "bench")
import predict_check as pc  # noqa: E402
from visprof.analysis.metrics import spearman  # noqa: E402
from visprof.sweep.selection import read_model_list  # noqa: E402

rows = json.load(open(sys.argv[1]))["rows"]
stratified_list = set(read_model_list("bench/sweep_models_300.txt"))
population = pc.population(pc.default_size_rows(pc.published(pc.CSV_DIR)))
in_list = sum(1 for m, _, _ in population if m in stratified_list)
stratified = [r for r in rows if r["model"] in stratified_list]
drawn = [r for r in rows if r["model"] not in stratified_list]
share = in_list / len(population)
k = round(len(drawn) * share / (1 - share))


def rho(sample):
    return spearman([r["speedup_predicted"] for r in sample], [r["speedup_published"] for r in sample])


def summary(values):
    values = sorted(values)
    return f"median {statistics.median(values):.3f}, 5th-95th percentile {values[len(values) // 20]:.3f}-{values[-len(values) // 20]:.3f}"


rng = random.Random(0)
print(f"population {len(population)} models, {in_list} of them in the 300-model list ({share:.1%}); profiled: "
      f"{len(stratified)} from the list, {len(drawn)} drawn uniformly from the other {len(population) - in_list}")
print(f"all {len(rows)} profiled: Spearman {rho(rows):.3f}; the {len(drawn)} drawn: {rho(drawn):.3f}; the list's {len(stratified)}: {rho(stratified):.3f}")
print(f"uniform-sample construction ({len(drawn)} drawn + {k} of the list), 2000 choices of the {k}: "
      + summary(rho(drawn + rng.sample(stratified, k)) for _ in range(2000)))
print(f"the same, bootstrapped (both parts drawn with replacement), 2000 times: "
      + summary(rho(rng.choices(drawn, k=len(drawn)) + rng.choices(stratified, k=k)) for _ in range(2000)))
print(f"all {len(rows)} bootstrapped as they are, 2000 times: " + summary(rho(rng.choices(rows, k=len(rows))) for _ in range(2000)))
