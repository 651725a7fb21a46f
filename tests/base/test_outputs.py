"""visprof.base.outputs: paths checked up front, files complete or absent, on real files and signals."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import gzip
from pathlib import Path

import pytest

from visprof.base.errors import BadInputError, OutputWriteError
from visprof.base.output_paths import check_output_path, check_output_paths
from visprof.base.outputs import atomic_output, atomic_write_text

REPO = Path(__file__).resolve().parents[2]


def test_a_directory_a_missing_folder_and_a_device_are_refused(tmp_path):
    with pytest.raises(BadInputError, match="is a directory"):
        check_output_path(tmp_path, "--json")
    with pytest.raises(BadInputError, match="does not exist"):
        check_output_path(tmp_path / "nope" / "x.json", "--json")
    with pytest.raises(BadInputError, match="not a regular file"):
        check_output_path("/dev/null", "--json")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInputError, match="not a directory"):
        check_output_path(tmp_path / "file" / "x.json", "--json")


def test_the_python_writers_replace_no_pipe_device_or_store(tmp_path):
    """result.to_json("/dev/null"), run as root, replaced /dev/null with a file of JSON; a store's path
    given to to_json was overwritten: only the CLI's up-front checks refused them."""
    import sqlite3

    from visprof.result import ProfileResult

    result = ProfileResult.load(REPO / "tests/data/h200-result-vit_base_patch16_224.json")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    store = tmp_path / "results.db"
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE results (x)")
    before = store.read_bytes()
    with pytest.raises(BadInputError, match="fifo is not a regular file"):
        result.to_json(fifo)
    with pytest.raises(BadInputError, match="results.db is an SQLite file"):
        result.to_json(store)
    with pytest.raises(BadInputError, match="is an SQLite file"):
        atomic_write_text(store, "x")
    assert fifo.is_fifo() and store.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "results.db"]  # no temporary file left


def test_the_json_writers_replace_json_only(tmp_path):
    """session.save("train.py") replaced the user's script with JSON; a path of the wrong type was
    a TypeError from pathlib. A JSON file (plain, gzipped or empty) is replaced as before."""
    from visprof.result import ProfileResult

    result = ProfileResult.load(REPO / "tests/data/h200-result-vit_base_patch16_224.json")
    script = tmp_path / "train.py"
    script.write_text("print('training')\n")
    with pytest.raises(BadInputError, match="train.py holds something other than a visprof profile result"):
        result.to_json(script)
    assert script.read_text() == "print('training')\n"
    for kept in ("old.json", "old.json.gz", "empty.json"):
        path = tmp_path / kept
        result.to_json(path)
        if kept == "empty.json":
            path.write_text("")
        result.to_json(path)
        assert ProfileResult.load(path).model == result.model
    for wrong in (3, b"out.json"):  # None: to_json returns the text and writes nothing
        with pytest.raises(BadInputError, match="a file path is a str or a pathlib.Path"):
            result.to_json(wrong)


def test_a_json_output_replaces_only_a_json_document_of_its_own_kind(tmp_path):
    """A Chrome trace written to a saved profile result, or to a dataset's annotations.json, had
    replaced it without a word, and diff's --json a package.json: each of visprof's JSON kinds (known
    by its schema, or a Chrome trace's traceEvents) is replaced only by its own, and no other JSON is."""
    import gzip

    from visprof.base.outputs import atomic_write_json, write_json_summary
    from visprof.result import ProfileResult

    result = ProfileResult.load(REPO / "tests/data/h200-result-vit_base_patch16_224.json")
    saved, packed, annotations = tmp_path / "r.json", tmp_path / "r.json.gz", tmp_path / "annotations.json"
    result.to_json(saved)
    result.to_json(packed)
    annotations.write_text('{"images": [], "annotations": []}\n')
    trace = '{"traceEvents":[],"displayTimeUnit":"ns"}'
    for path, holds in ((saved, "a visprof profile result"), (packed, "a visprof profile result"),
                        (annotations, "something other than a Chrome trace")):
        before = path.read_bytes()
        with pytest.raises(BadInputError, match=f"{path.name} (holds {holds}|holds {holds}, not a Chrome trace),"):
            atomic_write_json(path, trace, kind="chrome-trace")
        assert path.read_bytes() == before
    with pytest.raises(BadInputError, match="annotations.json holds something other than a visprof profile result"):
        result.to_json(annotations)
    with pytest.raises(BadInputError, match="r.json holds a visprof profile result, not a visprof diff summary of two results,"):
        write_json_summary(saved, "diff", {"per": "iteration"})  # diff --json over a saved result
    with pytest.raises(BadInputError, match="annotations.json holds something other than a visprof diff summary"):
        write_json_summary(annotations, "diff", {"per": "iteration"})
    summary = tmp_path / "d.json"
    write_json_summary(summary, "diff", {"per": "iteration"})
    with pytest.raises(BadInputError, match="d.json holds a visprof diff summary of two results, not a visprof set of "
                                            "predictions,"):
        write_json_summary(summary, "predict", {"predictions": []})
    # each kind replaces its own: a profile result, a Chrome trace (gzipped too), a summary
    result.to_json(saved)
    chrome = tmp_path / "t.json.gz"
    chrome.write_bytes(gzip.compress(trace.encode()))
    atomic_write_json(chrome, trace, kind="chrome-trace")
    write_json_summary(summary, "diff", {"per": "sample"})
    assert ProfileResult.load(saved).model == result.model
    assert json.loads(summary.read_text()) == {"schema": "visprof.diff/1", "per": "sample"}
    assert annotations.read_text() == '{"images": [], "annotations": []}\n'


