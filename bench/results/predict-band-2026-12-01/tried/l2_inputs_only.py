"""Only part of an op's activations served from the target's L2 (variants of l2_hit_share)."""
import visprof.analysis.predict as P
from _harness import run

orig = P.l2_hit_share
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
