"""The schema compiler: inputs accepted, cache, and schemas refused at compile time."""

from __future__ import annotations

import dataclasses
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jsonschema
import pydantic
import pytest
from typing_extensions import TypedDict

from sdk._errors import SchemaError, SchemaViolation, ValidationFailed
from sdk._schema._compile import CompiledSchema, compile_schema
from sdk._trackers._field import FieldTracker


class Person(pydantic.BaseModel):
    name: str
    friends: list[Person] = []


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Size:
    w: float
    h: float


def test_compiled_once_per_schema() -> None:
    assert compile_schema(Person) is compile_schema(Person)
    schema = {"type": "object"}
    compiled = compile_schema(schema)
    assert compile_schema(schema) is compiled
    assert compile_schema({"type": "object"}) is compiled  # the same text
    assert compile_schema(compiled) is compiled
    assert FieldTracker(compiled)._compiled is compiled


def test_a_mutated_dict_is_never_answered_from_the_cache() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    before = compile_schema(schema)
    schema["properties"]["n"] = {"type": "string"}
    after = compile_schema(schema)
    assert after is not before
    t = FieldTracker(schema)
    t.feed('{"n": "x"}')
    assert t.close() == {"n": "x"}
    with pytest.raises(SchemaViolation):
        FieldTracker(before).feed('{"n": "')


def test_key_order_is_part_of_the_schema() -> None:
    a = {"properties": {"x": {}, "y": {}}}
    b = {"properties": {"y": {}, "x": {}}}
    assert list(compile_schema(a).json_schema["properties"]) == ["x", "y"]  # type: ignore[index]
    assert list(compile_schema(b).json_schema["properties"]) == ["y", "x"]  # type: ignore[index]


def test_one_compilation_tracked_from_many_threads() -> None:
    # The alternatives of a property are expanded lazily, when a document first reaches it;
    # threads that reach it together must not take each other's expansion for a $ref cycle
    # (they did: "refers to itself" SchemaErrors, before the expansion was locked).
    defs = {
        f"d{j}": {"allOf": [{"type": "object"}, {"anyOf": [{"required": [f"k{j}"]}, {}]}]}
        for j in range(12)
    }
    branches = [{"$ref": f"#/$defs/d{j}"} for j in range(12)]
    doc = json.dumps({f"p{i}": i for i in range(40)})
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    try:
        for rep in range(5):
            schema = {
                "title": f"rep{rep}",  # a fresh compilation each round
                "$defs": defs,
                "properties": {
                    f"p{i}": {"anyOf": [*branches, {"type": "integer", "minimum": i}]}
                    for i in range(40)
                },
            }
            compiled = compile_schema(schema)

            def run(_: int, compiled: CompiledSchema = compiled) -> Any:
                t = FieldTracker(compiled)
                t.feed(doc)
                return t.close()

            with ThreadPoolExecutor(8) as pool:
                results = list(pool.map(run, range(16)))
            assert results == [json.loads(doc)] * 16
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.parametrize(
    ("schema", "doc", "expected"),
    [
        pytest.param(
            Person,
            '{"name": "a", "friends": [{"name": "b"}]}',
            Person(name="a", friends=[Person(name="b")]),
            id="recursive-model",
        ),
        pytest.param(Point, '{"x": 1, "y": 2}', {"x": 1, "y": 2}, id="typeddict"),
        pytest.param(Size, '{"w": 1, "h": 2.5}', Size(1.0, 2.5), id="dataclass"),
        pytest.param(int | None, "null", None, id="union"),
    ],
)
def test_types_pydantic_can_adapt(schema: Any, doc: str, expected: Any) -> None:
    t = FieldTracker(schema)
    t.feed(doc)
    t.finish()
    assert t.close() == expected


def test_recursive_model_checks_early_at_depth() -> None:
    t = FieldTracker(Person)
    with pytest.raises(Exception) as info:
        t.feed('{"name": "a", "friends": [{"name": "b", "friends": [{"name": 3')
    assert getattr(info.value, "path", None) == ("friends", 0, "friends", 0, "name")


