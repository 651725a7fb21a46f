"""Experiment: per-group affine fit in batch from two H200 profiles (64, 256), extrapolated to the CSV batch on the
H200, then the GPU change by the predictor at scale 1."""
import sys, copy, math, statistics
sys.path.insert(0, "bench")
import predict_check as pc
import visprof.analysis.predict as P
from visprof.analysis.metrics import spearman, ratio_errors
from visprof.analysis.families import architecture
profs = pc.load_profiles(["/tmp/store/sweep-h200x2.db", "/tmp/store256/sweep-h200x2-b256.db"])
pub = pc.published(pc.CSV_DIR)
by = {}
for r in profs:
    by.setdefault((r.model.name, r.model.img_size), {})[r.model.batch_size] = r
pairs = {k: v for k, v in by.items() if 64 in v and 256 in v}
print(len(pairs), "models with 64 and 256")
def sig(g): return (g.category, g.subcategory, g.op, g.count, g.tensor_core)
def match(A, Bs):
    """Pair groups of the two batches: same (category, subcategory, op, count, tensor core, weight bytes),
    activations and FLOPs closest to x4."""
    left = list(range(len(Bs)))
    out_a, out_b, unmatched = [], [], 0
    for a in A:
        best, bd = None, None
        for j in left:
            b = Bs[j]
            if (a.category, a.subcategory, a.op, a.count, a.tensor_core) != (b.category, b.subcategory, b.op, b.count, b.tensor_core):
                continue
            if abs(a.param_bytes - b.param_bytes) > 1e-6 * max(a.param_bytes, 1):
                continue
            aa, ab = max(a.bytes - a.param_bytes, 1), max(b.bytes - b.param_bytes, 1)
            d = abs(math.log(ab / aa / 4)) + abs(math.log(max(b.flops, 1) / max(a.flops, 1) / (4 if a.flops > 0 else 1)))
            if bd is None or d < bd:
                best, bd = j, d
        if best is None:
            unmatched += 1
            continue
        left.remove(best)
        out_a.append(a); out_b.append(Bs[best])
    t_un = sum(A[i].time_ms for i in range(0)) 
    ua = sum(a.time_ms for a in A) - sum(a.time_ms for a in out_a)
    ub = sum(Bs[j].time_ms for j in left)
    if ua > 0.05 * sum(a.time_ms for a in A) or ub > 0.05 * sum(b.time_ms for b in Bs):
        print("unmatched", unmatched, len(left), ua, ub)
        return None, None
    return out_a, out_b
mode = sys.argv[1] if len(sys.argv) > 1 else "affine"
def synth(r64, r256, B):
    """A result at batch B on the H200: group times from the affine fit (or None where groups do not align)."""
    g64, g256 = match(r64.roofline.groups, r256.roofline.groups)
    if g64 is None:
        return None
    out = copy.deepcopy(r256)
    s = B / 256
    newg = []
    for a, b in zip(g64, g256):
        g = copy.deepcopy(b)
        act = max(b.bytes - b.param_bytes, 0)
        g.bytes = act * s + b.param_bytes
        g.flops = b.flops * s
        for attr in ("time_ms", "helper_ms"):
            t64, t256 = getattr(a, attr), getattr(b, attr)
            slope = (t256 - t64) / 192
            icpt = t64 - 64 * slope
            if slope <= 0: t = t256  # no growth: fixed
            elif icpt < 0: t = t256 * s  # superlinear: proportional from the larger
            else: t = icpt + slope * B
            setattr(g, attr, t)
        newg.append(g)
    out.roofline.groups = newg
    out.model.batch_size = B
    # timing: busy scales like the kernel sum; idle kept from 256
    k256 = sum(g.time_ms for g in g256); kB = sum(g.time_ms for g in newg)
    out.timing.busy_ms = r256.timing.busy_ms * kB / k256
    out.timing.latency_ms.median = out.timing.busy_ms + (r256.timing.idle_ms or 0)
    return out
rows = {m: [] for m in ("b64", "b256", "fit")}
for key, v in pairs.items():
    ak = (architecture(key[0]), key[1])
    if ak not in pub["rtx3090"] or ak not in pub["rtx4090"]: continue
    B = int(pub["rtx3090"][ak]["infer_batch_size"])
    B4 = int(pub["rtx4090"][ak]["infer_batch_size"])
    sy = synth(v[64], v[256], B)
    if sy is None: print("misaligned", key); continue
    pubsp = float(pub["rtx4090"][ak]["infer_samples_per_sec"]) / float(pub["rtx3090"][ak]["infer_samples_per_sec"])
    for m, r in (("b64", v[64]), ("b256", v[256]), ("fit", sy)):
        a = P.predict_result(r, "rtx3090", batch_size=B, precision="fp16")
        b = P.predict_result(r, "rtx4090", batch_size=B4, precision="fp16")
        rows[m].append((key[0], b.samples_per_s / a.samples_per_s, pubsp, a.samples_per_s / float(pub["rtx3090"][ak]["infer_samples_per_sec"]) - 1,
                        b.samples_per_s / float(pub["rtx4090"][ak]["infer_samples_per_sec"]) - 1))
for m, rr in rows.items():
    e = ratio_errors([x[1] for x in rr], [x[2] for x in rr])
    print(m, len(rr), "spearman %.3f" % spearman([x[1] for x in rr], [x[2] for x in rr]), "med|err| %.3f signed %.3f" % (e["median_abs"], e["median_signed"]),
          "3090 thr med|err| %.3f signed %.3f" % (statistics.median(abs(x[3]) for x in rr), statistics.median(x[3] for x in rr)),
          "4090 %.3f %.3f" % (statistics.median(abs(x[4]) for x in rr), statistics.median(x[4] for x in rr)))
print("model  sp_b64 sp_b256 sp_fit pub | 3090 err b64 b256 fit")
for i in range(len(rows["fit"])):
    a, b, c = rows["b64"][i], rows["b256"][i], rows["fit"][i]
    print(f"{a[0]:32s} {a[1]:.3f} {b[1]:.3f} {c[1]:.3f} {a[2]:.3f} | {a[3]:+.2f} {b[3]:+.2f} {c[3]:+.2f}")