def test_a_symbolic_link_loop_is_refused_in_one_line(tmp_path):
    """l1 -> l2 -> l1 as --json or --store: pathlib's RuntimeError "Symlink loop" was a traceback."""
    (tmp_path / "l1.db").symlink_to(tmp_path / "l2.db")
    (tmp_path / "l2.db").symlink_to(tmp_path / "l1.db")
    with pytest.raises(BadInputError, match=r"--json: .*l1.db is a symbolic link that leads back to itself"):
        check_output_paths({"--json": tmp_path / "l1.db"})


@pytest.mark.parametrize("path", ["", "  "])
def test_an_empty_path_is_refused_as_such(path, tmp_path, monkeypatch):
    """result.to_json("") said "could not write .: Device or resource busy" (Path("") is ".")."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInputError, match="--json: the path is empty; give a file name"):
        check_output_path(path, "--json")
    with pytest.raises(BadInputError, match="the path is empty; give a file name"):
        atomic_write_text(path, "x")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(BadInputError, match="not writable"):
            check_output_path(tmp_path / "x.json", "--json")
    finally:
        tmp_path.chmod(0o700)


def test_a_replaced_file_keeps_its_own_mode(tmp_path):
    """Written as a new file renamed over the old, a private 0640 --json became 0644, readable by all."""
    target = tmp_path / "r.json"
    target.write_text("old")
    for mode in (0o640, 0o600, 0o664):
        target.chmod(mode)
        atomic_write_text(target, "new")
        assert target.stat().st_mode & 0o777 == mode and target.read_text() == "new"


def test_two_options_naming_one_file_are_refused(tmp_path):
    with pytest.raises(BadInputError, match="--json and --trace name the same file"):
        check_output_paths({"--json": tmp_path / "a.json", "--trace": tmp_path / "." / "a.json"})
    assert set(check_output_paths({"--json": tmp_path / "a.json", "--trace": None})) == {"--json"}


def test_written_whole_with_the_usual_mode_and_gzip_by_suffix(tmp_path):
    target = tmp_path / "r.json"
    atomic_write_text(target, "hello")
    assert target.read_text() == "hello"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    zipped = tmp_path / "t.json.gz"
    atomic_write_text(zipped, "zipped")
    assert gzip.decompress(zipped.read_bytes()).decode() == "zipped"
    with atomic_output(tmp_path / "b.bin", "wb") as fh:
        fh.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.bin", "r.json", "t.json.gz"]  # no leftovers


def test_a_failure_while_writing_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_output(target) as fh:
            fh.write("new, half")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_error_naming_the_file(tmp_path, monkeypatch):
    # /dev/full as the temporary file: every write fails with ENOSPC, as on a full disk.
    import visprof.base.outputs

    monkeypatch.setattr(visprof.base.outputs, "create_new", lambda path: os.open("/dev/full", os.O_WRONLY))
    target = tmp_path / "r.json"
    with pytest.raises(OutputWriteError, match=r"could not write .*r\.json: No space left on device"):
        atomic_write_text(target, "x" * 100_000)
    assert not target.exists()


def test_sigint_while_writing_leaves_the_old_file_and_no_partial(tmp_path):
    """A real SIGINT, sent by another process while the writer is in the middle of the file."""
    target = tmp_path / "big.json"
    target.write_text("old")
    ready = tmp_path / "ready"
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from visprof.base.outputs import atomic_output
        with atomic_output({str(target)!r}) as fh:
            fh.write("x" * 1_000_000)
            open({str(ready)!r}, "w").close()
            while True:
                fh.write("y" * 1000)
                time.sleep(0.001)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    for _ in range(2000):
        if ready.exists():
            break
        proc.poll()
        assert proc.returncode is None, proc.stderr.read().decode()
        import time

        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and b"KeyboardInterrupt" in err
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json", "ready"]


def test_every_writer_keeps_the_old_file_when_the_write_fails(tmp_path):
    """Results, recordings, Chrome traces and CSVs, written under a real file-size limit
    (ulimit -f, in a child process): each fails with one error naming its file, and the file
    that was there stays whole."""
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path[:0] = [{str(REPO)!r}, {str(REPO / "tests" / "helpers")!r}]
        from fixtures import mini_vit, odd_rows
        from toy_results import make_result
        from visprof.attribution.attribute import attribute
        from visprof.base.errors import OutputWriteError
        from visprof.report import to_chrome_trace, write_categories_csv, write_modules_csv

        trace = odd_rows(mini_vit(iterations=2)).build()
        result = make_result(trace)
        writers = {{
            "result.json": lambda p: result.to_json(p),
            "recording.json.gz": lambda p: trace.save(p),
            "trace.json": lambda p: to_chrome_trace(trace, attribute(trace), p),
            "categories.csv": lambda p: write_categories_csv(result, p),
            "modules.csv": lambda p: write_modules_csv(result, p),
        }}
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))  # Python ignores SIGXFSZ: writes fail with EFBIG
        for name, write in writers.items():
            path = {str(tmp_path)!r} + "/" + name
            try:
                write(path)
            except OutputWriteError as error:
                print(name, "|", error)
            else:
                print(name, "| written")
    """)
    names = ("result.json", "recording.json.gz", "trace.json", "categories.csv", "modules.csv")
    # each writer replaces only a file of the kind it writes
    olds = {"categories.csv": "model,measurement,category,old\nx,cpu,linear,1\n",
            "modules.csv": "model,measurement,path,cls,old\nx,cpu,blocks,Block,1\n"}
    olds.update({"result.json": '{"schema": "visprof.profile/1", "old": true}',
                 "recording.json.gz": '{"schema": "visprof.trace/1", "old": true}', "trace.json": '{"traceEvents": []}'})
    for name in names:
        (tmp_path / name).write_text(olds[name])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 5
    for line in lines:
        name, message = line.split(" | ")
        assert message == (f"could not write {tmp_path / name}: File too large (the file would exceed the file size "
                           "limit (ulimit -f) or the file system's limit); the previous file is unchanged")
        assert (tmp_path / name).read_text() == olds[name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["result.json", "recording.json.gz", "trace.json", "categories.csv", "modules.csv"])


