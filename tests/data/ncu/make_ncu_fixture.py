"""Writes deit_small_attention.ncu-raw.csv: the shape of `ncu --nvtx --csv --page raw --print-units
base --print-kernel-base mangled --metrics <visprof's set>` for the kernels `visprof ncu
deit_small_patch16_224 --category attention` samples (2 ops per kind), as ncu 2025.x writes it
to --log-file: ==PROF== progress lines, a header row, a units row, one row per kernel, with the
NVTX stack columns --nvtx adds. Their cell format is copied from a real ncu CSV row on the H200
(bench/results/h200-final/gpu-tests-native.txt: `827  "visprof:target:Int64:0:RGB:0xff76b900:
ASCII:target"`); the column titles are ncu's as remembered, and visprof does not rely on them.

Shape, not measurement: kernel names, order, launch shapes and durations come from the H200
recording tests/data/deit_small_patch16_224.trace.json.gz; the counter values are invented
(plausible for a GEMM and a flash-attention kernel on an H200), with the quirks ncu's CSV has:
thousands separators and an "n/a". A real file from the H200 run of tests/gpu/test_nsight_gpu.py
($OUT/ncu/*.csv) can replace it.

    python tests/data/ncu/make_ncu_fixture.py
"""
from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from visprof import attribution  # noqa: E402
from visprof.nsight.ncu_run import choose_sample, template_ops  # noqa: E402
from visprof.native.records import CapturedTrace  # noqa: E402

METRICS = ["dram__bytes.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum",
           "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm__warps_active.avg.pct_of_peak_sustained_active"]
UNITS = ["byte", "%", "nsecond", "%", "%", "%", "%"]
# per kernel family: dram bytes per ns, DRAM %, gmma %, hmma %, SM %, occupancy %
FAMILY = {"nvjet": (1900, 39.6, 71.2, 0.0, 74.8, 12.4), "sdpa": (800, 16.7, 58.3, "n/a", 61.5, 9.8)}


def main() -> None:
    trace = CapturedTrace.load(HERE.parent / "deit_small_patch16_224.trace.json.gz")
    ops = template_ops(trace, attribution.attribute(trace))
    sample = choose_sample(ops, ["attention"], 2)
    durations = {}
    for position in sample.positions:
        durations[position] = list(ops[position].kernel_ns)
    out = io.StringIO()
    for kid, (position, name) in enumerate(sample.expected):
        out.write(f'==PROF== Profiling "{name[:30]}..." - {kid}: 0%....50%....100% - 4 passes\n')
    out.write("==PROF== Disconnected from process 31337\n")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["ID", "Process ID", "Process Name", "Host Name",
                     "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
                     "Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg", "Kernel Name", "Context",
                     "Stream", "Block Size", "Grid Size", "Device", "CC", *METRICS])
    writer.writerow([""] * 13 + UNITS)
    for kid, (position, name) in enumerate(sample.expected):
        ns = durations[position].pop(0)
        rate, dram, gmma, hmma, sm, occ = FAMILY["sdpa" if "sdpa" in name else "nvjet"]
        op = ops[position]
        op_range = f"{op.kind[3].replace('/', ':')} {op.name}"
        stack = [("deit_small_patch16_224 (VisionTransformer)", 0, "0xff76b900"),
                 (op.category, position + 1, "0xfff44a3f"), (op_range, position + 1, "0xfff44a3f")]
        nvtx = "31337  " + " ".join(f'"visprof:{text}:Int64:{payload}:ARGB:{color}:Registered:{text}"'
                                    for text, payload, color in stack) + " "
        writer.writerow([kid, 31337, "python3.12", "h200", nvtx, "", name, 1, 7, "(384, 1, 1)", "(132, 1, 1)", 0,
                         "9.0", f"{round(rate * ns):,}", dram, f"{ns:,}", gmma, hmma, sm, occ])
    (HERE / "deit_small_attention.ncu-raw.csv").write_text(out.getvalue())


if __name__ == "__main__":
    main()
