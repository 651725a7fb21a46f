"""The process `visprof ncu` runs under Nsight Compute: one forward of the model with visprof's
ranges, between cudaProfilerStart/Stop, in which only the sampled ops push their category and
op ranges (so ncu's NVTX filter selects their kernels and no others).

    python -m visprof.nsight.ncu_child SPEC.json

SPEC holds the model and run settings, the template's op names as the parent saw them, and the
sampled positions. A forward whose ops differ from the parent's is refused: the positions
would point at other ops."""
from __future__ import annotations

import json
import sys

from visprof.base.errors import BadInputError

WARMUP = 2


def main(argv: list[str]) -> int:
    from visprof.base.errors import VisprofError
    from visprof.base.spelling import command_line
    from visprof.nsight.nvtx_only import run_nvtx_only

    spec = json.loads(open(argv[0]).read())

    def sampled(template: list[tuple]) -> list[int]:
        names = [name for name, _, _ in template]
        if names != spec["op_names"]:
            raise BadInputError(f"the model ran {len(names)} ops under ncu where visprof's attributed pass saw "
                                f"{len(spec['op_names'])} (or different ones): its op sequence is not reproducible")
        return spec["positions"]

    try:
        with command_line(spec.get("command_line", False)):  # options named as the parent names them
            run_nvtx_only(spec["model"], batch_size=spec["batch_size"], img_size=spec["img_size"],
                          precision=spec["precision"], channels_last=spec["channels_last"], device=spec["device"],
                          warmup=WARMUP, iterations=1, category_file=spec.get("category_file"), progress=False,
                          ranged_ops=sampled)
    except VisprofError as error:
        print(f"visprof: error: {error}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
