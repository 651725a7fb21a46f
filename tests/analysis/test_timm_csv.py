"""timm benchmark CSVs -> reference rows: parsing and validation (pure functions)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from visprof.analysis.timm_csv import (canonical_precision, check_benchmark_csv, parse_benchmark_csv,
                                      parse_benchmark_filename, read_benchmark_csv)
from visprof.base.errors import BadInputError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "timm-benchmarks"
NAME = "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"
HEADER = "model,infer_img_size,infer_samples_per_sec,infer_step_time,infer_batch_size,param_count,infer_gmacs,infer_macts\n"


def parse(body: str, header: str = HEADER, name: str = NAME):
    return parse_benchmark_csv(header + body, source=name, gpu_name="NVIDIA GeForce RTX 4090")


def test_file_name_says_precision_layout_versions_and_gpu():
    assert parse_benchmark_filename(f"/x/{NAME}") == {"mode": "infer", "precision": "amp-fp16", "layout": "nchw",
                                                      "torch": "2.4.0", "cuda": "12.4", "gpu": "rtx4090"}
    assert parse_benchmark_filename("benchmark-infer-fp32-nhwc-pt210-cu121-a100.csv")["precision"] == "fp32"
    assert parse_benchmark_filename("numbers.csv")["gpu"] == "numbers"


@pytest.mark.parametrize("name, precision, gpu", [
    ("amp-bf16-l4.csv", "amp-bf16", "l4"),  # had been amp-fp16 on a GPU called "bf16-l4"
    ("benchmark-infer-amp-bf16-nchw-pt291-cu130-5090.csv", "amp-bf16", "5090"),
    ("amp-fp16-l4.csv", "amp-fp16", "l4"), ("amp-l4.csv", "amp-fp16", "l4"), ("bf16-4090.csv", "amp-bf16", "4090"),
])
def test_amp_followed_by_its_dtype_is_that_dtype(name, precision, gpu):
    parsed = parse_benchmark_filename(name)
    assert (parsed["precision"], parsed["gpu"]) == (precision, gpu)
    assert canonical_precision("amp-fp16") == "fp16" and canonical_precision("bf16") == "bf16"


def test_rows_carry_every_column_and_the_files_facts():
    parsed = parse("resnet50,224,4217.6,242.763,1024,25.56,4.11,11.11\ntest_vit,160,188343.61,5.426,1024,0.37,0.04,0.48\n")
    assert parsed.test_rows_dropped == 1 and parsed.warnings == []
    assert parsed.rows == [{"source": NAME, "gpu_name": "NVIDIA GeForce RTX 4090", "model": "resnet50", "img_size": 224,
                            "batch_size": 1024, "precision": "amp-fp16", "samples_per_s": 4217.6, "step_time_ms": 242.763,
                            "param_count_m": 25.56, "gmacs": 4.11, "macts_m": 11.11,
                            "extra": {"mode": "infer", "layout": "nchw", "torch": "2.4.0", "cuda": "12.4"}}]


def test_thousands_separators_and_optional_columns():
    parsed = parse("eva_giant,560,3.1,,8,\"1,014.45\",,\n")
    row = parsed.rows[0]
    assert row["param_count_m"] == 1014.45 and row["step_time_ms"] is None and row["gmacs"] is None
    minimal = parse("m,224,100.0,64\n", header="model,infer_img_size,infer_samples_per_sec,infer_batch_size\n")
    assert minimal.rows[0]["macts_m"] is None


@pytest.mark.parametrize("body, header, message", [
    ("resnet50,224,fast,1.0,1024,1,1,1\n", HEADER, r"line 2: column 'infer_samples_per_sec' is not a number: 'fast'"),
    ("a,224,10,1,1024,1,1,1\nresnet50,224,-5,1.0,1024,1,1,1\n", HEADER, r"line 3: column 'infer_samples_per_sec' must be > 0"),
    ("resnet50,22.5,10,1,1024,1,1,1\n", HEADER, r"'infer_img_size' must be a whole number"),
    ("resnet50,224,10,100,1024,1,1,1\nresnet50,224,11,100,1024,1,1,1\n", HEADER, r"line 3: resnet50 at 224px is listed twice \(also line 2\)"),
    # a name typed twice in two cases had been imported as two models
    ("efficientvit_m0,224,10,100,1024,1,1,1\nEFFICIENTVIT_M0,224,11,100,1024,1,1,1\n", HEADER,
     r"line 3: EFFICIENTVIT_M0 at 224px is listed twice \(also line 2, as efficientvit_m0\)"),
    ("resnet50,224,10\n", "model,infer_img_size,infer_samples_per_sec\n", r"missing column\(s\) \['infer_batch_size'\]"),
    ("resnet50,224,10,1,1024,1,1,1,9\n", HEADER, r"more values than columns"),
    (",224,10,1,1024,1,1,1\n", HEADER, r"empty model name"),
    ("resnet50,224,,1,1024,1,1,1\n", HEADER, r"'infer_samples_per_sec' is empty"),
    ("test_vit,160,1,1,1,1,1,1\n", HEADER, r"no benchmark rows \(only 1 test_\* rows\)"),
    ("", "", r"empty file"),
    ("resnet50,224,10,1,64\n", "model,train_img_size,train_samples_per_sec,train_step_time,train_batch_size\n",
     r"a training benchmark"),
])
def test_bad_files_fail_on_one_line_naming_file_and_line(body, header, message):
    with pytest.raises(BadInputError, match=message) as info:
        parse(body, header)
    assert NAME in str(info.value) and "\n" not in str(info.value)


def test_precision_must_be_known():
    with pytest.raises(BadInputError, match=r"does not say the precision .*: give it with precision=P \(read_benchmark_csv\(FILE, GPU, precision=P\)\)$"):
        parse("m,224,1,1,1,1,1,1\n", name="mybench-rtx4090.csv")
    parsed = parse_benchmark_csv(HEADER + "m,224,1,1000,1,1,1,1\n", source="mybench.csv", gpu_name="X", precision="amp")
    assert parsed.rows[0]["precision"] == "amp-fp16"
    for typo in ("bogus", "fp-16", "int8"):  # was stored as given, with every row
        with pytest.raises(BadInputError, match=rf"^mybench\.csv: unknown precision '{typo}'; choose from amp, "):
            parse_benchmark_csv(HEADER + "m,224,1,1000,1,1,1,1\n", source="mybench.csv", gpu_name="X", precision=typo)


@pytest.mark.parametrize("body, message", [
    # a short row had read "column 'infer_batch_size' is empty": a column the user's file does not have
    ("resnet10t,224,9000\n", r"line 2: fewer values than columns \(none for 'batch_size'\)$"),
    ("resnet10t,224,,64\n", r"line 2: column 'samples_per_sec' is empty$"),
    ("resnet10t,224,fast,64\n", r"line 2: column 'samples_per_sec' is not a number: 'fast'$"),
])
def test_a_users_table_is_told_of_its_own_columns(body, message):
    with pytest.raises(BadInputError, match=message):
        parse_benchmark_csv("model,img_size,samples_per_sec,batch_size\n" + body, source="mine.csv", gpu_name="X",
                            precision="amp")


def test_a_users_own_table_may_drop_the_infer_prefix(tmp_path):
    """A user's table (issue 25: "timm CSVs, or a user's own table") with img_size, samples_per_sec,
    batch_size: the same rows as timm's spelling gives."""
    timm_spelling = parse("resnet50,224,4217.6,242.763,1024,25.56,4.11,11.11\n")
    bare = "model, img_size, samples_per_sec, step_time, batch_size, param_count, gmacs, macts\n"
    own = parse("resnet50,224,4217.6,242.763,1024,25.56,4.11,11.11\n", header=bare)
    assert own.rows == timm_spelling.rows
    check_benchmark_csv(_written(tmp_path / "mine.csv", "model,img_size,samples_per_sec,batch_size\nm,224,1000,1\n"))
    # both spellings: timm's column is read, the bare one is left as an unknown column
    both = parse("m,224,1000,1,9\n", header="model,infer_img_size,infer_samples_per_sec,infer_batch_size,batch_size\n")
    assert both.rows[0]["batch_size"] == 1
    # the header quoted is the file's own: it had read "header: model, infer_img_size, infer_samples_per_sec"
    with pytest.raises(BadInputError, match=r"missing column\(s\) \['infer_batch_size'\], or without the infer_ prefix "
                                            r"\(header: model, img_size, samples_per_sec\)$"):
        parse("m,224,1000\n", header="model,img_size,samples_per_sec\n")
    with pytest.raises(BadInputError, match=r"\(header: model, img_size, samples_per_sec\)$"):
        check_benchmark_csv(_written(tmp_path / "nob.csv", "model,img_size,samples_per_sec\nm,224,1000\n"))


