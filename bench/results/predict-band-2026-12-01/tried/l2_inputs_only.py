import sys
sys.path.insert(0, "bench")
import predict_check as pc
import visprof.analysis.predict as P
profs = pc.load_profiles(["/tmp/store/sweep-h200x2.db"])
pub = pc.published(pc.CSV_DIR)
orig = P.l2_hit_share
def run(label):
    out = pc.check(profs, pub, excess="clock")
    s = out["summary"]
    print(f"{label:40s} spearman {s['spearman']:.3f} med|err| {s['speedup_error']['median_abs']:.3f} signed {s['speedup_error']['median_signed']:+.3f} "
          f"3090 {s['rtx3090_throughput_error']['median_abs']:.3f}/{s['rtx3090_throughput_error']['median_signed']:+.3f} 4090 {s['rtx4090_throughput_error']['median_abs']:.3f}/{s['rtx4090_throughput_error']['median_signed']:+.3f}")
    return out
variants = {
  "current": orig,
  "V1 inputs, shared capacity": lambda a, g: 0.5 * orig(a, g),
  "V2 inputs fit alone": lambda a, g: 0.5 * orig(a / 2, g),
  "V3 step inputs fit (in+out<=L2)": lambda a, g: 0.5 if a <= (g.l2_mb or 0) * 1e6 else 0.0,
  "none": lambda a, g: 0.0,
}
for k, f in variants.items():
    P.l2_hit_share = f
    run(k)
