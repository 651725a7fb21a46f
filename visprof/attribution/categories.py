"""The operator taxonomy: categories, and the ordered rules that sort ops and kernels into them.

The taxonomy is data (``visprof/data/categories.toml``), not code: a ``CategoryTable`` holds
the categories and an ordered list of ``Rule``s, and the first rule whose conditions all hold
wins. Users extend it with ``table.add_rule(...)`` or ``table.extend_from_file(path)``
(TOML or JSON of the same shape as the default file). docs/taxonomy.md explains the rules.

Two entry points:

* ``classify_op(op_name, module_classes, attrs)``: for an aten op, given the class names of
  the modules it ran in (innermost first). Capture calls it online for every op, so results
  are cached by (op name, module classes, the attrs that rules look at). A backward op no rule
  names gets its forward op's category (``convolution_backward`` -> ``convolution``).
* ``classify_kernel(kernel_name, kind)``: for a row that has no op (external id 0, e.g. a
  Triton kernel from torch.compile), and first for memcpy/memset rows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from visprof.result import CATEGORIES
from visprof.attribution.category_file import (REGEX_FIELDS, RULE_FIELDS, UNATTRIBUTED, check_table_mapping,
                                               file_error, read_mapping)
from visprof.native.records import KIND_CPU_OP, KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET

# Stable category ids, in report order (part of the result schema). The default table must declare exactly these.
OTHER = "other"

DEFAULT_TABLE_PATH = Path(__file__).resolve().parents[1] / "data" / "categories.toml"

KIND_NAMES = {
    KIND_KERNEL: "kernel",
    KIND_MEMCPY: "memcpy",
    KIND_MEMSET: "memset",
    KIND_CPU_OP: "cpu_op",
}

_PATTERN_REF = re.compile(r"\$\{(\w+)\}")
# A backward op's name: its forward op's packet, "_backward" (or "_double_backward"), maybe more
# ("_data", "_elemt", "_overrideable"), then the overload: aten.convolution_backward.default.
_BACKWARD_OP = re.compile(r"^(\w+\.\w+?)(?:_double)?_backward\w*(\.\w+)$")
# The rule name of a backward op classified as its forward op: says which rule and why.
BACKWARD_RULE_PREFIX = "backward-as-forward:"


@dataclass(frozen=True)
class Category:
    id: str
    label: str
    color: str  # "#RRGGBB", for the Chrome trace and HTML reports
    cname: str  # reserved colour name of the Chrome trace viewer
    subcategories: tuple[str, ...] = ()
    description: str = ""

    @property
    def argb(self) -> int:
        """Opaque ARGB colour, as NVTX event attributes take it."""
        return 0xFF000000 | int(self.color.lstrip("#"), 16)


@dataclass(frozen=True)
class Classification:
    category: str
    subcategory: str | None = None
    rule: str = ""  # name of the rule that matched; "" when none did

    @property
    def key(self) -> str:
        """"category/subcategory", or "category" without a sub-category."""
        return f"{self.category}/{self.subcategory}" if self.subcategory else self.category


UNMATCHED_OP = Classification(OTHER, None, "")
UNATTRIBUTED_ROW = Classification(UNATTRIBUTED, None, "")


# --- derived op attributes ---------------------------------------------------------------
def conv_kind(attrs: Mapping[str, Any]) -> str | None:
    """"depthwise", "pointwise" or "dense" from a convolution's groups/in_channels/kernel_size.

    Grouped convolutions with 1 < groups < in_channels (ResNeXt) count as dense. None when
    capture recorded too little to tell.
    """
    groups, in_channels = attrs.get("groups"), attrs.get("in_channels")
    if groups is None or in_channels is None:
        return None
    if groups > 1 and groups == in_channels:
        return "depthwise"
    kernel_size = attrs.get("kernel_size")
    if kernel_size is None:
        return None if groups == 1 else "dense"
    if groups == 1 and all(k == 1 for k in kernel_size):
        return "pointwise"
    return "dense"


def derived_attrs(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The attributes rules can match: the op's own, plus ``conv_kind`` where derivable."""
    out = dict(attrs or {})
    if "conv_kind" not in out:
        kind = conv_kind(out)
        if kind is not None:
            out["conv_kind"] = kind
    return out


def forward_op_name(op_name: str) -> str | None:
    """The forward op a backward op differentiates (``aten.convolution_backward.default`` ->
    ``aten.convolution.default``, ``aten._softmax_backward_data.out`` -> ``aten._softmax.out``);
    None for an op whose name is not a backward's."""
    match = _BACKWARD_OP.match(op_name)
    return match.group(1) + match.group(2) if match else None


