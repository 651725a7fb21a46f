"""visprof nsys run: the nsys command lines, finding nsys, and the orchestration around it.

The orchestration runs against a stand-in `nsys` (a real executable script, in a real
process) that records the command it was given and writes what nsys writes; one test runs a
real Nsight Systems when $VISPROF_NSYS names one (e.g. the Debian 2022.4 pack)."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from visprof.base.child_env import child_env, module_command
from visprof.cli import app as cli
from visprof.base.errors import BadInputError, ExternalToolError
from visprof.nsight import nsys_run, tools

NSYS = Path(__file__).resolve().parents[1] / "data" / "nsys"


@pytest.fixture
def a_gpu_here(monkeypatch):
    """The machine as one with a visible GPU: a profile given no --device runs there."""
    from visprof.base import hardware

    monkeypatch.setattr(hardware, "torch_cuda", lambda: object())


def test_the_profile_command_traces_cuda_and_nvtx_and_brackets_nvtx_only_runs(a_gpu_here):
    nvtx_only = ["visprof", "profile", "resnet50", "--nvtx-only"]
    command = nsys_run.profile_command(Path("/x/nsys"), Path("out/run"), nvtx_only, "auto", "cuda,nvtx")
    assert command[:8] == ["/x/nsys", "profile", "--trace", "cuda,nvtx", "--sample", "none", "--cpuctxsw", "none"]
    assert command[8:12] == ["--capture-range", "cudaProfilerApi", "--capture-range-end", "stop"]
    assert command[-6:] == ["--output", "out/run", *nvtx_only]
    train = ["python", "train.py"]
    assert "--capture-range" not in nsys_run.profile_command(Path("nsys"), Path("r"), train, "auto", "cuda,nvtx")
    assert "--capture-range" in nsys_run.profile_command(Path("nsys"), Path("r"), train, "cudaProfilerApi", "cuda,nvtx")
    assert "--capture-range" not in nsys_run.profile_command(Path("nsys"), Path("r"), nvtx_only, "none", "cuda,nvtx")
    on_cpu = [*nvtx_only, "--device", "cpu"]  # no CUDA profiler API on the CPU: record the whole run
    assert "--capture-range" not in nsys_run.profile_command(Path("nsys"), Path("r"), on_cpu, "auto", "cuda,nvtx")
    on_cpu = [*nvtx_only, "--device=CPU"]
    assert "--capture-range" not in nsys_run.profile_command(Path("nsys"), Path("r"), on_cpu, "auto", "cuda,nvtx")
    assert nsys_run.export_command(Path("nsys"), Path("r.nsys-rep"), Path("r.sqlite")) == [
        "nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", "r.sqlite", "r.nsys-rep"]
    assert nsys_run.output_paths("out/run.sqlite") == (Path("out/run.nsys-rep"), Path("out/run.sqlite"))


def test_an_nvtx_only_run_given_no_device_on_a_machine_without_a_gpu_records_the_whole_run(monkeypatch):
    """Its profile runs on the CPU, which calls no cudaProfilerStart: the profiler API had been asked
    for, and nsys wrote no report after the whole program ran."""
    from visprof.base import hardware

    monkeypatch.setattr(hardware, "torch_cuda", lambda: None)
    for program in (["visprof", "profile", "resnet18", "--nvtx-only"], ["visprof", "profile", "x", "--nvtx-only", "--device", "auto"]):
        assert "--capture-range" not in nsys_run.profile_command(Path("nsys"), Path("r"), program, "auto", "cuda,nvtx")
    asked = ["visprof", "profile", "x", "--nvtx-only", "--device", "cuda:1"]  # asked for: its own error says no GPU
    assert "--capture-range" in nsys_run.profile_command(Path("nsys"), Path("r"), asked, "auto", "cuda,nvtx")


def test_a_missing_nsys_is_one_clear_error_with_its_own_exit_code(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("VISPROF_NSYS", raising=False)
    monkeypatch.setitem(tools._INSTALL_GLOBS, "nsys", [str(tmp_path / "nowhere" / "nsys")])
    with pytest.raises(ExternalToolError, match="Nsight Systems .nsys. is not installed here"):
        tools.find_tool("nsys")
    assert cli.main(["nsys", "run", "-o", str(tmp_path / "r"), "--", sys.executable, "-c", "pass"]) == 6
    err = capsys.readouterr().err.strip()
    assert err.startswith("visprof: error: nsys:") and len(err.splitlines()) == 1
    with pytest.raises(ExternalToolError, match="not an executable file"):
        tools.find_tool("nsys", tmp_path / "nope")
    # a path from the environment says so: the user may have set it long ago
    monkeypatch.setenv("VISPROF_NSYS", str(tmp_path / "old" / "nsys"))
    with pytest.raises(ExternalToolError, match=r"old/nsys \(from \$VISPROF_NSYS\) is not an executable file"):
        tools.find_tool("nsys")


def test_nothing_to_run_and_bad_output_folders_are_refused_before_nsys_starts(tmp_path):
    with pytest.raises(BadInputError, match="nothing to run"):
        nsys_run.run_nsys([], tmp_path / "r")
    with pytest.raises(BadInputError, match="does not exist"):
        nsys_run.run_nsys(["true"], tmp_path / "missing" / "r")


STAND_IN = """\
    #!{python}
    # Stands in for nsys: logs its arguments, runs the program of `profile` for real, writes the
    # report, and for `export` copies an export that a real nsys wrote.
    import json, shutil, subprocess, sys
    args = sys.argv[1:]
    with open({log!r}, "a") as log:
        log.write(json.dumps(args) + "\\n")
    if args[0] == "profile":
        output = args[args.index("--output") + 1]
        program = args[args.index("--output") + 2:]
        status = subprocess.run(program).returncode
        if {write_report!r}:
            open(output + ".nsys-rep", "wb").write(b"report")
        sys.exit(status)
    if args[0] == "export":
        if {export_fails!r}:
            print("FATAL ERROR: cannot export", file=sys.stderr)
            sys.exit(3)
        shutil.copyfile({export!r}, args[args.index("--output") + 1])
