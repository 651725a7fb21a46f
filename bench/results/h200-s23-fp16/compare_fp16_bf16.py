"""fp16 against bf16 H200 profiles of the same models, in the 3090 -> 4090 check.

    python bench/results/h200-s23-fp16/compare_fp16_bf16.py FP16-BF16.db [STORE-300.db]

FP16-BF16.db holds both precisions of each model (one sweep, --precision fp16,bf16); the
300-model store (default /tmp/store/sweep-h200x2.db) gives the same models' earlier bf16
profiles, to see how far a re-measurement moves a prediction.
"""
import math
import statistics
import sys

sys.path.insert(0, "bench")
import predict_check as pc  # noqa: E402

both = pc.load_profiles([sys.argv[1]])
store = pc.load_profiles([sys.argv[2] if len(sys.argv) > 2 else "/tmp/store/sweep-h200x2.db"])
pub = pc.published(pc.CSV_DIR)
by_precision = {prec: [p for p in both if p.config.precision == prec] for prec in ("fp16", "bf16")}
names = {p.model.name for p in by_precision["fp16"]} & {p.model.name for p in by_precision["bf16"]}
sides = {"fp16, this call": by_precision["fp16"], "bf16, this call": by_precision["bf16"], "bf16, the store": store}
rows = {}
for label, profiles in sides.items():
    outcome = pc.check([p for p in profiles if p.model.name in names], pub, excess="clock")
    rows[label] = {r["model"]: r for r in outcome["rows"]}
    s = outcome["summary"]
    print(f"{label:16s} {s['models']} models  Spearman {s['spearman']:.3f}  median |error| {s['speedup_error']['median_abs']:.3f}  "
          f"3090 {s['rtx3090_throughput_error']['median_abs']:.3f}  4090 {s['rtx4090_throughput_error']['median_abs']:.3f}")

busy = {}
for p in by_precision["fp16"] + by_precision["bf16"]:
    busy.setdefault(p.model.name, {})[p.config.precision] = p.timing.busy_ms
ratio = {n: v["fp16"] / v["bf16"] for n, v in busy.items() if len(v) == 2}
ordered = sorted(ratio, key=ratio.get)
print(f"GPU busy time fp16 / bf16: median {statistics.median(ratio.values()):.3f}, lowest "
      + ", ".join(f"{n} {ratio[n]:.2f}" for n in ordered[:3]) + ", highest " + ", ".join(f"{n} {ratio[n]:.2f}" for n in ordered[-3:]))

fp16, bf16, old = rows["fp16, this call"], rows["bf16, this call"], rows["bf16, the store"]
print(f"\n{'model':34s} {'published':>9s} {'fp16':>6s} {'bf16':>6s} {'store':>6s}  busy fp16/bf16")
for name in sorted(fp16, key=lambda n: fp16[n]["speedup_error"]):
    cells = " ".join(f"{r[name]['speedup_predicted']:6.3f}" if name in r else "     -" for r in (fp16, bf16, old))
    print(f"{name:34s} {fp16[name]['speedup_published']:9.3f} {cells}  {ratio[name]:.3f}")


def moved(a, b):
    d = [abs(math.log(a[n]["speedup_predicted"] / b[n]["speedup_predicted"])) for n in a if n in b]
    return f"median {statistics.median(d) * 100:.2f}%, max {max(d) * 100:.2f}%"


print(f"\npredicted speed-up, bf16 of this call against the store: {moved(bf16, old)}")
print(f"predicted speed-up, fp16 against bf16 of this call: {moved(fp16, bf16)}")
