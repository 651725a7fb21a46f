"""visprof ncu on the CPU: parsing Nsight Compute's CSV (a file in the shape ncu writes), the
metric choice and its fallbacks, the sample of ops, matching measured kernels to ops and the
counters folded into the result. The ncu run itself is tests/gpu/test_nsight_gpu.py."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace
from pathlib import Path

import pytest

from visprof.base.child_env import child_env, module_command
from visprof import attribution
from visprof.cli import app as cli
from visprof import result as R
from visprof.base.errors import BadInputError
from visprof.nsight import ncu_metrics as M
from visprof.nsight.ncu_csv import NcuKernel, parse_ncu_csv, to_number
from visprof.nsight.ncu_report import format_counters
from visprof.nsight.ncu_run import (choose_sample, filters_for, fold, match_in_order, match_kernels, ncu_command,
                                    renamed_kernels, template_ops)
from visprof.native.records import CapturedTrace

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURE = DATA / "ncu" / "deit_small_attention.ncu-raw.csv"


@pytest.fixture(scope="module")
def resnet18_ops() -> list[str]:
    """The op names of resnet18's forward (32 px, batch 1, CPU), as the ncu child sees them."""
    from visprof.nsight.nvtx_only import run_nvtx_only

    run = run_nvtx_only("resnet18", img_size=32, batch_size=1, device="cpu", iterations=1, warmup=0, progress=False)
    return [name for name, _, _ in run.template]


@pytest.fixture(scope="module")
def deit():
    trace = CapturedTrace.load(DATA / "deit_small_patch16_224.trace.json.gz")
    attr = attribution.attribute(trace)
    return trace, attr, template_ops(trace, attr)


# --- CSV --------------------------------------------------------------------------------------

def test_the_raw_page_parses_into_kernels_with_base_units():
    kernels = parse_ncu_csv(FIXTURE.read_text())
    assert [k.id for k in kernels] == list(range(6))
    assert kernels[0].name == "nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"
    assert kernels[1].name.startswith("cudnn_generated_fort_native_sdpa_sm90_flash_fprop")
    first = kernels[0].metrics
    assert first["gpu__time_duration.sum"] == 22848.0  # "22,848" nsecond
    assert first["dram__bytes.sum"] == 43411200.0  # "43,411,200" byte
    assert first["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 74.8
    assert kernels[1].metrics["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] is None  # n/a
    assert (kernels[0].stream, kernels[0].block, kernels[0].grid) == ("7", "(384, 1, 1)", "(132, 1, 1)")
    # the NVTX stack ncu adds with --nvtx: visprof's ranges, outermost first, and the op id
    assert [name for name, _ in kernels[0].nvtx] == ["deit_small_patch16_224 (VisionTransformer)", "attention",
                                                     "attention:projections aten.linear.default"]
    assert kernels[0].op_id == 15 and kernels[1].op_id == 19
    assert all(not name.startswith("thread") for name in first)  # NVTX columns are not metrics


def test_a_real_ncu_row_from_the_h200_parses_with_its_nvtx_stack():
    """The data row ncu 2025 printed on the H200 for `--nvtx --csv` (details page), under the
    header that page has (bench/results/h200-final/gpu-tests-native.txt kept the row only)."""
    header = ('"ID","Process ID","Process Name","Host Name",'
              '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
              '"Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Context","Stream",'
              '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')
    row = ('"0","827","python3.12","127.0.0.1","827  ""visprof:target:Int64:0:RGB:0xff76b900:ASCII:target"" ","",'
           '"void vectorized_elementwise_kernel<4, AUnaryFunctor<float, float, float, MulFunctor<float>>, '
           'array<char *, 2>>(int, T2, T3)","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0",'
           '"Command line profiler metrics","gpu__time_duration.sum","ns","4,320"\n')
    (kernel,) = parse_ncu_csv(header + row)
    assert kernel.metrics == {"gpu__time_duration.sum": 4320.0}
    assert kernel.nvtx == [("target", 0)] and kernel.name.startswith("void vectorized_elementwise_kernel<4")


def test_units_are_converted_to_ns_and_bytes_whatever_ncu_printed():
    text = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","dram__bytes.sum","gpu__time_duration.sum"\n'
            '"","","","","","","","","","","","Mbyte","usecond"\n'
            '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1.50","2.25"\n')
    (kernel,) = parse_ncu_csv(text)
    assert kernel.metrics == {"dram__bytes.sum": 1.5e6, "gpu__time_duration.sum": 2250.0}
    assert to_number("1,024", "Kbyte") == 1024e3 and to_number("n/a") is None and to_number("") is None


def test_binary_byte_units_are_powers_of_1024():
    """A CSV in binary units (KiB, MiB, GiB): reading a KiB as 1000 bytes would understate the DRAM
    bytes and GB/s by 2.3% (MiB 4.6%, GiB 6.9%)."""
    text = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","lts__t_bytes.sum"\n'
            '"","","","","","","","","","","","KiB","MiB","GiB"\n'
            '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1.5","2","0.25"\n')
    (kernel,) = parse_ncu_csv(text)
    assert kernel.metrics == {"dram__bytes_read.sum": 1.5 * 1024, "dram__bytes_write.sum": 2 * 1024 * 1024,
                              "lts__t_bytes.sum": 0.25 * 1024 * 1024 * 1024}
    assert to_number("1,536", "KiB") == 1536 * 1024