def _freeze(value: Any) -> Any:
    """A hashable, comparable form of an attribute value (lists from JSON become tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


# --- rules -------------------------------------------------------------------------------
def expand_patterns(regex: str | Sequence[str], patterns: Mapping[str, Any]) -> str:
    """Join a list of alternatives and substitute ``${name}`` references to named patterns."""
    if not isinstance(regex, str):
        regex = "|".join(f"(?:{expand_patterns(r, patterns)})" for r in regex)

    def substitute(match: re.Match) -> str:
        name = match.group(1)
        if name not in patterns:
            raise KeyError(f"unknown pattern ${{{name}}}; known: {sorted(patterns)}")
        return f"(?:{expand_patterns(patterns[name], patterns)})"

    return _PATTERN_REF.sub(substitute, regex)


@dataclass(frozen=True)
class Rule:
    """One row of the taxonomy. All given conditions must hold; regexes use ``re.search``.

    Op rules (``op``, ``module``, ``within``, ``attrs``) classify aten ops. Row rules
    (``kernel``, ``kind``) classify kernels without an op and memcpy/memset rows; a rule
    is one or the other, since an op is classified before any of its kernels exists.
    """

    name: str
    category: str
    subcategory: str | None = None
    op: str | None = None
    module: str | None = None
    within: str | None = None
    kernel: str | None = None
    kind: str | None = None  # "kernel" | "memcpy" | "memset" | "cpu_op"
    attrs: tuple[tuple[str, Any], ...] = ()
    note: str = ""
    _compiled: dict[str, re.Pattern] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attrs", tuple(sorted((k, _freeze(v)) for k, v in dict(self.attrs).items())))
        is_row_rule = self.kernel is not None or self.kind is not None
        is_op_rule = any(x is not None for x in (self.op, self.module, self.within)) or self.attrs
        if is_row_rule and is_op_rule:
            raise ValueError(f"rule {self.name!r} mixes kernel/kind with op/module/within/attrs conditions")
        if not (is_row_rule or is_op_rule):
            raise ValueError(f"rule {self.name!r} has no condition")
        if self.kind is not None and self.kind not in KIND_NAMES.values():
            raise ValueError(f"rule {self.name!r}: kind must be one of {sorted(KIND_NAMES.values())}")
        for name in REGEX_FIELDS:
            regex = getattr(self, name)
            if regex is not None:
                try:
                    self._compiled[name] = re.compile(regex)
                except re.error as exc:
                    raise ValueError(f"rule {self.name!r}: bad {name} regex {regex!r}: {exc}") from None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], patterns: Mapping[str, Any] | None = None) -> "Rule":
        """A rule from a TOML/JSON table; regex lists are joined and ``${name}`` expanded."""
        patterns = patterns or {}
        unknown = set(data) - RULE_FIELDS
        if unknown:
            raise ValueError(f"rule {data.get('name')!r}: unknown keys {sorted(unknown)}; valid: {sorted(RULE_FIELDS)}")
        fields = dict(data)
        for name in REGEX_FIELDS:
            if fields.get(name) is not None:
                try:
                    fields[name] = expand_patterns(fields[name], patterns)
                except KeyError as exc:  # an unknown ${pattern}: said as the rule's, as other rule errors are
                    raise ValueError(f"rule {data.get('name')!r}.{name}: {exc.args[0]}") from None
        fields["attrs"] = tuple(dict(fields.get("attrs") or {}).items())
        return cls(**fields)

    @property
    def is_row_rule(self) -> bool:
        return self.kernel is not None or self.kind is not None

    @property
    def attr_keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.attrs)

    def matches_op(self, op_name: str, module_classes: tuple[str, ...], attrs: Mapping[str, Any]) -> bool:
        if self.is_row_rule:
            return False
        c = self._compiled
        if "op" in c and not c["op"].search(op_name):
            return False
        if "module" in c and not (module_classes and c["module"].search(module_classes[0])):
            return False
        if "within" in c and not any(c["within"].search(m) for m in module_classes):
            return False
        return all(_freeze(attrs.get(k)) == v for k, v in self.attrs)

    def matches_row(self, kernel_name: str, kind: str | None) -> bool:
        if not self.is_row_rule:
            return False
        if self.kind is not None and self.kind != kind:
            return False
        return "kernel" not in self._compiled or bool(self._compiled["kernel"].search(kernel_name))

    def classification(self) -> Classification:
        return Classification(self.category, self.subcategory, self.name)


# --- the table ---------------------------------------------------------------------------
def _category_from_mapping(data: Mapping[str, Any]) -> Category:
    return Category(
        id=data["id"],
        label=data.get("label", data["id"]),
        color=data.get("color", "#7D7D7D"),
        cname=data.get("cname", "generic_work"),
        subcategories=tuple(data.get("subcategories", ())),
        description=data.get("description", ""),
    )


class CategoryTable:
    """Categories plus ordered rules; the first matching rule classifies an op or a row."""

    def __init__(
        self,
        categories: Iterable[Category],
        rules: Iterable[Rule] = (),
        patterns: Mapping[str, Any] | None = None,
        unattributed: Category | None = None,
    ) -> None:
        self.categories: dict[str, Category] = {c.id: c for c in categories}
        self.unattributed = unattributed or Category(UNATTRIBUTED, UNATTRIBUTED, "#000000", "black")
        self.patterns: dict[str, Any] = dict(patterns or {})
        self._rules: list[Rule] = []
        for rule in rules:
            self._insert(rule, front=False)
        self._invalidate()

    # construction ---------------------------------------------------------------------
    @classmethod
    def default(cls) -> "CategoryTable":
        """A fresh copy of the default table (safe to extend; the file is parsed once)."""
        return cls.from_mapping(_default_mapping())

    def copy(self) -> "CategoryTable":
        """An independent table with the same categories, rules and patterns: extending it leaves
        this one as it is (rules and categories are immutable, so they are shared)."""
        return CategoryTable(self.categories.values(), self._rules, self.patterns, self.unattributed)

    @classmethod
    def from_file(cls, path: str | Path) -> "CategoryTable":
        """A complete table from a file of the default file's shape (errors as in ``extend_from_file``)."""
        data = read_mapping(path)
        try:
            return cls.from_mapping(data)
        except (ValueError, KeyError, TypeError, re.error) as exc:
            raise file_error(path, exc) from exc

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "CategoryTable":
        check_table_mapping(data)
        table = cls([_category_from_mapping(c) for c in data.get("categories", ())])
        if "unattributed" in data:
            table.unattributed = _category_from_mapping(data["unattributed"])
        table.extend(data, front=False)
        return table

    def extend(self, data: Mapping[str, Any], front: bool = True) -> list[Rule]:
        """Add the categories, patterns and rules of a mapping shaped like the default file.

        With ``front=True`` (the default) the new rules go before the existing ones, in their
        own order, so they override the defaults. New categories are appended.
        """
        # Everything is built and checked before the table changes: a bad mapping leaves it as it was.
        check_table_mapping(data)
        categories = {c["id"]: _category_from_mapping(c) for c in data.get("categories", ())
                      if c["id"] not in self.categories}
        patterns = {**self.patterns, **data.get("patterns", {})}
        rules = [Rule.from_mapping(r, patterns) for r in data.get("rules", ())]
        known = {**self.categories, **categories}
        for rule in rules:
            if rule.category not in known:
                raise ValueError(f"rule {rule.name!r}: unknown category {rule.category!r}; known: {list(known)}")
        self.categories.update(categories)
        self.patterns = patterns
        for rule in reversed(rules) if front else rules:
            self._insert(rule, front=front)
        self._invalidate()
        return rules

    def extend_from_file(self, path: str | Path, front: bool = True) -> list[Rule]:
        """Add rules (and patterns/categories) from a TOML or JSON file; see ``extend``.

        A file that cannot be read, is not a table of the default file's shape, or describes
        a bad rule raises BadInputError naming the file and the field, and leaves the table
        unchanged."""
        data = read_mapping(path)
        try:
            return self.extend(data, front=front)
        except (ValueError, KeyError, TypeError, re.error) as exc:
            raise file_error(path, exc) from exc

    def add_rule(self, rule: Rule | None = None, *, front: bool = True, **fields: Any) -> Rule:
        """Add one rule, given as a ``Rule`` or as its fields (``${pattern}`` refs allowed).

        ``front=True`` puts it before every existing rule, so it overrides them.
        """
        if rule is None:
            fields.setdefault("name", f"user-{len(self._rules)}")
            rule = Rule.from_mapping(fields, self.patterns)
        elif fields:
            raise TypeError("pass either a Rule or its fields, not both")
        self._insert(rule, front=front)
        self._invalidate()
        return rule

    def _insert(self, rule: Rule, front: bool) -> None:
        if rule.category not in self.categories:
            raise ValueError(f"rule {rule.name!r}: unknown category {rule.category!r}; known: {list(self.categories)}")
        if front:
            self._rules.insert(0, rule)
        else:
            self._rules.append(rule)

    def _invalidate(self) -> None:
        self._op_rules = [r for r in self._rules if not r.is_row_rule]
        self._row_rules = [r for r in self._rules if r.is_row_rule]
        # Only attributes some rule looks at go into the cache key: raw attrs carry shapes,
        # which would give every layer its own cache entry.
        self._attr_keys = tuple(sorted({k for r in self._op_rules for k in r.attr_keys}))
        self._op_cache: dict[tuple, Classification] = {}
        self._row_cache: dict[tuple[str, str | None], Classification | None] = {}

    # queries --------------------------------------------------------------------------
    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(self._rules)

    def category(self, category_id: str) -> Category:
        """Display data (label, colours) of a category, ``UNATTRIBUTED`` included."""
        if category_id == UNATTRIBUTED:
            return self.unattributed
        return self.categories[category_id]

    def report_order(self) -> list[str]:
        return [*self.categories, UNATTRIBUTED]

    def sort_key(self, category: str, subcategory: str | None) -> tuple[int, int, str]:
        """Categories in table order; declared sub-categories in order, then others, None first."""
        order = self.report_order()
        cat_pos = order.index(category) if category in order else len(order)
        subs = self.categories[category].subcategories if category in self.categories else ()
        if subcategory is None:
            sub_pos = -1
        else:
            sub_pos = subs.index(subcategory) if subcategory in subs else len(subs)
        return (cat_pos, sub_pos, subcategory or "")

    def classify_op(
        self,
        op_name: str,
        module_classes: Sequence[str] = (),
        attrs: Mapping[str, Any] | None = None,
    ) -> Classification:
        """Classify an aten op run inside ``module_classes`` (innermost first).

        Never None: an op no rule matches is ``other``, which the report lists by name. A backward op
        that no rule matches is classified as its forward op (``forward_op_name``).
        """
        classes = module_classes if isinstance(module_classes, tuple) else tuple(module_classes)
        derived = derived_attrs(attrs) if attrs and self._attr_keys else {}
        key = (op_name, classes, tuple(_freeze(derived.get(k)) for k in self._attr_keys))
        hit = self._op_cache.get(key)
        if hit is None:
            hit = self._first_match(op_name, classes, derived) or self._as_forward_op(op_name, classes, derived)
            self._op_cache[key] = hit
        return hit

    def _first_match(self, op_name: str, classes: tuple[str, ...], attrs: Mapping[str, Any]) -> Classification | None:
        return next((r.classification() for r in self._op_rules if r.matches_op(op_name, classes, attrs)), None)

    def _as_forward_op(self, op_name: str, classes: tuple[str, ...], attrs: Mapping[str, Any]) -> Classification:
        """A backward op that no rule names belongs to its forward op's category: a training step's
        convolution_backward is convolution time (its attrs give the same sub-kind), not "other".
        One general rule instead of a rule per backward op; a rule naming the backward op wins."""
        forward = forward_op_name(op_name)
        found = self._first_match(forward, classes, attrs) if forward else None
        if found is None:
            return UNMATCHED_OP
        return Classification(found.category, found.subcategory, BACKWARD_RULE_PREFIX + found.rule)

    def classify_kernel(self, kernel_name: str, kind: str | int | None = None) -> Classification | None:
        """Classify a row by its kernel name (and kind); None when no row rule matches."""
        if isinstance(kind, int):
            kind = KIND_NAMES.get(kind)
        key = (kernel_name, kind)
        if key not in self._row_cache:
            self._row_cache[key] = next(
                (r.classification() for r in self._row_rules if r.matches_row(kernel_name, kind)), None
            )
        return self._row_cache[key]

    def cache_info(self) -> dict[str, int]:
        """Number of cached op and row classifications (one per distinct key seen)."""
        return {"op_entries": len(self._op_cache), "row_entries": len(self._row_cache)}

    def __repr__(self) -> str:
        return f"CategoryTable({len(self.categories)} categories, {len(self._rules)} rules)"


@lru_cache(maxsize=1)
def _default_mapping() -> dict[str, Any]:
    data = read_mapping(DEFAULT_TABLE_PATH)
    ids = tuple(c["id"] for c in data["categories"])
    if ids != CATEGORIES:
        raise RuntimeError(f"{DEFAULT_TABLE_PATH} declares categories {ids}, expected {CATEGORIES}")
    return data


def default_table() -> CategoryTable:
    """The default taxonomy (a fresh, extensible copy)."""
    return CategoryTable.default()


def table_or_default(table: Any) -> CategoryTable:
    """A caller's ``table=`` argument: a CategoryTable, or None for the default taxonomy. Anything else
    is refused in one line (a path given here failed deep inside, on a str's missing attribute)."""
    if table is None:
        return default_table()
    if not isinstance(table, CategoryTable):
        from visprof.base.errors import BadInputError

        # trace() and attribute() take no category_file=: the hint names what every entry takes
        hint = (f"; a rules file is table=visprof.CategoryTable.from_file({str(table)!r}) (profile() also takes "
                "category_file=...)") if isinstance(table, (str, Path)) else ""
        raise BadInputError(f"table must be a CategoryTable (or None), not {type(table).__name__}{hint}")
    return table
