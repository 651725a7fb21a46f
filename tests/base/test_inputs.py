"""Files users hand to visprof (results, category rules): every unreadable one is refused with
one line naming the file and, where it applies, the field; on real files on disk."""
from __future__ import annotations

import gzip
import json

import pytest

from fixtures import mini_cnn
from toy_results import make_result
from visprof.attribution.categories import CategoryTable
from visprof.base.errors import BadInputError
from visprof.result import ProfileResult


@pytest.fixture
def result_dict():
    return make_result(mini_cnn().build()).to_dict()


def _load_error(path) -> str:
    with pytest.raises(BadInputError) as info:
        ProfileResult.load(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


# --- result files ----------------------------------------------------------------------------

def test_a_truncated_result_file_is_refused(tmp_path, result_dict):
    text = json.dumps(result_dict, indent=2)
    path = tmp_path / "r.json"
    path.write_text(text[: len(text) // 2])
    assert "ends in the middle of its JSON (truncated?)" in _load_error(path)


@pytest.mark.parametrize("content, words", [
    (b"", "is empty"),
    (b"  \n\n", "is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is a binary file"),
    ("{\"schema\": \"caf\u00e9\"}".encode("latin-1"), "is not UTF-8 text (byte 0xe9 at offset 15)"),
    (b"[1, 2, 3]", "expected a JSON object at the top level, got a list of 3"),
    (b'"visprof"', "expected a JSON object at the top level, got a string ('visprof')"),
    (b"{\"schema\": \"visprof.profile/1\", ", "truncated"),
    (b"{'schema': 1}", "is not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    (b'{"schema": "visprof.trace/1"}', "not a visprof profile result (schema='visprof.trace/1')"),
    (b'{"schema": "visprof.profile/2"}', "unsupported result schema 'visprof.profile/2'"),
    (b'{"model": {}}', "not a visprof profile result (schema=None)"),
])
def test_unreadable_result_files_are_one_line_naming_the_file(tmp_path, content, words):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    assert words in _load_error(path)


def test_a_missing_file_or_a_folder_is_refused(tmp_path):
    assert "no such file" in _load_error(tmp_path / "nope.json")
    assert "is a directory" in _load_error(tmp_path)


@pytest.mark.parametrize("path, got", [(None, "None"), (3, "int"), (["r.json"], "list")])
def test_what_is_no_path_is_one_line_from_python(path, got):
    """ProfileResult.load(None) had raised pathlib's TypeError; a category file of None the same."""
    with pytest.raises(BadInputError, match=f"^result file: expected a file path, got {got}$"):
        ProfileResult.load(path)
    with pytest.raises(BadInputError, match=f"^category rules file: expected a file path, got {got}$"):
        CategoryTable.from_file(path)


def test_nan_is_refused(tmp_path, result_dict):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result_dict).replace('"busy_ms": 6.125', '"busy_ms": NaN'))
    assert "contains NaN" in _load_error(path)


@pytest.mark.parametrize("edit, field, words", [
    (lambda d: d.pop("categories"), "categories", "missing (every visprof.profile/1 result has it)"),
    (lambda d: d["categories"][1].update(time_ms="1.5"), "categories[1].time_ms", "expected a number, got a string ('1.5')"),
    (lambda d: d["categories"][0].pop("share"), "categories[0].share", "missing"),
    (lambda d: d.update(categories={"attention": 1}), "categories", "expected a list, got an object"),
    (lambda d: d["model"].update(batch_size=True), "model.batch_size", "expected an integer or null, got true"),
    (lambda d: d["timing"]["latency_ms"].update(median=None), "timing.latency_ms.median", "expected a number, got null"),
    (lambda d: d["config"].update(passes="timing"), "config.passes", "expected a list, got a string"),
    (lambda d: d["config"].update(iterations=2.5), "config.iterations", "expected an integer or a string, got a number (2.5)"),
    (lambda d: d["attribution"]["busy_ms"].update({"0": "fast"}), "attribution.busy_ms.0", "expected a number"),
    (lambda d: d.update(model=[]), "model", "expected an object, got a list of 0"),
    (lambda d: d.update(warnings=[1]), "warnings[0]", "expected a string, got an integer (1)"),
    (lambda d: d.update(measurement=None), "measurement", "expected a string, got null"),
    # values of the right type that no run gives: loaded, they were reported ("convolution 501%", "batch -4")
    (lambda d: d["categories"][0].update(share=5.0), "categories[0].share", "5.0 is not a share (0 to 1)"),
    (lambda d: d["model"].update(batch_size=-4), "model.batch_size", "-4 is not a batch size (1 or more)"),
    (lambda d: d["categories"][1].update(time_ms=-1.5), "categories[1].time_ms", "-1.5 is not a time (0 or more)"),
    (lambda d: d["timing"]["latency_ms"].update(p90=-0.1), "timing.latency_ms.p90", "-0.1 is not a time (0 or more)"),
])
def test_a_partly_wrong_result_names_the_field(tmp_path, result_dict, edit, field, words):
    edit(result_dict)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result_dict))
    message = _load_error(path)
    assert f"{path}: {field}: {words}" in message
    with pytest.raises(BadInputError, match="not a valid visprof result: " + field.replace("[", r"\[").replace("]", r"\]")):
        ProfileResult.from_dict(result_dict)