def test_the_details_page_long_layout_parses_too():
    text = ('==PROF== Connected to process 1\n'
            '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","1","p","h","gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics",'
            '"gpu__time_duration.sum","msecond","1.5"\n'
            '"0","1","p","h","gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics",'
            '"dram__bytes.sum","Gbyte","2"\n'
            '"1","1","p","h","relu","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics",'
            '"gpu__time_duration.sum","nsecond","800"\n')
    kernels = parse_ncu_csv(text)
    assert [(k.name, k.metrics) for k in kernels] == [
        ("gemm", {"gpu__time_duration.sum": 1.5e6, "dram__bytes.sum": 2e9}),
        ("relu", {"gpu__time_duration.sum": 800.0})]


def test_no_kernels_and_not_csv_are_told_apart():
    assert parse_ncu_csv("==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n") == []
    with pytest.raises(BadInputError, match="not Nsight Compute CSV"):
        parse_ncu_csv("some program output\n")


# --- metrics ----------------------------------------------------------------------------------

def test_each_role_takes_the_first_metric_this_ncu_has():
    everything = {M.base_name(m) for c in M.CANDIDATES.values() for cand in c for m in M.metrics_of(cand)}
    chosen = M.choose(everything)
    assert chosen["dram_bytes"] == "dram__bytes.sum"
    assert chosen["tensor"] == ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                                "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")
    # an ncu without the Hopper GMMA pipe or dram__bytes: the fallbacks
    older = everything - {"sm__pipe_tensor_op_gmma_cycles_active", "dram__bytes"}
    chosen = M.choose(older)
    assert chosen["tensor"] == "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    assert chosen["dram_bytes"] == ("dram__bytes_read.sum", "dram__bytes_write.sum")
    assert "occupancy" not in M.choose(older - {"sm__warps_active"})


def test_metrics_ncu_rejects_at_run_time_are_replaced():
    requested = M.metric_list(M.choose(None))
    output = "==ERROR== Failed to find metric sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\n"
    rejected = M.rejected_metrics(output, requested)
    assert rejected == {"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"}
    assert M.choose(None, rejected)["tensor"] == "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    assert M.available_base_names("Device gh100\n  dram__bytes   # of bytes\n sm__throughput  SOL") == \
        {"dram__bytes", "sm__throughput"}


def test_combined_roles_take_the_larger_pipe_and_the_sum_of_bytes():
    chosen = {"tensor": ("a.pct", "b.pct"), "dram_bytes": ("r.sum", "w.sum"), "sm": "s.pct"}
    values = M.role_values(chosen, {"a.pct": 10.0, "b.pct": 55.0, "r.sum": 3.0, "w.sum": 4.0, "s.pct": None})
    assert values == {"tensor": 55.0, "dram_bytes": 7.0, "sm": None}


