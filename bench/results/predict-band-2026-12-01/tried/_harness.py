"""What the scripts here share: the 300-model H200 store, timm's CSVs, and one summary line
per variant of the predictor. Run them from the repository root, with the store unpacked
from bench/results/sweep-h200x2-s17/sweep-store.tgz to /tmp/store/."""
import sys

sys.path.insert(0, "bench")
import predict_check as pc  # noqa: E402

STORE = "/tmp/store/sweep-h200x2.db"
profs = pc.load_profiles([STORE])
pub = pc.published(pc.CSV_DIR)


def run(label: str) -> dict:
    """The 3090 -> 4090 check with the predictor as patched now, as one line."""
    out = pc.check(profs, pub, excess="clock")
    s = out["summary"]
    e, t3, t4, d = s["speedup_error"], s["rtx3090_throughput_error"], s["rtx4090_throughput_error"], s["decided"]
    print(f"{label:42s} spearman {s['spearman']:.3f} med|err| {e['median_abs']:.3f} signed {e['median_signed']:+.3f} "
          f"3090 {t3['median_abs']:.3f}/{t3['median_signed']:+.3f} 4090 {t4['median_abs']:.3f}/{t4['median_signed']:+.3f} "
          f"decided {d['models']} {d['spearman']:.3f}")
    return out
