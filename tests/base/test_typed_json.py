"""visprof.base.typed_json: parsed JSON into annotated dataclasses, every field checked."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from visprof.base.errors import BadInputError
from visprof.base.typed_json import DataclassDecoder, DocumentError


@dataclass
class Point:
    x: float
    y: float
    label: str | None = None


@dataclass
class Shape:
    name: str
    points: list[Point]
    tags: dict[str, int] = field(default_factory=dict)
    weights: list[float] = field(default_factory=list)
    children: list["Shape"] = field(default_factory=list)
    extra: Any = None
    note: str = ""


@dataclass
class Reading:
    """Fields of ``X | None`` and plain fields, which the decoder takes without a call where the value
    already has its JSON type: the checks a call made must hold there too."""
    value: float | None = None
    count: int | None = None
    flag: bool = False
    at: Point | None = None
    series: list[float] | None = None
    key: int | str = 0


def test_optional_and_plain_fields_convert_and_refuse_as_the_checker_says():
    decode = DataclassDecoder().decode
    reading = decode(Reading, {"value": 3, "count": None, "flag": True, "at": {"x": 1, "y": 2}, "series": [1, 2.5],
                               "key": "k"})
    assert reading == Reading(3.0, None, True, Point(1.0, 2.0), [1.0, 2.5], "k")
    assert type(reading.value) is float and type(reading.series[0]) is float  # ints made floats
    assert decode(Reading, {"value": None, "at": None, "series": None}) == Reading()
    for doc, message in [({"value": True}, "value: expected a number or null, got"),
                         ({"value": "1.5"}, "value: expected a number or null, got a string"),
                         ({"count": 1.5}, "count: expected an integer or null, got"),
                         ({"count": False}, "count: expected an integer or null, got"),
                         ({"flag": 1}, "flag: expected true or false, got"),
                         ({"flag": None}, "flag: expected true or false, got"),
                         ({"at": [1, 2]}, "at: expected an object or null, got"),
                         ({"at": {"x": 1}}, "at.y: missing"),
                         ({"series": [1, None]}, "series[1]: expected a number, got"),
                         ({"key": None}, "key: expected an integer or a string, got")]:
        with pytest.raises(DocumentError) as caught:
            decode(Reading, doc)
        assert str(caught.value).startswith(message), (doc, str(caught.value))


def test_a_document_decodes_into_its_dataclasses():
    doc = {"name": "tri", "points": [{"x": 0, "y": 1.5}, {"x": 2, "y": 3, "label": "c"}], "tags": {"a": 1},
           "weights": [1, 2.5], "children": [{"name": "leaf", "points": []}], "extra": {"free": [1]}, "unknown": 7}
    shape = DataclassDecoder().decode(Shape, doc)
    assert shape == Shape("tri", [Point(0.0, 1.5), Point(2.0, 3.0, "c")], {"a": 1}, [1.0, 2.5],
                          [Shape("leaf", [])], {"free": [1]})
    assert isinstance(shape.points[0].x, float) and isinstance(shape.weights[0], float)  # ints made floats


@pytest.mark.parametrize("doc, message", [
    ({"name": "t", "points": [{"x": 0, "y": "1"}]}, "points[0].y: expected a number, got a string"),
    ({"name": "t", "points": [{"x": True, "y": 1}]}, "points[0].x: expected a number, got"),
    ({"name": "t", "points": {}}, "points: expected a list, got"),
    ({"name": "t", "points": [], "tags": {"a": 1.5}}, "tags.a: expected an integer, got"),
    ({"name": "t", "points": [], "weights": [1, "2"]}, "weights[1]: expected a number, got"),
    ({"name": "t", "points": [], "children": [{"name": 3, "points": []}]}, "children[0].name: expected a string, got"),
    ({"name": "t", "points": [{"x": 0, "y": 1, "label": 5}]}, "points[0].label: expected a string or null, got"),
    ({"name": "t"}, "points: missing"),
    ([1, 2], "the document: expected an object, got"),
])
def test_a_field_that_does_not_fit_is_named_by_its_path(doc, message):
    with pytest.raises(DocumentError) as caught:
        DataclassDecoder().decode(Shape, doc)
    assert str(caught.value).startswith(message)


def test_required_fields_are_listed_per_class_and_say_why():
    decoder = DataclassDecoder({"Shape": ("note",)}, missing_note=" (every shape has it)")
    with pytest.raises(DocumentError, match=r"^note: missing \(every shape has it\)$"):
        decoder.decode(Shape, {"name": "t", "points": []})
    assert DataclassDecoder().decode(Shape, {"name": "t", "points": []}).note == ""  # a default otherwise


def test_a_document_error_becomes_a_user_error():
    assert isinstance(DocumentError("x").as_user_error("bad file: x"), BadInputError)


def test_annotations_are_resolved_once_per_class_not_per_decoded_object(monkeypatch):
    # Resolving the annotation strings per object made loading a 2,179-result store take minutes.
    import typing

    from fixtures import mini_cnn
    from toy_results import make_result
    from visprof.result import ProfileResult

    result_dict = make_result(mini_cnn().build()).to_dict()
    calls = []
    real = typing.get_type_hints
    monkeypatch.setattr(typing, "get_type_hints", lambda tp, *a, **k: calls.append(tp) or real(tp, *a, **k))
    decoder = DataclassDecoder()
    first = decoder.decode(ProfileResult, result_dict)
    assert calls and len(calls) == len(set(calls))  # each dataclass once
    resolved = len(calls)
    again = decoder.decode(ProfileResult, result_dict)
    assert len(calls) == resolved and again.to_dict() == first.to_dict()