# --- sampling, matching, folding --------------------------------------------------------------

def test_the_sample_takes_the_first_ops_of_each_kind_and_weighs_them(deit):
    trace, attr, ops = deit
    assert len(ops) == len(trace.ops) // trace.iterations
    sample = choose_sample(ops, ["attention"], 2)
    attention = [op for op in ops if op.category == "attention"]
    # every kind of attention op is sampled, and the weights add back up to the op count
    assert {ops[p].kind for p in sample.positions} == {op.kind for op in attention}
    assert sum(sample.weight.values()) == pytest.approx(len(attention))
    assert [name for _, name in sample.expected] == [n for p in sample.positions for n in ops[p].kernels]
    assert len(sample.expected) == 6  # 2 blocks x (qkv GEMM, flash attention, proj GEMM)
    one = choose_sample(ops, ["attention"], 1)
    assert len(one.expected) == 3 and set(one.weight.values()) >= {12.0}


def test_flop_less_ops_of_another_shape_are_another_kind():
    """Every FLOP-less op of one name, module class and category had been one kind: FocalNet's 53 layer norms,
    from its largest stage to its smallest, were counted as the first two, 4.5x the category's bytes."""
    import torch

    import visprof

    class Stages(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.big, self.small = torch.nn.LayerNorm(64), torch.nn.LayerNorm(8)

        def forward(self, x):
            return self.big(x).sum() + self.small(x[..., :8]).sum()

    model = Stages()
    with torch.inference_mode(), visprof.trace(model, gpu=False) as session:
        model(torch.randn(2, 32, 64))
    ops = template_ops(session.trace, session.attribution)
    norms = [op for op in ops if op.category == "normalization"]
    assert len(norms) == 2 and norms[0].kind != norms[1].kind
    sample = choose_sample(ops, ["normalization"], 1)
    assert sorted(sample.weight.values()) == [1.0, 1.0]


def test_measured_kernels_are_matched_in_order_and_strays_are_left_out():
    expected = [(1, "a"), (1, "b"), (2, "a"), (3, "c")]
    measured = [NcuKernel(0, "a"), NcuKernel(1, "x"), NcuKernel(2, "a"), NcuKernel(3, "c")]
    assert [(p, k.id) for p, k in match_in_order(expected, measured)] == [(1, 0), (2, 2), (3, 3)]


def test_kernels_are_tied_to_their_op_by_the_nvtx_payload_when_ncu_reports_it():
    from visprof.nsight.ncu_run import Sample

    sample = Sample(positions=[1, 2, 3], weight={1: 1.0, 2: 1.0, 3: 1.0},
                    expected=[(1, "a"), (1, "b"), (2, "a"), (3, "c")])
    ranged = lambda kid, name, op_id: NcuKernel(kid, name, nvtx=[("m (M)", 0), ("cat", op_id), ("cat x", op_id)])  # noqa: E731
    # ids are 1 + position; out of order, a kernel of an op not sampled (id 9), and a kernel op 2 did not
    # launch in the attributed pass ("z": the library chose another one), which still counts for op 2
    measured = [ranged(0, "a", 3), ranged(1, "c", 4), ranged(2, "a", 2), ranged(3, "b", 2), ranged(4, "x", 9),
                ranged(5, "z", 3)]
    matched = match_kernels(sample, measured)
    assert [(p, k.id) for p, k in matched] == [(2, 0), (3, 1), (1, 2), (1, 3), (2, 5)]
    assert renamed_kernels(sample, matched) == 1
    # without NVTX columns: launch order by name
    plain = [NcuKernel(0, "a"), NcuKernel(1, "b"), NcuKernel(2, "a"), NcuKernel(3, "c")]
    assert [(p, k.id) for p, k in match_kernels(sample, plain)] == [(1, 0), (1, 1), (2, 2), (3, 3)]


def test_the_counters_fold_into_a_roofline_position_per_category(deit):
    trace, attr, ops = deit
    result = R.ProfileResult(model=R.ModelInfo("deit_small_patch16_224"), config=R.RunConfig(), measurement="gpu",
                             categories=attr.category_rows())
    sample = choose_sample(ops, ["attention"], 2)
    kernels = parse_ncu_csv(FIXTURE.read_text())
    measured = match_kernels(sample, kernels)
    assert len(measured) == 6 and measured == match_in_order(sample.expected, kernels)
    chosen = M.choose(None)
    (row,), kernel_rows = fold(result, ops, sample, measured, chosen, ["attention"])
    total = result.category_totals()["attention"]
    ns = [k.metrics["gpu__time_duration.sum"] for k in kernels]
    nbytes = [k.metrics["dram__bytes.sum"] for k in kernels]
    assert row.kernels_profiled == 6 and row.time_coverage == 1.0 and row.kernels_per_iteration == 36
    assert row.duration_ms == pytest.approx(6 * sum(ns) / 1e6)  # each block stands for 6
    assert row.duration_ms == pytest.approx(total.time_ms, rel=0.05)  # ncu's durations vs CUPTI's
    assert row.dram_bytes == pytest.approx(6 * sum(nbytes))
    sm = [k.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] for k in kernels]
    assert row.sm_throughput_pct == pytest.approx(sum(n * s for n, s in zip(ns, sm)) / sum(ns))
    tensor = [max(v for v in (k.metrics[m] for m in chosen["tensor"]) if v is not None) for k in kernels]
    assert row.tensor_pipe_pct == pytest.approx(sum(n * t for n, t in zip(ns, tensor)) / sum(ns))
    assert row.arithmetic_intensity == pytest.approx(total.flops / row.dram_bytes)
    assert row.dram_gbps == pytest.approx(row.dram_bytes / (row.duration_ms / 1e3) / 1e9)  # both ncu's, cold caches
    assert row.bound == "compute"
    assert {(k.name[:5], k.launches, k.weight) for k in kernel_rows} == {("nvjet", 4, 24.0), ("cudnn", 2, 12.0)}


