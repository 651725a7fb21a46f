"""A category rules file (the default ``visprof/data/categories.toml``, or a user's ``--categories``
file): read as a mapping, and its shape checked field by field before any rule is built, so a
typo is one line naming the field (``rules[2] ('my-rule').op: expected a string ...``) rather
than a rule that silently never applies. ``visprof.attribution.categories`` builds the table.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

__all__ = ["REGEX_FIELDS", "RESERVED_IDS", "RULE_FIELDS", "TOP_LEVEL_KEYS", "UNATTRIBUTED", "check_table_mapping",
           "file_error", "read_mapping"]

# Not a category a rule can name: a kernel with no op that no kernel rule matched.
UNATTRIBUTED = "unattributed"
# A rule's conditions that are regexes (or lists of them), and every key a rule may have.
REGEX_FIELDS = ("op", "module", "within", "kernel")
RULE_FIELDS = {"name", "category", "subcategory", "kind", "attrs", "note", *REGEX_FIELDS}

# Top-level keys a rules file may have; anything else is most likely a typo ("rule" for
# "rules") whose rules would silently not apply.
TOP_LEVEL_KEYS = ("version", "categories", "unattributed", "patterns", "rules")
# Rows every breakdown has: time no rule claimed (its look is the file's "unattributed" table),
# and the sum of all rows.
RESERVED_IDS = (UNATTRIBUTED, "total")
_CATEGORY_FIELDS = ("id", "label", "color", "cname", "subcategories", "description")
_COLOR = re.compile(r"^#[0-9A-Fa-f]{6}$")


def check_table_mapping(data: Any) -> None:
    """ValueError naming the first field of ``data`` that does not have the shape of the
    default file (docs/taxonomy.md), e.g. ``rules[2] ('my-rule').op: expected a string or a
    list of strings, got an integer (3)``. Meaning (known categories, valid regexes) is
    checked later, when the rules are built."""
    from visprof.base.inputs import describe_value

    def fail(where: str, expected: str, value: Any) -> None:
        raise ValueError(f"{where}: expected {expected}, got {describe_value(value)}")

    if not isinstance(data, Mapping):
        fail("the top level", "a table (a JSON object) with categories, patterns and rules", data)
    unknown = sorted(set(data) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise ValueError(f"unknown top-level key(s) {unknown}; valid: {', '.join(TOP_LEVEL_KEYS)}")
    if "version" in data and (not isinstance(data["version"], int) or isinstance(data["version"], bool)):
        fail("version", "an integer", data["version"])

    def regex_like(where: str, value: Any) -> None:
        if isinstance(value, str):
            return
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return
        fail(where, "a string or a non-empty list of strings", value)

    def category(where: str, item: Any) -> None:
        if not isinstance(item, Mapping):
            fail(where, "a table", item)
        extra = sorted(set(item) - set(_CATEGORY_FIELDS))
        if extra:
            raise ValueError(f"{where}: unknown key(s) {extra}; valid: {', '.join(_CATEGORY_FIELDS)}")
        if "id" not in item:
            raise ValueError(f"{where}: missing 'id'")
        for key in ("id", "label", "cname", "description"):
            if key in item and not isinstance(item[key], str):
                fail(f"{where}.{key}", "a string", item[key])
        if "color" in item and not (isinstance(item["color"], str) and _COLOR.match(item["color"])):
            fail(f"{where}.color", 'a colour "#RRGGBB"', item["color"])
        subs = item.get("subcategories", [])
        if not isinstance(subs, list) or not all(isinstance(x, str) for x in subs):
            fail(f"{where}.subcategories", "a list of strings", subs)

    categories = data.get("categories", [])
    if not isinstance(categories, list):
        fail("categories", "a list of tables ([[categories]] in TOML)", categories)
    for i, item in enumerate(categories):
        category(f"categories[{i}]", item)
        if item["id"] in RESERVED_IDS:  # a report row of its own: a second one contradicted it
            raise ValueError(f"categories[{i}].id: {item['id']!r} is the name of the report's {item['id']} row; "
                             "give the category another id")
    if "unattributed" in data:
        category("unattributed", data["unattributed"])

    patterns = data.get("patterns", {})
    if not isinstance(patterns, Mapping):
        fail("patterns", "a table of named regexes", patterns)
    for name, value in patterns.items():
        regex_like(f"patterns.{name}", value)

    rules = data.get("rules", [])
    if not isinstance(rules, list):
        fail("rules", "a list of tables ([[rules]] in TOML)", rules)
    for i, rule in enumerate(rules):
        where = f"rules[{i}]"
        if not isinstance(rule, Mapping):
            fail(where, "a table with name, category and conditions", rule)
        if isinstance(rule.get("name"), str):
            where += f" ({rule['name']!r})"
        extra = sorted(set(rule) - RULE_FIELDS)
        if extra:
            raise ValueError(f"{where}: unknown key(s) {extra}; valid: {', '.join(sorted(RULE_FIELDS))}")
        for key in ("name", "category"):
            if key not in rule:
                raise ValueError(f"{where}: missing {key!r}")
        for key in ("name", "category", "kind", "note"):
            if key in rule and not isinstance(rule[key], str):
                fail(f"{where}.{key}", "a string", rule[key])
        if rule.get("subcategory") is not None and not isinstance(rule["subcategory"], str):
            fail(f"{where}.subcategory", "a string", rule["subcategory"])
        for key in REGEX_FIELDS:
            if rule.get(key) is not None:
                regex_like(f"{where}.{key}", rule[key])
        if "attrs" in rule and not isinstance(rule["attrs"], Mapping):
            fail(f"{where}.attrs", "a table of attribute = value", rule["attrs"])


def read_mapping(path: str | Path) -> dict[str, Any]:
    """A rules file as a mapping (JSON for *.json, else TOML); BadInputError naming the file
    when it cannot be read or parsed."""
    from visprof.base.inputs import input_path, load_json_file, load_toml_file

    path = input_path(path, "category rules file")
    if path.suffix == ".json":
        return load_json_file(path, "category rules file")
    return load_toml_file(path, "category rules file", hint="rules files are TOML, or JSON named *.json")


def file_error(path: str | Path, exc: BaseException) -> Exception:
    from visprof.base.errors import BadInputError

    # str(KeyError) is the repr of its argument; the message itself reads better.
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    if not isinstance(exc, ValueError):  # TypeError, re.error: say what kind of problem
        message = f"{type(exc).__name__}: {message}"
    return BadInputError(f"category rules file {path}: {message}")