@pytest.mark.skipif(os.geteuid() != 0, reason="a user cannot write to /sys anyway (covered by 'not writable')")
def test_root_is_refused_where_the_kernel_takes_no_files():
    # os.access says yes to root everywhere; creating a file is the only real test.
    with pytest.raises(BadInputError, match=r"--json: cannot create files in directory /sys: Permission denied"):
        check_output_path("/sys/visprof.json", "--json")
    with pytest.raises(BadInputError, match=r"cannot create files in directory /proc: it takes no new files"):
        check_output_path("/proc/visprof.json", "--json")
    assert not Path("/sys/visprof.json").exists()


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "r.json"
    target.write_text("old")
    link = tmp_path / "r.json"
    link.symlink_to(target)
    assert check_output_path(link, "--json") == target
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    dangling = tmp_path / "nowhere.json"
    dangling.symlink_to(tmp_path / "missing" / "x.json")
    with pytest.raises(BadInputError, match="does not exist"):
        check_output_path(dangling, "--json")


# --- what an output may replace: nothing, an empty file, or its own kind -------------------------------

NCU_RAW = ('==PROF== Connected to process 2604 (/usr/bin/python3.12)\n"ID","Process ID","Kernel Name"\n'
           '"0","2604","ampere_sgemm"\n')
OWN_KIND = {
    "diff": ['{"schema": "visprof.diff/1", "per": "iteration"}', '\ufeff  {"schema":"visprof.diff/1"}'],
    "html": ['<!DOCTYPE html>\n<html><head><meta name="generator" content="visprof report">',
             '  <html lang=\'en\'><meta name="generator" content="visprof report">'],
    "predict-csv": ["model,img_size,source_gpu,target_gpu,x\nresnet50,224,h200,rtx4090,1\n"],
    "export-csv": ["id,run_id,cell_key,model,batch_size\n"],
    "ncu-csv": [NCU_RAW],
    "parquet": ["PAR1....visprof.store-export"],
    "png": ["\x89PNG\r\n\x1a\n....tEXtSoftware\x00visprof report"],
}
# the same formats, not written by visprof: a user's JSON, page, table, image
OTHER = ["import torch\nprint('train')\n", "from x import a, b\nimport torch\n", "name: value\n", "hello",
         '{"name": "myproj", "version": "1.0"}', "[1, 2]\n", "<!DOCTYPE html>\n<html>mine</html>",
         "name,score\nalice,1\n", 'a,"b, c"\n1,2\n', "PAR1....", "\x89PNG\r\n\x1a\n....tEXtSoftware\x00Matplotlib"]


