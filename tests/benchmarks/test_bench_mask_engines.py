"""The helpers of ``bench_mask_engines.py`` (``mask_engine_cases.py``): how instances are written
and refusals grouped.

These decide what the benchmark calls a false rejection, so they are checked on their own (the
benchmark itself needs the local extra and minutes; these need neither).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.benchmarks.mask_engine_cases import (
    compact,
    integral,
    other_type,
    percentile,
    reason_key,
    schema_order,
    suite_cases,
)


def test_schema_order_puts_declared_properties_first_in_the_schemas_order() -> None:
    schema: dict[str, Any] = {"properties": {"b": {}, "a": {}}}
    value = {"z": 0, "a": 1, "b": 2}
    assert list(schema_order(value, schema)) == ["b", "a", "z"]
    assert schema_order(value, schema) == value  # the same value, only reordered


def test_schema_order_follows_references_items_and_combinators() -> None:
    schema = {
        "$defs": {"pair": {"properties": {"y": {}, "x": {}}}},
        "type": "object",
        "properties": {
            "rows": {"type": "array", "items": {"$ref": "#/$defs/pair"}},
            "tuple": {"prefixItems": [{"properties": {"q": {}, "p": {}}}]},
            "merged": {"allOf": [{"properties": {"n": {}}}, {"properties": {"m": {}}}]},
        },
    }
    value = {
        "merged": {"m": 1, "n": 2},
        "tuple": [{"p": 1, "q": 2}, {"p": 1, "q": 2}],
        "rows": [{"x": 1, "y": 2}],
    }
    ordered = schema_order(value, schema)
    assert compact(ordered) == (
        '{"rows":[{"y":2,"x":1}],"tuple":[{"q":2,"p":1},{"p":1,"q":2}],"merged":{"n":2,"m":1}}'
    )


def test_schema_order_writes_a_const_or_enum_object_in_its_own_order() -> None:
    assert compact(schema_order({"b": 1, "a": 2}, {"const": {"a": 2, "b": 1}})) == '{"a":2,"b":1}'
    assert compact(schema_order([{"b": 1, "a": 2}], {"enum": [[{"a": 2, "b": 1}]]})) == (
        '[{"a":2,"b":1}]'
    )
    # 1 is not True and 1.0 is not 1 here: only the key order may change
    assert schema_order({"a": True}, {"const": {"a": 1}}) == {"a": True}
    assert compact(schema_order({"a": 1.0}, {"const": {"a": 1}})) == '{"a":1.0}'


def test_schema_order_survives_recursive_and_unresolvable_references() -> None:
    schema = {"$ref": "#", "properties": {"k": {"$ref": "#"}, "j": {"$ref": "other.json#/x"}}}
    value = {"j": 1, "k": {"j": 2, "k": None}}
    assert compact(schema_order(value, schema)) == '{"k":{"k":null,"j":2},"j":1}'


def test_integral_rewrites_whole_floats_only() -> None:
    value = {"a": 1.0, "b": [0.0, -2.0, 1.5, True, 3], "c": 1e300}
    assert compact(integral(value)) == '{"a":1,"b":[0,-2,1.5,true,3],"c":1e+300}'


def test_reason_key_groups_refusals_that_differ_only_in_names_and_numbers() -> None:
    xgr = (
        "RuntimeError: [23:57:06] /project/cpp/json_schema_converter.cc:5082: items must be a "
        "boolean or an object\nStack trace: ..."
    )
    assert reason_key(xgr) == "RuntimeError: items must be a boolean or an object"
    one = "ValueError: Resource 'http://a/x.json' is not present in a registry"
    two = "ValueError: Resource 'http://b/y.json' is not present in a registry"
    assert reason_key(one) == reason_key(two)
    assert reason_key('Unimplemented keys: ["not"] (3 times)') == 'Unimplemented keys: ["not"]'
    assert reason_key("") == "(no message)"


def test_percentile_is_the_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0
    assert percentile([2.0], 0.95) == 2.0
    assert percentile([], 0.5) != percentile([], 0.5)  # NaN


def test_suite_cases_read_every_test_of_a_draft_with_its_schema() -> None:
    cases = suite_cases(["draft2020-12"])
    assert len(cases) == 383  # the groups of the main files of draft 2020-12
    assert sum(len(c.instances) for c in cases) == 1299
    first = cases[0]
    schema = json.loads(first.schema_text)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    for case in cases:
        for instance in case.instances:
            assert json.loads(instance.text) == json.loads(instance.original)


@pytest.mark.parametrize("value", [{"b": 1, "a": [1.0, {"d": 2, "c": 3}]}, [], "x", None])
def test_schema_order_keeps_the_value(value: object) -> None:
    schema: dict[str, Any] = {"properties": {"a": {"items": {"properties": {"c": {}}}}}}
    assert json.loads(compact(schema_order(value, schema))) == value


def test_other_type_spots_values_of_a_type_the_keywords_do_not_name() -> None:
    untyped = '{"properties":{"a":{}}}'
    assert other_type(untyped, "[1,2]")
    assert other_type(untyped, "12")
    assert not other_type(untyped, '{"a":1}')
    assert not other_type('{"type":["object","array"],"properties":{}}', "[1]")
    assert other_type('{"items":{"type":"integer"}}', '{"0":1}')
    assert not other_type('{"minimum":1}', '"x"')  # no object or array keyword
    assert not other_type("true", "1")


def test_schema_order_can_put_referenced_properties_first() -> None:
    schema = {
        "$ref": "#/$defs/bar",
        "properties": {"foo": {}},
        "$defs": {"bar": {"properties": {"bar": {}}}},
    }
    value = {"foo": 1, "bar": 2}
    assert list(schema_order(value, schema)) == ["foo", "bar"]
    assert list(schema_order(value, schema, own_first=False)) == ["bar", "foo"]