def test_step_time_that_disagrees_with_throughput_is_a_warning():
    parsed = parse("resnet50,224,4217.6,100.0,1024,25.56,4.11,11.11\n")
    assert len(parsed.rows) == 1 and "disagrees" in parsed.warnings[0]


def test_unreadable_files(tmp_path):
    with pytest.raises(BadInputError, match="no such file"):
        read_benchmark_csv(tmp_path / "missing.csv", "X")
    with pytest.raises(BadInputError, match="is a directory"):
        read_benchmark_csv(tmp_path, "X")
    binary = tmp_path / NAME
    binary.write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(BadInputError, match="not a text file"):
        read_benchmark_csv(binary, "X")


def test_columns_are_checked_before_the_file_name_is_read_for_a_precision():
    with pytest.raises(BadInputError, match=r"^notes\.txt: not a timm inference benchmark CSV: missing column"):
        parse_benchmark_csv("hello\n", source="notes.txt", gpu_name="X")  # its name says no precision either


@pytest.mark.parametrize("content, message", [
    (b"SQLite format 3\x00" + bytes(4080), r"an SQLite file \(a results store\?\), expected a timm benchmark CSV"),
    (b"model,infer_img_size\x00\n", "not a text file"),  # NULs decode as UTF-8
    (b'{"schema": "visprof.result/1"}\n', r"a JSON file, not a timm inference benchmark CSV"),
    (b"", "empty file"),
    (b"model;infer_img_size;infer_samples_per_sec\nresnet50;224;1000\n", "its columns are separated by semicolons; "
                                                                          "timm's CSVs \\(and visprof\\) use commas"),
    (b"model\tinfer_img_size\tinfer_samples_per_sec\nresnet50\t224\t1000\n", "its columns are separated by tabs"),
])
def test_a_file_of_another_kind_is_named_as_such(tmp_path, content, message):
    path = tmp_path / "pair.db"
    path.write_bytes(content)
    for read in (check_benchmark_csv, lambda p: read_benchmark_csv(p, "X", precision="amp")):
        with pytest.raises(BadInputError, match=rf"^{re.escape(str(path))}: {message}"):
            read(path)
    check_benchmark_csv(_written(tmp_path / "ok.csv", HEADER + "m,224,1,1000,1,1,1,1\n"))


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/data/timm-benchmarks is not beside this checkout")
def test_the_published_csvs_parse_whole():
    parsed = read_benchmark_csv(SHARED / NAME, "NVIDIA GeForce RTX 4090")
    assert len(parsed.rows) == 1441 and parsed.test_rows_dropped == 3 and parsed.warnings == []
    vit = next(r for r in parsed.rows if r["model"] == "vit_base_patch16_224")
    assert vit["samples_per_s"] == 2787.15 and vit["batch_size"] == 1024 and vit["gmacs"] == 17.58