@pytest.mark.parametrize("kind", sorted(OWN_KIND))
def test_an_output_replaces_only_its_own_kind_or_an_empty_file(tmp_path, kind):
    from visprof.base.output_paths import refuse_another_kind

    path = tmp_path / "out"
    def encoded(text: str) -> bytes:
        return text.encode("latin-1") if text.startswith("\x89") else text.encode()

    for text in OWN_KIND[kind] + ["", "\n \n"]:
        path.write_bytes(encoded(text))
        refuse_another_kind(path, "--out", kind)  # no error
    for text in OTHER + [OWN_KIND[other][0] for other in OWN_KIND if other != kind]:
        path.write_bytes(encoded(text))
        with pytest.raises(BadInputError, match=r"--out .*out holds (something other than|a visprof|an ncu)"):
            refuse_another_kind(path, "--out", kind)
        assert path.read_bytes() == encoded(text)


def test_a_gzipped_file_is_json_only_if_it_unpacks_to_json(tmp_path):
    """Every gzip stream was taken for a JSON output's own (`--json x.json.gz`): `--json backup.tar.gz`
    replaced the user's archive with a profile."""
    import gzip
    import io
    import tarfile

    from visprof.base.output_paths import refuse_another_kind

    path = tmp_path / "out"
    for own in (b'{"schema": "visprof.profile/1", "model": "resnet18"}',):
        path.write_bytes(gzip.compress(own))
        refuse_another_kind(path, "--json", "profile")  # no error
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        script = b"import torch\n" * 2000
        info = tarfile.TarInfo("train.py")
        info.size = len(script)
        tar.addfile(info, io.BytesIO(script))
    for other in (archive.getvalue(), gzip.compress(b"import torch\n"), b"\x1f\x8b not a gzip stream"):
        path.write_bytes(other)
        with pytest.raises(BadInputError, match="holds something other than a visprof profile result"):
            refuse_another_kind(path, "--json", "profile")
        assert path.read_bytes() == other


def test_the_python_api_writers_refuse_another_kind_too(tmp_path):
    """No command's check runs before these: the writer refuses, and the file stays."""
    from visprof.base.outputs import write_json_summary
    from visprof.report.csv import write_categories_csv
    from visprof.result import ProfileResult

    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    result = ProfileResult.load(REPO / "tests/data/h200-result-vit_base_patch16_224.json")
    with pytest.raises(BadInputError, match="other than a visprof category CSV"):
        write_categories_csv(result, script)
    with pytest.raises(BadInputError, match="other than a visprof sweep summary"):
        write_json_summary(script, "sweep", {})
    assert script.read_text() == "import torch\n"
    write_categories_csv(result, tmp_path / "c.csv")
    write_categories_csv(result, tmp_path / "c.csv")  # its own output again: replaced
    assert (tmp_path / "c.csv").read_text().startswith("model,measurement,")


def test_binary_is_no_csv_on_any_python():
    """Python 3.10's csv reader raises on a NUL byte: every output check over a PNG or a gzip stream had
    been a traceback there (3.11 reads it)."""
    from visprof.base.output_paths import _looks_like_csv

    assert _looks_like_csv(b"a,b\n1,2\n")
    assert not _looks_like_csv(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR,a\n1,2\n")
    assert not _looks_like_csv(b"a,b\x00\n1,2\n")


def test_a_csv_with_line_breaks_inside_quoted_fields_is_a_table():
    """export --failures writes each failure's traceback in a quoted field: read line by line its records
    had other widths, so the export refused to replace its own CSV on a second run."""
    from visprof.base.output_paths import _HEAD_BYTES, _looks_like_csv

    frames = "".join(f'  File ""x.py"", line {n}\n    forward(x)\n' for n in range(4))
    traceback = f'"Traceback (most recent call last):\n{frames}AssertionError: no"'
    table = f"id,model,detail,attempts\n1,test_vit,{traceback},1\n2,resnet18,{traceback},2\n".encode()
    assert _looks_like_csv(table)
    # a head cut inside a record, as the check reads a file's first bytes
    assert _looks_like_csv((table * (_HEAD_BYTES // len(table) + 1))[:_HEAD_BYTES])
    assert not _looks_like_csv(b"from x import a, b\nimport torch\n")
    assert not _looks_like_csv(b"id,model\n1,x,y\n")