def test_a_kind_ncu_did_not_measure_lowers_the_coverage_and_is_scaled_for(deit):
    trace, attr, ops = deit
    result = R.ProfileResult(model=R.ModelInfo("m"), config=R.RunConfig(), measurement="gpu",
                             categories=attr.category_rows())
    sample = choose_sample(ops, ["attention"], 2)
    kernels = [k for k in parse_ncu_csv(FIXTURE.read_text()) if "sdpa" not in k.name]
    measured = match_in_order(sample.expected, kernels)
    (row,), _ = fold(result, ops, sample, measured, M.choose(None), ["attention"])
    sdpa_ns = sum(sum(op.kernel_ns) for op in ops if op.kernels and "sdpa" in op.kernels[0])
    attention_ns = sum(sum(op.kernel_ns) for op in ops if op.category == "attention")
    assert row.time_coverage == pytest.approx(1 - sdpa_ns / attention_ns)
    assert row.duration_ms == pytest.approx(sum(6 * k.metrics["gpu__time_duration.sum"] for k in kernels) / 1e6
                                            / row.time_coverage)


def test_counters_round_trip_through_the_result_json(deit):
    trace, attr, ops = deit
    result = R.ProfileResult(model=R.ModelInfo("m"), config=R.RunConfig(), measurement="gpu",
                             categories=attr.category_rows())
    sample = choose_sample(ops, ["attention"], 2)
    measured = match_in_order(sample.expected, parse_ncu_csv(FIXTURE.read_text()))
    chosen = M.choose(None)
    rows, kernel_rows = fold(result, ops, sample, measured, chosen, ["attention"])
    result.counters = R.CounterSummary("ncu 2025.3.1.0", {"duration": "gpu__time_duration.sum"},
                                       ["visprof@attention/"], "none", 2, 6, rows, kernel_rows)
    back = R.ProfileResult.from_dict(json.loads(result.to_json()))
    assert back.counters == result.counters
    text = format_counters(back.counters)
    assert "attention" in text and "compute" in text and "visprof@attention/" in text


