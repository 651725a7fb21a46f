"""SMs x clock for the rate of some op types (the rest by the clock)."""
import visprof.analysis.predict as P
from _harness import run

orig = P.predict_group
def rule(pred):
    def pg(g, source, target, scale=1.0, precision=None, efficiency=None, excess="clock", rate_scaling=None):
        if rate_scaling in (None, "clock") and source is not None and pred(g):
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
