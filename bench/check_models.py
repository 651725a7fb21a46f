"""The self-checks of a few models, one line each: the models whose checks failed on correct runs.

    python bench/check_models.py pit_b_224 vit_large_patch16_siglip_256 dla102 conv-sdpa-linear

Prints each check (value, reference, pass) and writes them as JSON with --json.
Record: bench/results/h200-checks-2026-12-01/.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> int:
    import visprof
    from check_diagnosis import ConvSdpaLinear

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    out = []
    for name in args.models:
        model = ConvSdpaLinear() if name == "conv-sdpa-linear" else name
        result = visprof.profile(model, progress=False)
        checks = [{"name": c.name, "value": c.value, "reference": c.reference, "passed": c.passed, "detail": c.detail}
                  for c in result.checks]
        out.append({"model": result.model.name, "img_size": result.model.img_size, "checks": checks})
        failed = [c["name"] for c in checks if not c["passed"]]
        print(f"{result.model.name}: {len(checks) - len(failed)}/{len(checks)} checks pass"
              + (f"; FAILED: {', '.join(failed)}" if failed else ""))
        for c in checks:
            print(f"    {'PASS' if c['passed'] else 'FAIL'}  {c['name']}: {c['value']:.6g} vs {c['reference']:.6g}  [{c['detail']}]")
    if args.json:
        from visprof.base.outputs import atomic_write_text

        atomic_write_text(args.json, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