# --- the ncu command line ---------------------------------------------------------------------

def test_the_ncu_command_profiles_through_the_nvtx_filter_without_clock_control():
    command = ncu_command(Path("/usr/local/cuda/bin/ncu"), filters_for(["attention"]), ["a.sum", "b.pct"],
                          Path("/tmp/log.csv"), ["python", "-m", "visprof.nsight.ncu_child", "spec.json"])
    joined = " ".join(command)
    assert "--clock-control none" in joined and "--profile-from-start off" in joined
    assert "--nvtx --nvtx-include visprof@attention/" in joined and "--metrics a.sum,b.pct" in joined
    assert "--csv --page raw --print-units base --print-kernel-base mangled" in joined
    assert command[-4:] == ["python", "-m", "visprof.nsight.ncu_child", "spec.json"]
    assert filters_for(["attention", "linear"]) == ["regex:visprof@^(attention|linear)$/"]


def test_the_command_refuses_without_a_gpu_or_with_an_unknown_category(capsys):
    assert cli.main(["ncu", "resnet50", "-c", "attention", "--device", "cpu"]) == 2
    assert "needs a GPU" in capsys.readouterr().err
    assert cli.main(["ncu", "resnet50", "-c", "atention"]) == 2
    assert "unknown category atention; choose from attention," in capsys.readouterr().err


def test_the_raw_csv_over_the_rules_file_is_refused_before_any_work(tmp_path):
    from visprof.nsight.ncu_run import profile_with_ncu

    rules = tmp_path / "rules.toml"
    rules.write_text("")
    for name in ("rules.toml", "hard.toml"):
        if name == "hard.toml":
            (tmp_path / name).hardlink_to(rules)
        with pytest.raises(BadInputError, match=r"^csv_path .*category_file.*overwrite that input"):
            profile_with_ncu("resnet18", "attention", category_file=str(rules), csv_path=tmp_path / name)
    assert rules.read_text() == "" and sorted(p.name for p in tmp_path.iterdir()) == ["hard.toml", "rules.toml"]


