"""visprof.cli.app with the profiler and the report replaced by fakes (no GPU, no native code)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from fixtures import cpu_trace
from visprof.cli import app as cli
from visprof.base import errors
from visprof.base import hardware
from visprof.attribution.attribute import attribute
from visprof.base.outputs import atomic_write_text
from visprof.base.child_env import module_command
from visprof.base import progress as progress_module
from visprof.base.progress import Progress

REPO = Path(__file__).resolve().parents[2]


class FakeResult:
    def __init__(self, model):
        self.model = model

    def to_json(self, path):
        atomic_write_text(path, json.dumps({"model": self.model}))


class FakeProfiler:
    """Stands in for visprof.profiler.profile: records its call, hands a small real CPU trace
    to ``on_trace`` (as profile() does after its attributed pass), returns or raises.
    ``during(kwargs)`` runs in the middle, as if while profiling."""

    def __init__(self, raises: BaseException | None = None, during=None):
        self.raises = raises
        self.during = during
        self.calls = []

    def __call__(self, model, **kwargs):
        self.calls.append((model, kwargs))
        if self.during is not None:
            self.during(kwargs)
        if self.raises is not None:
            raise self.raises
        if kwargs.get("on_trace") is not None:
            trace = cpu_trace()
            kwargs["on_trace"](trace, attribute(trace))
        return FakeResult(model)


@pytest.fixture
def fake_profile(monkeypatch):
    """Installs fake visprof.profiler and visprof.report.table modules; returns the profiler."""

    def install(raises=None, during=None):
        profiler = FakeProfiler(raises, during)
        monkeypatch.setitem(sys.modules, "visprof.profiler", types.SimpleNamespace(profile=profiler))
        rendered = []

        def render(result, top_modules=None):
            rendered.append(top_modules)
            return f"TABLE for {result.model} top={top_modules}"

        monkeypatch.setitem(sys.modules, "visprof.report.table", types.SimpleNamespace(render=render))
        profiler.rendered = rendered
        return profiler

    return install


# --- parsing -------------------------------------------------------------------------------

def test_profile_arguments_are_parsed():
    args = cli.build_parser().parse_args(
        "profile vit_base_patch16_224 -b 32 --img-size 384x256 --precision bf16 --channels-last "
        "--compile --device cuda:1 --warmup 0 --iterations 50 --passes memory,timing,memory "
        "--json out.json --trace t.json --top 7 --quiet --categories rules.toml".split()
    )
    assert args.model == "vit_base_patch16_224"
    assert (args.batch_size, args.img_size, args.precision) == (32, (384, 256), "bf16")
    assert args.channels_last and args.compile and args.quiet
    assert (args.device, args.warmup, args.iterations, args.top) == ("cuda:1", 0, 50, 7)
    assert args.passes == ("memory", "timing")  # order kept, repeats dropped
    assert (args.json, args.trace, args.categories) == (Path("out.json"), Path("t.json"), Path("rules.toml"))


def test_square_img_size_is_an_int():
    assert cli.build_parser().parse_args(["profile", "m", "--img-size", "224"]).img_size == 224


@pytest.mark.parametrize(
    "argv, complaint",
    [
        (["profile", "m", "--batch-size", "0"], "must be >= 1"),
        (["profile", "m", "--batch-size", "many"], "expected an integer"),
        (["profile", "m", "--img-size", "224x"], "image size must be N, HxW, test or train, got '224x'"),
        (["profile", "m", "--img-size", "4x224"], "at least 8 pixels a side, got '4x224'"),
        (["sweep", "m", "--store", "s.db", "--img-size", "224,4"], "at least 8 pixels a side, got '4'"),
        (["profile", "m", "--passes", "timing,bogus"], "comma-separated subset"),
        (["profile", "m", "--precision", "fp8"], "invalid choice"),
        (["profile"], "required: model"),
        ([], "visprof: error: a command is needed (commands: info, profile, sweep,"),
        (["--bogus"], "--bogus is not an option of visprof itself: a command comes first (commands: info,"),
        (["profle", "resnet18"], "visprof: error: no command 'profle'; did you mean 'profile'? (usage"),
        (["zzz"], "no command 'zzz' (commands: info, profile,"),
        (["nsys", "imprt", "r.sqlite"], "visprof nsys: error: no subcommand 'imprt'; did you mean 'import'?"),
        (["bounds"], "visprof bounds: error: a subcommand is needed (subcommands: build, coverage) (usage"),
        (["profile", "m", "--batchsize", "8"], "unrecognized arguments: --batchsize 8; did you mean --batch-size?"),
        (["profile", "m", "--img-sise=64"], "unrecognized arguments: --img-sise=64; did you mean --img-size?"),
        (["profile", "m", "--zzz"], "visprof profile: error: unrecognized arguments: --zzz (usage"),
    ],
)
def test_usage_errors_exit_2_with_the_reason(argv, complaint, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert complaint in err
    assert err.count("\n") == 1 and "--help)" in err  # one line, naming where the usage is, not the usage block


def test_help_exits_0(capsys):
    assert cli.main(["profile", "--help"]) == 0
    assert "--batch-size" in capsys.readouterr().out


@pytest.mark.parametrize("argv, shown", [(["--help"], "COMMAND ..."), (["-h"], "COMMAND ..."), (["--version"], "visprof "),
                                         (["nsys", "--help"], "SUBCOMMAND ...")])
def test_help_and_version_need_no_command(argv, shown, capsys):
    assert cli.main(argv) == 0
    assert shown in capsys.readouterr().out


# --- profile -------------------------------------------------------------------------------

def test_profile_passes_every_option_and_prints_the_table(fake_profile, capsys, tmp_path):
    profiler = fake_profile()
    rules = tmp_path / "rules.toml"
    rules.write_text("")
    code = cli.main(
        [
            "profile", "resnet50", "--batch-size", "16", "--img-size", "160", "--precision", "fp16",
            "--channels-last", "--device", "cpu", "--warmup", "2", "--iterations", "5",
            "--passes", "timing,attributed", "--trace", str(tmp_path / "t.json"), "--top", "3",
            "--categories", str(rules), "--quiet",
        ]
    )
    assert code == 0
    (model, kwargs), = profiler.calls
    assert callable(kwargs.pop("on_trace"))  # the trace is written by the CLI, after the report
    assert [(model, kwargs)] == [
        (
            "resnet50",
            {
                "batch_size": 16,
                "img_size": 160,
                "precision": "fp16",
                "device": "cpu",
                "warmup": 2,
                "iterations": 5,
                "passes": ("timing", "attributed"),
                "category_file": str(rules),
                "top_modules": 3,
                "channels_last": True,
                "compile": False,
                "progress": False,
            },
        )
    ]
    captured = capsys.readouterr()
    assert captured.out == "TABLE for resnet50 top=3\n"
    assert captured.err == ""  # --quiet


def test_options_not_given_are_left_to_the_profiler_defaults(fake_profile, capsys):
    profiler = fake_profile()
    assert cli.main(["profile", "resnet18"]) == 0
    # no channels_last either: not given, profile() runs a module in its own layout (a name NCHW)
    assert profiler.calls == [("resnet18", {"compile": False, "progress": True})]
    assert profiler.rendered == [None]


def test_json_is_written_by_the_result(fake_profile, tmp_path, capsys):
    fake_profile()
    out = tmp_path / "r.json"
    assert cli.main(["profile", "resnet18", "--json", str(out)]) == 0
    assert json.loads(out.read_text()) == {"model": "resnet18"}
    assert f"wrote {out}" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--json", "--trace"])
def test_unwritable_output_fails_before_profiling(option, fake_profile, tmp_path, capsys):
    profiler = fake_profile()
    assert cli.main(["profile", "resnet18", option, str(tmp_path / "missing" / "r.json")]) == 2
    assert profiler.calls == []
    assert "does not exist" in capsys.readouterr().err


def test_missing_categories_file_fails_before_profiling(fake_profile, tmp_path, capsys):
    profiler = fake_profile()
    assert cli.main(["profile", "resnet18", "--categories", str(tmp_path / "nope.toml")]) == 2
    assert profiler.calls == []
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "error, code",
    [
        (errors.UnknownModelError("resnet5O", ["resnet50", "resnet50d"]), 2),
        (errors.BadInputError("image size must be at least 8 pixels a side, got 4"), 2),
        (errors.OutOfMemoryError(4096, 1024, "cuda:0"), 3),
        (errors.NoGPUError("this torch was built without CUDA"), 4),
        (errors.DeviceNotFoundError("cuda:3", ["cuda:0 (NVIDIA H200)"]), 4),
        (errors.CuptiUnavailableError(), 1),
        (errors.ModelForwardError("m", (1, 3, 8, 8), RuntimeError("boom")), 1),
        (errors.NativeUnavailableError("not built"), 1),
    ],
)
def test_user_errors_print_one_line_and_their_exit_code(error, code, fake_profile, capsys):
    fake_profile(raises=error)
    assert cli.main(["profile", "resnet50", "-q"]) == code
    captured = capsys.readouterr()
    assert captured.err == f"visprof: error: {error}\n"
    assert "Traceback" not in captured.err
    assert captured.out == ""


def test_unknown_model_message_shows_suggestions(fake_profile, capsys):
    fake_profile(raises=errors.UnknownModelError("resnet5O", ["resnet50", "resnet50d"]))
    cli.main(["profile", "resnet5O"])
    assert capsys.readouterr().err == "visprof: error: unknown model 'resnet5O'; did you mean: resnet50, resnet50d?\n"


def test_interrupt_exits_130(fake_profile, capsys):
    fake_profile(raises=KeyboardInterrupt())
    assert cli.main(["profile", "resnet50"]) == 130
    assert capsys.readouterr().err == "visprof: error: interrupted\n"


def test_bugs_keep_their_traceback(fake_profile):
    fake_profile(raises=ZeroDivisionError("a bug"))
    with pytest.raises(ZeroDivisionError):
        cli.main(["profile", "resnet50"])


@pytest.mark.parametrize("debug, traceback_shown", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_visprof_debug_shows_user_errors_in_full_too(fake_profile, monkeypatch, capsys, debug, traceback_shown):
    # the traceback is added; the one line and the exit code stay (it had been exit 1, the line gone,
    # and VISPROF_DEBUG=0 had turned it on)
    fake_profile(raises=errors.NoGPUError())
    monkeypatch.setenv("VISPROF_DEBUG", debug)
    assert cli.main(["profile", "resnet50"]) == errors.NoGPUError.exit_code
    err = capsys.readouterr().err
    assert ("Traceback (most recent call last)" in err) == traceback_shown
    assert err.splitlines()[-1].startswith("visprof: error: ")


# --- info ----------------------------------------------------------------------------------

def _native_that_fails():
    def native_info():
        raise errors.NativeUnavailableError("visprof._C was not built")

    return types.SimpleNamespace(native_info=native_info)


@pytest.mark.parametrize(
    "native, shown",
    [
        (None, "unavailable (ModuleNotFoundError: import of visprof.native halted"),  # import fails
        (_native_that_fails(), "unavailable (NativeUnavailableError: the native extension visprof._C is unavailable"),
        # What visprof.native.native_info() reports when visprof._C cannot be loaded.
        (
            types.SimpleNamespace(native_info=lambda: {"backend": "unavailable", "error": "No module named 'visprof._C'"}),
            "unavailable (No module named 'visprof._C')",
        ),
    ],
)
def test_info_without_gpu_or_native_extension(native, shown, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "visprof.native", native)
    monkeypatch.setattr(hardware, "torch_cuda", lambda: None)
    import torch

    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split(None, 1) for line in out.splitlines() if not line.startswith(("GPUs", " ")))
    assert lines["native"].startswith(shown)
    assert lines["torch"].startswith(torch.__version__)
    assert lines["visprof"] == cli.visprof_version() != ""
    assert set(lines) == {"visprof", "native", "torch", "timm", "NVML"}
    assert "GPUs: none (" in out


def test_info_shows_native_backend_and_gpus(monkeypatch, capsys):
    native = types.SimpleNamespace(native_info=lambda: {"backend": "cuda", "cupti": "13.0"})
    monkeypatch.setitem(sys.modules, "visprof.native", native)
    gpu = {
        "torch_index": 0,
        "name": "NVIDIA H200",
        "memory_total_bytes": 150_754_820_096,
        "compute_capability": "9.0",
        "driver_version": "580.159.04",
        "cuda_driver_version": "13.0",
        "power_limit_w": 700.0,
        "max_sm_clock_mhz": 1980,
        "max_mem_clock_mhz": 3201,
        "pci_bus_id": "00000000:1B:00.0",
    }
    monkeypatch.setattr(hardware, "device_summary", lambda: [gpu])
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "native   backend=cuda, cupti=13.0" in out
    assert (
        "  cuda:0, NVIDIA H200, 140.4 GiB, sm_90, driver 580.159.04 (CUDA 13.0), power limit 700 W, "
        "max clocks SM 1980 / mem 3201 MHz, pci 00000000:1B:00.0"
    ) in out


def test_cli_modules_import_without_heavy_dependencies():
    # `visprof --help` must answer at once: no torch, timm or pynvml at import time.
    code = (
        "import sys, visprof.cli.app, visprof.base.errors, visprof.base.hardware, visprof.base.progress, visprof.passes.batch_search;"
        "print(sorted(m for m in ('torch', 'timm', 'pynvml', 'tqdm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_python_dash_m_runs_the_cli():
    done = subprocess.run(
        [*module_command("visprof"), "profile", "m", "--batch-size", "0"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "must be >= 1" in done.stderr


# --- progress (what --quiet switches off) -------------------------------------------------------

class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def _run_three_passes(stream, enabled=True):
    seen = []
    with Progress(3, "pass", enabled=enabled, stream=stream) as progress:
        progress.step("timing")
        seen.extend(progress.iter(range(4), "iterations"))
        progress.step("attributed")
        progress.step("memory")
    return seen


def test_progress_in_a_log_is_one_line_per_step():
    stream = io.StringIO()
    assert _run_three_passes(stream) == [0, 1, 2, 3]
    assert stream.getvalue().splitlines() == [
        "[visprof] pass 1/3: timing",
        "[visprof]   iterations (4)",
        "[visprof] pass 2/3: attributed",
        "[visprof] pass 3/3: memory",
    ]


def test_progress_on_a_terminal_draws_bars():
    stream = FakeTerminal()
    assert _run_three_passes(stream) == [0, 1, 2, 3]
    drawn = stream.getvalue()
    assert "pass 3/3: memory" in drawn and "\r" in drawn
    assert "[visprof]" not in drawn


def test_progress_without_tqdm_falls_back_to_lines(monkeypatch):
    monkeypatch.setattr(progress_module, "load_tqdm", lambda: None)
    stream = FakeTerminal()
    _run_three_passes(stream)
    assert stream.getvalue().startswith("[visprof] pass 1/3: timing\n")


def test_quiet_progress_prints_nothing_but_still_iterates():
    stream = FakeTerminal()
    assert _run_three_passes(stream, enabled=False) == [0, 1, 2, 3]
    assert stream.getvalue() == ""


def test_progress_goes_to_stderr_by_default(capsys):
    with Progress(1, "pass") as progress:
        progress.step("timing")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "[visprof] pass 1/1: timing\n")


# --- output files after the run (issue 8) -------------------------------------------------------

def test_a_folder_removed_during_the_run_fails_that_file_only(fake_profile, tmp_path, capsys):
    gone = tmp_path / "gone"
    gone.mkdir()
    fake_profile(during=lambda kwargs: gone.rmdir())  # the user deletes the folder while profiling
    trace = tmp_path / "t.json"
    code = cli.main(["profile", "resnet18", "--json", str(gone / "r.json"), "--trace", str(trace)])
    captured = capsys.readouterr()
    assert code == errors.EXIT_OUTPUT == 5
    assert captured.out == "TABLE for resnet18 top=None\n"  # the report is on screen
    assert captured.err.splitlines() == [
        f"[visprof] writing {gone / 'r.json'}",
        f"visprof: error: could not write {gone / 'r.json'}: No such file or directory; no file was created",
        f"[visprof] writing {trace}",
        f"[visprof] wrote {trace}",
    ]
    assert json.loads(trace.read_text())["traceEvents"]  # the next file is still written


def test_a_trace_the_run_could_not_make_is_an_error_not_silence(fake_profile, tmp_path, capsys):
    # As when CUPTI is held by another profiler: profile() warns and hands over no trace.
    fake_profile(during=lambda kwargs: kwargs.pop("on_trace"))
    trace = tmp_path / "t.json"
    assert cli.main(["profile", "resnet18", "-q", "--trace", str(trace)]) == 5
    assert capsys.readouterr().err == (f"visprof: error: --trace {trace} was not written: the attributed pass did "
                                       "not run (see the warnings above)\n")
    assert not trace.exists()


def test_an_interrupt_names_the_outputs_not_written(fake_profile, tmp_path, capsys):
    old = tmp_path / "t.json"
    old.write_text('{"traceEvents": []}')  # an earlier trace (a JSON output replaces its own kind only)
    fake_profile(raises=KeyboardInterrupt())
    assert cli.main(["profile", "resnet18", "--json", str(tmp_path / "r.json"), "--trace", str(old)]) == 130
    assert capsys.readouterr().err == (f"visprof: error: interrupted; not written: {tmp_path / 'r.json'}, {old} "
                                       "(its previous version is unchanged)\n")
    assert old.read_text() == '{"traceEvents": []}' and not (tmp_path / "r.json").exists()


def test_an_interrupted_comparison_names_the_files_it_did_not_write(tmp_path, capsys, monkeypatch):
    """compare, predict, calibrate said only "interrupted": the README says the message names the
    output files not written. Here Ctrl-C comes while the CSV is written, after the JSON was."""
    from visprof.base import outputs

    timm = Path(__file__).resolve().parents[1] / "data" / "timm"
    csv, doc = tmp_path / "c.csv", tmp_path / "c.json"
    csv.write_text("model,img_size,family,base_samples_per_s,target_samples_per_s\nold,224,resnet,1,2\n")  # an earlier compare --csv
    write = outputs.atomic_write_text

    def interrupted_at_the_csv(path, text, **kw):
        if Path(path) == csv:
            raise KeyboardInterrupt
        write(path, text, **kw)

    monkeypatch.setattr(outputs, "atomic_write_text", interrupted_at_the_csv)
    code = cli.main(["compare", str(timm / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"),
                     str(timm / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"), "--json", str(doc), "--csv", str(csv),
                     "--quiet"])
    assert code == 130 and json.loads(doc.read_text())["models"]
    assert capsys.readouterr().err.splitlines()[-1] == (f"visprof: error: interrupted; not written: {csv} (its previous "
                                                        "version is unchanged)")
    assert csv.read_text() == "model,img_size,family,base_samples_per_s,target_samples_per_s\nold,224,resnet,1,2\n"


def test_a_reader_that_goes_away_does_not_cost_the_files(fake_profile, tmp_path, monkeypatch, capsys):
    # `visprof profile m --json r.json | head -1`: a real pipe whose reader has closed.
    read_end, write_end = os.pipe()
    os.close(read_end)
    stdout = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stdout", stdout)
    fake_profile()
    out = tmp_path / "r.json"
    try:
        assert cli.main(["profile", "resnet18", "-q", "--json", str(out)]) == 0
    finally:
        monkeypatch.undo()
        stdout.close()
    assert json.loads(out.read_text()) == {"model": "resnet18"}
    assert capsys.readouterr().err == ""


def test_an_interrupted_compare_compile_names_its_unwritten_json(tmp_path, monkeypatch, capsys):
    """Ctrl-C during compare-compile said only "interrupted", where profile and the other commands that
    write at their end name the files they did not write (docs/cli.md)."""
    import visprof.profiler

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(visprof.profiler, "profile", interrupted)
    out = tmp_path / "cc.json"
    assert cli.main(["compare-compile", "resnet18", "--device", "cpu", "--json", str(out), "--quiet"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == f"visprof: error: interrupted; not written: {out}"
    assert not out.exists()


def test_a_compiled_run_that_fails_leaves_the_eager_runs_latency_said(tmp_path, monkeypatch, capsys):
    """compare-compile threw the finished eager run away without a word when the compiled one failed
    (no working C++ compiler): its latency is said before the error."""
    import visprof.profiler
    from visprof.base.errors import ModelForwardError
    from visprof.result import LatencyStats, ModelInfo, ProfileResult, RunConfig, Timing

    def profile(model, compile, **kwargs):
        if compile:
            raise ModelForwardError(model, (1, 3, 8, 8), RuntimeError("InvalidCxxCompiler"))
        result = ProfileResult(ModelInfo(model, batch_size=1), RunConfig(device="cpu"), "cpu")
        result.timing = Timing(LatencyStats.from_samples([12.5]), 80.0, 1)
        return result

    monkeypatch.setattr(visprof.profiler, "profile", profile)
    out = tmp_path / "cc.json"
    assert cli.main(["compare-compile", "resnet18", "--device", "cpu", "--json", str(out), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ("eager run of resnet18 finished: latency (median) 12.500 ms; the compiled run failed "
                            "(below), so nothing is compared and no --json is written\n")
    assert "InvalidCxxCompiler" in captured.err and not out.exists()