def test_a_precision_that_contradicts_the_file_name_is_refused():
    """--precision fp32 over ...-infer-amp-...csv was taken: 1,611 amp rows stored as fp32, and a
    second copy under each other precision given."""
    name = "benchmark-infer-amp-nchw-pt291-cu128-4090.csv"
    with pytest.raises(BadInputError, match=rf"^{re.escape(name)}: its name says amp-fp16, but precision='fp32' was "
                                            r"given for it; leave precision out"):
        parse_benchmark_csv(HEADER + "m,224,1,1000,1,1,1,1\n", source=name, gpu_name="X", precision="fp32")
    same = parse_benchmark_csv(HEADER + "m,224,1,1000,1,1,1,1\n", source=name, gpu_name="X", precision="amp")
    assert same.rows[0]["precision"] == "amp-fp16"


@pytest.mark.parametrize("text, value", [("1,014.45", 1014.45), ("12,345,678", 12345678.0), ("3,000", 3000.0)])
def test_thousands_separators_are_read(text, value):
    parsed = parse_benchmark_csv(HEADER + f'm,224,"{text}",1000,1,1,1,1\n', source="mybench.csv", gpu_name="X",
                                 precision="amp")
    assert parsed.rows[0]["samples_per_s"] == value


@pytest.mark.parametrize("text", ["3000,5", "1.014,45", "1,01", "12,3456"])
def test_a_decimal_comma_is_refused_not_read_as_a_separator(text):
    """"3000,5" (a European decimal comma) was read as 30005, "1.014,45" as 1.01445."""
    with pytest.raises(BadInputError, match=rf"is not a number: '{re.escape(text)}' \(a decimal comma\?"):
        parse_benchmark_csv(HEADER + f'm,224,"{text}",1000,1,1,1,1\n', source="mybench.csv", gpu_name="X",
                            precision="amp")
