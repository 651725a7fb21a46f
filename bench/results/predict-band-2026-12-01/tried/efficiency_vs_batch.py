import sys, math, statistics
sys.path.insert(0, "bench")
exec(open(__file__.replace("efficiency_vs_batch.py", "two_batch_fit.py")).read().split("rows = {m")[0])
# efficiency of memory-bound groups at 64 vs 256 on the H200, binned by eff at 64
bins = {}
for key, v in pairs.items():
    a, b = match(v[64].roofline.groups, v[256].roofline.groups)
    if a is None: continue
    for x, y in zip(a, b):
        if x.bound != "memory" or not x.efficiency or not y.efficiency or x.time_ms < 0.02: continue
        lo = 10 ** math.floor(math.log10(x.efficiency) * 2) / 1 if False else None
        e = x.efficiency
        bi = "<1%" if e < .01 else "1-3%" if e < .03 else "3-10%" if e < .1 else "10-30%" if e < .3 else "30-60%" if e < .6 else ">60%"
        bins.setdefault(bi, []).append((y.efficiency / x.efficiency, x.time_ms, key[0], x.op))
for bi in ["<1%", "1-3%", "3-10%", "10-30%", "30-60%", ">60%"]:
    v = bins.get(bi, [])
    if not v: continue
    r = sorted(t[0] for t in v)
    print(f"{bi:7s} n={len(v):4d} eff256/eff64 median {statistics.median(r):.2f} p10 {r[len(r)//10]:.2f} p90 {r[9*len(r)//10]:.2f}")