def test_fields_added_within_version_1_may_be_missing_and_unknown_ones_are_ignored(result_dict):
    # A file from an older v1 writer lacks the fields added since; a newer one has extra keys.
    del result_dict["config"]["grad_mode"], result_dict["attribution"]["weight_cast_ms"]
    del result_dict["timing"]["max_memory_reserved_bytes"]
    result_dict["config"]["future_field"] = {"anything": [1]}
    loaded = ProfileResult.from_dict(result_dict)
    assert loaded.config.grad_mode == "no_grad" and loaded.attribution.weight_cast_ms == 0.0
    assert loaded.categories[0].time_ms == result_dict["categories"][0]["time_ms"]


def test_integers_where_numbers_are_expected_load_as_floats(result_dict):
    result_dict["categories"][0]["time_ms"] = 3
    loaded = ProfileResult.from_dict(result_dict)
    assert loaded.categories[0].time_ms == 3.0 and isinstance(loaded.categories[0].time_ms, float)


def test_gzipped_results_round_trip_and_a_damaged_gzip_is_refused(tmp_path):
    result = make_result(mini_cnn().build())
    path = tmp_path / "r.json.gz"
    result.to_json(path)
    assert gzip.decompress(path.read_bytes()).startswith(b"{")
    assert ProfileResult.load(path) == result
    path.write_bytes(path.read_bytes()[:40])
    assert "damaged or truncated gzip file" in _load_error(path)


# --- category rules files --------------------------------------------------------------------

RULES_CASES = [
    ("rules.toml", 'rules = "notalist"\n',
     "rules: expected a list of tables ([[rules]] in TOML), got a string ('notalist')"),
    ("rules.json", "[1, 2]",
     "the top level: expected a table (a JSON object) with categories, patterns and rules, got a list of 2"),
    ("rules.toml", "rules = [1, 2]\n",
     "rules[0]: expected a table with name, category and conditions, got an integer (1)"),
    ("rules.toml", '[[rules]]\nname = "x"\nop = 3\ncategory = "linear"\n',
     "rules[0] ('x').op: expected a string or a non-empty list of strings, got an integer (3)"),
    ("rules.toml", '[[rules]]\nop = "relu"\ncategory = "activation"\n', "rules[0]: missing 'name'"),
    ("rules.toml", '[[rule]]\nname = "x"\nop = "relu"\ncategory = "activation"\n',
     "unknown top-level key(s) ['rule']; valid: version, categories, unattributed, patterns, rules"),
    ("rules.toml", '[[categories]]\nid = "mine"\ncolor = "red"\n', "categories[0].color: expected a colour \"#RRGGBB\", got a string ('red')"),
    ("rules.toml", '[patterns]\nblocks = 5\n', "patterns.blocks: expected a string or a non-empty list of strings, got an integer (5)"),
    ("rules.toml", '[[rules]]\nname = "x"\nop = "relu"\ncategory = "activation"\nattrs = 1\n',
     "rules[0] ('x').attrs: expected a table of attribute = value, got an integer (1)"),
    ("rules.json", '{"rules": [{"name": "x", "op": "relu", "category": "activation"}', "ends in the middle of its JSON (truncated?)"),
    ("rules.toml", "\x00\x01binary", "is a binary file, not text"),
    # a results store where a text file is read (diff s.db e.json said only "a binary file")
    ("rules.toml", "SQLite format 3\x00\x10\x00", "is an SQLite database (a visprof results store?), not a "),
    ("rules.yaml", "rules:\n  - name: x\n", "is not valid TOML"),
]