@pytest.mark.parametrize(
    ("schema", "keyword", "pointer"),
    [
        pytest.param({"$dynamicRef": "#x"}, "$dynamicRef", "", id="dynamicRef-to-nothing"),
        pytest.param(
            {
                "$id": "https://example.com/root",
                "$defs": {
                    "a": {"$id": "a", "$dynamicAnchor": "n", "items": {"$dynamicRef": "#n"}},
                    "b": {"$id": "b", "$dynamicAnchor": "n", "$ref": "a"},
                },
            },
            "$dynamicRef",
            "/$defs/a/items",
            id="dynamicRef-path-dependent",
        ),
        pytest.param({"$ref": "https://example.com/s.json"}, "$ref", "", id="remote-ref"),
        pytest.param({"$ref": "#/$defs/missing"}, "$ref", "", id="dangling-ref"),
        pytest.param(
            {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
            "$ref",
            "/$defs/a",
            id="ref-cycle",
        ),
        pytest.param({"$schema": "https://example.com/my-meta"}, "$schema", "", id="custom-meta"),
        pytest.param({"$ref": "other.json#/a"}, "$ref", "", id="relative-ref"),
        pytest.param({"type": "strnig"}, "type", "/type", id="invalid-type"),
        pytest.param({"minLength": -1}, "minLength", "/minLength", id="negative"),
        pytest.param({"required": "a"}, "required", "/required", id="required-not-a-list"),
        pytest.param({"anyOf": []}, "anyOf", "/anyOf", id="empty-anyOf"),
        pytest.param({"properties": {"a": 3}}, "", "/properties/a", id="not-a-schema"),
        pytest.param(
            {"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 3},
            "exclusiveMinimum",
            "/exclusiveMinimum",
            id="draft4-exclusive-not-boolean",
        ),
    ],
)
def test_unusable_schemas_fail_at_compile_time(schema: Any, keyword: str, pointer: str) -> None:
    with pytest.raises(SchemaError) as info:
        FieldTracker(schema)
    assert (info.value.keyword, info.value.pointer) == (keyword, pointer)
    assert isinstance(info.value, ValueError)


def test_types_pydantic_cannot_handle() -> None:
    with pytest.raises(SchemaError):
        compile_schema(object())


def test_annotations_and_extensions_are_fine() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.com/s",
        "title": "T",
        "description": "d",
        "$comment": "c",
        "x-vendor": 1,
        "properties": {"a": {"default": 1, "examples": [1], "deprecated": True}},
    }
    t = FieldTracker(schema)
    t.feed('{"a": 2}')
    assert t.close() == {"a": 2}


def test_pydantic_discriminated_union() -> None:
    from typing import Annotated, Literal

    class Cat(pydantic.BaseModel):
        kind: Literal["cat"]
        lives: int

    class Dog(pydantic.BaseModel):
        kind: Literal["dog"]
        bark: str

    class Owner(pydantic.BaseModel):
        pets: list[Annotated[Cat | Dog, pydantic.Field(discriminator="kind")]]

    t = FieldTracker(Owner)
    t.feed('{"pets": [{"kind": "dog", "bark": "woof"}, {"kind": "cat", "lives": 9}]}')
    owner = t.close()
    assert isinstance(owner.pets[0], Dog) and isinstance(owner.pets[1], Cat)
    t = FieldTracker(Owner)
    with pytest.raises(Exception) as info:
        t.feed('{"pets": [{"kind": "cow')
    assert getattr(info.value, "path", None) == ("pets", 0, "kind")


def test_too_many_alternatives_fall_back_to_a_final_check() -> None:
    branches = [
        {"anyOf": [{"type": "integer"}, {"type": "string"}, {"const": i}]} for i in range(6)
    ]
    schema = {"items": {"allOf": branches, "maxLength": 2}}  # 3**6 alternatives
    t = FieldTracker(schema)
    t.feed('[1, "ab"')
    with pytest.raises(Exception) as info:
        t.feed(', "abc"]')
    assert getattr(info.value, "path", None) == (2,)


def test_validate_a_whole_value_without_streaming_it() -> None:
    compiled = compile_schema({"items": {"type": "integer"}, "uniqueItems": True})
    assert compiled.validate([1, 2]) == [1, 2]
    with pytest.raises(ValidationFailed) as info:
        compiled.validate([1, 1.0])
    assert info.value.keyword == "uniqueItems"
    with pytest.raises(ValidationFailed):
        compiled.validate([1, "a"])
    # Too deep: the same typed error on every Python version, whether the interpreter could
    # serialise the value (3.13 can, 3.11 cannot at this depth) or not.
    for depth in (513, 3000):
        deep: Any = []
        for _ in range(depth):
            deep = [deep]
        with pytest.raises(ValidationFailed, match="deeper than max_depth=512") as too_deep:
            compile_schema({}).validate(deep)
        assert too_deep.value.keyword == "depth"
    shallow: Any = []
    for _ in range(511):
        shallow = [shallow]
    assert compile_schema({}).validate(shallow) == shallow
    with pytest.raises(ValidationFailed, match="max_depth=8"):
        compile_schema({}).validate([[[[[[[[[]]]]]]]]], max_depth=8)
    assert compile_schema(Person).validate({"name": "a"}) == Person(name="a")
    with pytest.raises(ValidationFailed):
        compile_schema(Person).validate({"name": 1})


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        pytest.param(
            {"type": "array", "contains": {"$ref": "#"}, "minContains": 0},
            "[[], [[]]]",
            "{}",
            id="contains",
        ),
        pytest.param(
            {"anyOf": [{"type": "integer"}, {"type": "array", "contains": {"$ref": "#"}}]},
            '[[1], "a"]',
            "[[], []]",
            id="contains-needs-a-match",
        ),
        pytest.param(
            {
                "type": "object",
                "propertyNames": {"$ref": "#/$defs/k"},
                "$defs": {"k": {"not": {"const": "x"}}},
            },
            '{"a": 1}',
            '{"x": 1}',
            id="propertyNames",
        ),
    ],
)
def test_recursion_through_other_values_is_no_cycle(schema: Any, good: str, bad: str) -> None:
    t = FieldTracker(schema)
    t.feed(good)
    assert t.close() == json.loads(good)
    with pytest.raises(SchemaViolation):
        t = FieldTracker(schema)
        t.feed(bad)
        t.close()


