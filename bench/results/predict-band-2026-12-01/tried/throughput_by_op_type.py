import sys
sys.path.insert(0, "bench")
import predict_check as pc
import visprof.analysis.predict as P
profs = pc.load_profiles(["/tmp/store/sweep-h200x2.db"])
pub = pc.published(pc.CSV_DIR)
orig = P.predict_group
def run(label):
    out = pc.check(profs, pub, excess="clock")
    s = out["summary"]
    print(f"{label:50s} spearman {s['spearman']:.3f} med|err| {s['speedup_error']['median_abs']:.3f} signed {s['speedup_error']['median_signed']:+.3f} conf {s['confident']['models']} {s['confident']['spearman']:.3f}")
def rule(pred):
    def pg(g, source, target, scale=1.0, precision=None, efficiency=None, excess="clock", rate_scaling="clock"):
        if rate_scaling == "clock" and source is not None and pred(g):
            rate_scaling = "throughput"
        return orig(g, source, target, scale, precision, efficiency, excess, rate_scaling)
    return pg
rules = {
  "baseline": lambda g: False,
  "cuda-core conv (flops, no tensor core)": lambda g: g.category == "convolution" and g.flops > 0 and not g.tensor_core,
  "any flops without tensor core": lambda g: g.flops > 0 and not g.tensor_core,
  "convs (all)": lambda g: g.category == "convolution",
}
for k, f in rules.items():
    P.predict_group = rule(f)
    run(k)