def test_the_child_runs_the_sampled_ops_and_refuses_a_different_op_sequence(tmp_path, resnet18_ops):
    """The process ncu profiles, run directly (on the CPU)."""
    names = resnet18_ops
    spec = {"model": "resnet18", "batch_size": 1, "img_size": 32, "precision": "fp32", "channels_last": False,
            "device": "cpu", "ops": len(names), "op_names": names, "positions": [0, 3]}
    env = child_env({"PATH": "/usr/bin:/bin"})
    for op_names, code in ((names, 0), (names[:-1], 2)):
        (tmp_path / "spec.json").write_text(json.dumps({**spec, "op_names": op_names}))
        proc = subprocess.run([*module_command("visprof.nsight.ncu_child"), str(tmp_path / "spec.json")],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert proc.returncode == code, proc.stderr[-1500:]
    assert "op sequence is not reproducible" in proc.stderr


STAND_IN_NCU = """\
#!{python}
# Stands in for an older ncu: it knows no GMMA pipe metric and no --print-units; otherwise it
# runs the program it profiles (for real) and writes ncu's CSV (the fixture) to --log-file.
import json, os, shutil, subprocess, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"args": args, "ascii": os.environ.get("VISPROF_NVTX_ASCII")}}) + "\\n")
metrics = args[args.index("--metrics") + 1].split(",")
if any("gmma" in m for m in metrics):
    print("==ERROR== Failed to find metric sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
          file=sys.stderr)
    sys.exit(1)
if "--print-units" in args:
    print("==ERROR== unrecognised option '--print-units'. Use --help for further details.", file=sys.stderr)
    sys.exit(1)
status = subprocess.run(args[args.index("--force-overwrite") + 1:]).returncode
shutil.copyfile({csv!r}, args[args.index("--log-file") + 1])
sys.exit(status)
"""


def test_run_ncu_drops_what_this_ncu_rejects_and_runs_the_child_for_real(tmp_path, monkeypatch, resnet18_ops):
    from visprof.nsight.ncu_run import run_ncu

    script = tmp_path / "ncu"
    calls = tmp_path / "calls.jsonl"
    script.write_text(STAND_IN_NCU.format(python=sys.executable, log=str(calls), csv=str(FIXTURE)))
    script.chmod(0o755)
    names = resnet18_ops
    spec = {"model": "resnet18", "batch_size": 1, "img_size": 32, "precision": "fp32", "channels_last": False,
            "device": "cpu", "ops": len(names), "op_names": names, "positions": [0]}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run, chosen = run_ncu(script, ["visprof@attention/"], M.choose(None), spec, scratch, timeout=600)
    assert len(run.kernels) == 6 and run.filters == ["visprof@attention/"]
    assert chosen["tensor"] == "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    attempts = [json.loads(line) for line in calls.read_text().splitlines()]
    assert len(attempts) == 3  # GMMA metric rejected, then --print-units, then the run
    assert "--print-units" not in attempts[-1]["args"] and "--print-kernel-base" not in attempts[-1]["args"]
    assert all(a["ascii"] == "1" for a in attempts)  # the child pushes its ranges' text
    last = attempts[-1]["args"]
    assert last[last.index("--nvtx-include") + 1] == "visprof@attention/" and "--clock-control" in last


def test_no_gpu_here_has_the_exit_code_of_no_gpu_and_no_advice_to_use_the_cpu(monkeypatch, capsys):
    from visprof.base import hardware

    monkeypatch.setattr(hardware, "torch_cuda", lambda: None)  # a machine without a GPU, wherever this runs
    for device in ([], ["--device", "cuda"], ["--device", "auto"]):
        assert cli.main(["ncu", "resnet50", "-c", "attention", *device]) == 4  # docs/cli.md: no GPU visible
        err = capsys.readouterr().err
        assert err.startswith("visprof: error: visprof ncu needs a GPU: Nsight Compute measures GPU kernels, and no "
                              "CUDA GPU is visible to PyTorch (") and err.endswith("); run it on a GPU machine\n")
    assert cli.main(["ncu", "resnet50", "-c", "attention", "--device", "cpu"]) == 2  # asking for the CPU is the mistake
    assert capsys.readouterr().err == ("visprof: error: visprof ncu needs a GPU: Nsight Compute measures GPU kernels, "
                                       "not --device cpu\n")


def test_a_kernel_rows_mean_duration_is_weighted_so_weight_times_it_is_the_time_it_stands_for():
    """Launches of one kernel name standing for different numbers of ops: a plain mean of their durations
    times the summed weights made a family 405 ms an iteration where ncu's whole category took 329 ms.
    Weighted by launch weight, weight x mean is the sum of each launch's weight x duration; the other
    metrics are weighted by that time."""
    from visprof.nsight.ncu_run import Sample

    ops = [SimpleNamespace(category="convolution", kind="conv") for _ in range(2)]
    sample = Sample(positions=[0, 1], weight={0: 1.0, 1: 23.0}, expected=[(0, "k"), (1, "k")])
    metrics = lambda ns, sm: {"gpu__time_duration.sum": ns, "sm__throughput.avg.pct_of_peak_sustained_elapsed": sm}  # noqa: E731
    measured = [(0, NcuKernel(0, "k", metrics(100.0, 90.0))), (1, NcuKernel(1, "k", metrics(10.0, 30.0)))]
    result = R.ProfileResult(model=R.ModelInfo("m"), config=R.RunConfig(), measurement="gpu")
    _, (row,) = fold(result, ops, sample, measured, M.choose(None), [])
    assert row.weight == 24.0
    assert row.weight * row.metrics["duration"] == pytest.approx(1.0 * 100 + 23.0 * 10)  # 330 ns, not 24 x 55
    assert row.metrics["sm"] == pytest.approx((100 * 90 + 230 * 30) / 330)