def test_a_cycle_through_allof_adds_nothing_to_the_conjunction() -> None:
    # SchemaStore's cloudify schema: a definition whose allOf refers to itself, in an anyOf
    # branch. jsonschema stops at the first branch that passes and accepts; evaluating the
    # cyclic branch it would recurse without end. The tracker raised a SchemaError mid-stream
    # when the value reached the branch; the cycle is now read as what it adds: nothing.
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {
            "vm": {
                "type": "object",
                "allOf": [
                    {"$ref": "#/definitions/vm"},
                    {"properties": {"os": {"type": "string"}}, "required": ["os"]},
                ],
            },
        },
        "properties": {"p": {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/vm"}]}},
    }
    for doc in ('{"p": "x"}', '{"p": {"os": "win"}}', '{"p": {"os": 1}}', '{"p": {}}', '{"p": 1}'):
        t = FieldTracker(schema)
        try:
            t.feed(doc)
            t.close()
            valid = True
        except SchemaViolation:
            valid = False
        assert valid is (doc in ('{"p": "x"}', '{"p": {"os": "win"}}')), doc
        if valid and doc == '{"p": "x"}':  # jsonschema judges this one (the first branch)
            assert jsonschema.Draft7Validator(schema).is_valid(json.loads(doc))
    # The flattening of a node met inside the cycle is not cached short: reached on its own,
    # the allOf's $ref still brings the whole definition.
    inner = {"$ref": "#/$defs/a"}
    looped = {
        "$defs": {"a": {"allOf": [inner, {"required": ["k"]}], "type": "object"}},
        "properties": {"x": {"$ref": "#/$defs/a"}, "y": inner},
    }
    for doc, valid in [('{"y": {"k": 1}}', True), ('{"y": {}}', False), ('{"x": 1}', False)]:
        t = FieldTracker(looped)
        try:
            t.feed(doc)
            t.close()
            got = True
        except SchemaViolation:
            got = False
        assert got is valid, doc