"""


def stand_in(tmp_path: Path, export: Path, *, write_report=True, export_fails=False) -> Path:
    script = tmp_path / "bin" / "nsys"
    script.parent.mkdir(exist_ok=True)
    script.write_text(textwrap.dedent(STAND_IN).format(python=sys.executable, log=str(tmp_path / "nsys.log"),
                                                       write_report=write_report, export_fails=export_fails,
                                                       export=str(export)))
    script.chmod(0o755)
    return script


def unzip(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name.removesuffix(".gz")
    with gzip.open(NSYS / name) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def test_run_records_exports_and_imports(tmp_path, capsys):
    nsys = stand_in(tmp_path, unzip("deit_small_patch16_224.schema3.sqlite.gz", tmp_path))
    marker = tmp_path / "ran"
    code = cli.main(["nsys", "run", "--nsys", str(nsys), "-o", str(tmp_path / "out" / "run"), "--json",
                     str(tmp_path / "r.json"), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]) \
        if (tmp_path / "out").mkdir() is None else None
    assert code == 0 and marker.exists()  # the program really ran under the tool
    calls = [json.loads(line) for line in (tmp_path / "nsys.log").read_text().splitlines()]
    assert [c[0] for c in calls] == ["profile", "export"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run.nsys-rep", "run.sqlite"]
    assert "attention" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["model"]["name"] == "deit_small_patch16_224"


def test_a_second_run_replaces_its_own_recording_and_never_a_users(tmp_path, capsys):
    """A second run with the same -o had been refused, its own export taken for a results store; a user's
    BASE.nsys-rep was replaced unread (nsys runs with --force-overwrite)."""
    export = unzip("deit_small_patch16_224.schema3.sqlite.gz", tmp_path)
    nsys = stand_in(tmp_path, export)
    run = ["nsys", "run", "--nsys", str(nsys), "--no-import", "-o"]
    assert cli.main([*run, str(tmp_path / "rec"), "--", sys.executable, "-c", "pass"]) == 0
    assert cli.main([*run, str(tmp_path / "rec"), "--", sys.executable, "-c", "pass"]) == 0, capsys.readouterr().err
    (tmp_path / "mine.nsys-rep").write_text("my notes")
    shutil.copyfile(export, tmp_path / "theirs.sqlite")  # an export of the user's own, as nsys wrote it
    for base, kept in (("mine", "mine.nsys-rep"), ("theirs", "theirs.sqlite")):
        before = (tmp_path / kept).read_bytes()
        capsys.readouterr()
        assert cli.main([*run, str(tmp_path / base), "--", sys.executable, "-c", "pass"]) == 2
        assert "is no recording visprof nsys run made" in capsys.readouterr().err
        assert (tmp_path / kept).read_bytes() == before


@pytest.mark.parametrize("failure", ["no report", "export fails"])
def test_a_failed_recording_leaves_no_files(tmp_path, failure, capsys):
    nsys = stand_in(tmp_path, tmp_path / "absent.sqlite", write_report=failure != "no report",
                    export_fails=failure == "export fails")
    code = cli.main(["nsys", "run", "--nsys", str(nsys), "-o", str(tmp_path / "run"), "--", sys.executable, "-c",
                     "raise SystemExit(4)"])
    assert code == 6
    err = capsys.readouterr().err
    assert ("no report was written" in err) if failure == "no report" else ("FATAL ERROR: cannot export" in err)


def test_an_nsys_that_exits_0_without_a_report_is_not_said_to_have_failed_with_status_0(tmp_path, capsys):
    nsys = stand_in(tmp_path, tmp_path / "absent.sqlite", write_report=False)
    assert cli.main(["nsys", "run", "--nsys", str(nsys), "-o", str(tmp_path / "run"), "--", sys.executable, "-c",
                     "pass"]) == 6
    err = capsys.readouterr().err.strip()
    assert err == "visprof: error: nsys: nsys profile (no report was written): nsys exited 0: no output", err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("run", ".run"))) == []


REAL_NSYS = os.environ.get("VISPROF_NSYS")


@pytest.mark.skipif(not (REAL_NSYS and os.access(REAL_NSYS, os.X_OK)), reason="needs a real nsys in $VISPROF_NSYS")
def test_a_real_nsys_records_visprofs_ranges(tmp_path):
    env = child_env()
    proc = subprocess.run([*module_command("visprof"), "nsys", "run", "--no-import", "-o", str(tmp_path / "r"),
                           "--", *module_command("visprof"), "profile", "resnet18", "--img-size", "32", "-b", "1",
                           "--device", "cpu", "--iterations", "1", "--warmup", "0", "--nvtx-only", "--quiet"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    db = sqlite3.connect(tmp_path / "r.sqlite")
    ranges = db.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND category = 4").fetchone()[0]
    assert ranges > 40  # one op range per resnet18 op
    # importing it says what a CPU recording lacks, in one line
    proc = subprocess.run([*module_command("visprof"), "nsys", "import", str(tmp_path / "r.sqlite")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "no CUDA activity at all" in proc.stderr


def test_a_tool_given_as_a_path_in_this_folder_runs_by_that_path(tmp_path, monkeypatch, capsys):
    """`--nsys ./nsys` (or $VISPROF_NCU=./ncu): Path("./nsys") prints as "nsys", which subprocess
    would look up on PATH, where there is none."""
    nsys = stand_in(tmp_path, unzip("deit_small_patch16_224.schema3.sqlite.gz", tmp_path))
    ncu = nsys.with_name("ncu")
    ncu.write_text("#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler Version 2025.3.1.0'\n")
    ncu.chmod(0o755)
    monkeypatch.chdir(nsys.parent)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("VISPROF_NCU", "./ncu")
    assert cli.main(["nsys", "run", "--nsys", "./nsys", "--no-import", "-o", str(tmp_path / "run"), "--",
                     sys.executable, "-c", "pass"]) == 0, capsys.readouterr().err
    assert [json.loads(line)[0] for line in (tmp_path / "nsys.log").read_text().splitlines()] == ["profile", "export"]
    assert tools.find_tool("ncu") == ncu and tools.find_tool("ncu").is_absolute()
    from visprof.nsight.ncu_run import ncu_version
    assert ncu_version(tools.find_tool("ncu")) == "ncu 2025.3.1.0"


def test_no_import_with_json_is_refused_before_recording(tmp_path, capsys):
    """`--no-import --json FILE` once recorded, wrote no FILE and said nothing, exit 0."""
    assert cli.main(["nsys", "run", "--nsys", str(tmp_path / "no-such-nsys"), "--no-import", "--json",
                     str(tmp_path / "r.json"), "-o", str(tmp_path / "run"), "--", sys.executable, "-c", "pass"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("visprof: error: --no-import only records and exports, so --json cannot apply")
    assert not list(tmp_path.iterdir())