@pytest.mark.parametrize("name, content, words", RULES_CASES)
def test_bad_category_files_name_the_file_and_the_field_and_change_nothing(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_text(content)
    table = CategoryTable.default()
    before = (list(table.rules), dict(table.categories), dict(table.patterns))
    with pytest.raises(BadInputError) as info:
        table.extend_from_file(path)
    message = str(info.value)
    assert message.startswith(f"category rules file {path}") and words in message and "\n" not in message
    assert (list(table.rules), dict(table.categories), dict(table.patterns)) == before
    with pytest.raises(BadInputError, match="category rules file"):
        CategoryTable.from_file(path)


def test_a_folder_of_rules_is_not_a_missing_file(tmp_path):
    with pytest.raises(BadInputError, match="is a directory, not a file"):
        CategoryTable.default().extend_from_file(tmp_path)


def test_an_empty_toml_rules_file_adds_nothing(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text("# nothing yet\n")
    table = CategoryTable.default()
    assert table.extend_from_file(path) == [] and len(table.rules) == len(CategoryTable.default().rules)


def test_a_file_cut_inside_a_string_names_where_the_string_starts(tmp_path):
    from visprof.base.inputs import load_json_file

    path = tmp_path / "cal.json"
    path.write_text('{"schema": "visprof.calibration/1", "base": "rtx40')
    with pytest.raises(BadInputError) as info:
        load_json_file(path, "calibration file")
    message = str(info.value)
    assert message.endswith("ends in the middle of its JSON (truncated?): Unterminated string starting at line 1 "
                            "column 45"), message


def test_a_json_or_toml_file_with_a_byte_order_mark_is_read(tmp_path):
    """Editors on Windows save UTF-8 with a BOM; json and tomllib refuse it ("Unexpected UTF-8 BOM")."""
    from visprof.base.inputs import load_json_file, load_toml_file

    (tmp_path / "a.json").write_bytes('{"x": 1}'.encode("utf-8-sig"))
    (tmp_path / "a.toml").write_bytes('x = 1\n'.encode("utf-8-sig"))
    assert load_json_file(tmp_path / "a.json", "file") == {"x": 1}
    assert load_toml_file(tmp_path / "a.toml", "file") == {"x": 1}


def test_toml_is_read_by_tomli_where_python_has_no_tomllib(monkeypatch):
    """Python 3.10 (which visprof supports) has no tomllib: every profile stopped on its import, reading
    the category table. There the same reader comes as tomli, a dependency pyproject.toml names for it."""
    import sys
    import types
    from pathlib import Path

    from visprof.base.inputs import toml_reader

    assert toml_reader().loads('a = 1') == {"a": 1}  # this Python's own reader
    fake = types.ModuleType("tomli")
    monkeypatch.setitem(sys.modules, "tomllib", None)  # `import tomllib` raises ModuleNotFoundError, as on 3.10
    monkeypatch.setitem(sys.modules, "tomli", fake)
    assert toml_reader() is fake
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert "\"tomli>=1.1; python_version < '3.11'\"" in pyproject
