"""``unevaluatedProperties`` and ``unevaluatedItems``: judged when the object or array closes.

The official suite's files for both keywords run in ``test_tracker_jsonsuite.py``; these tests
pin what the suite does not: where the violation is raised and what it says, references across
resources, ``CompiledSchema.validate``, and that a schema without the keywords does no more work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sdk._errors import SchemaError, ValidationFailed
from sdk._schema._compile import compile_schema
from tests.sdk.trackers._tracker_support import assert_fires, first_violation

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "allOf": [{"properties": {"age": {"type": "integer"}}}],
    "unevaluatedProperties": False,
}


def test_a_property_no_applicator_evaluated_fails_at_the_close_of_its_object() -> None:
    schema = {"type": "array", "items": PERSON}
    assert_fires(
        schema, '[{"name": "a", "age": 3}, {"name": "b", "x": 1¦}]', (1,), "unevaluatedProperties"
    )
    assert first_violation(schema, '[{"name": "a", "age": 3}, {"age": 4}]') is None


def test_the_message_says_which_property() -> None:
    found = first_violation(PERSON, '{"name": "a", "nick": "b"}')
    assert found is not None
    assert "'nick'" in found[1].message


def test_annotations_of_a_failed_branch_do_not_count() -> None:
    schema = {
        "anyOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ],
        "unevaluatedProperties": False,
    }
    assert first_violation(schema, '{"a": "x", "b": 1}') is None
    # "b" is not an integer: its branch fails, so nothing evaluated "b".
    assert_fires(schema, '{"a": "x", "b": "y"¦}', (), "unevaluatedProperties")


def test_unevaluated_items_after_prefix_items_from_a_reference() -> None:
    schema = {
        "$defs": {"pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}]}},
        "type": "object",
        "properties": {"row": {"$ref": "#/$defs/pair", "unevaluatedItems": {"type": "boolean"}}},
    }
    assert first_violation(schema, '{"row": ["a", 1, true, false]}') is None
    assert_fires(schema, '{"row": ["a", 1, true, 2¦]}', ("row",), "unevaluatedItems")


def test_a_reference_inside_an_embedded_resource_resolves_from_that_resource() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "properties": {"inner": {"$ref": "inner.json"}},
        "$defs": {
            "inner": {
                "$id": "inner.json",
                "$defs": {"base": {"properties": {"k": {"type": "string"}}}},
                "$ref": "#/$defs/base",
                "unevaluatedProperties": False,
            }
        },
    }
    assert first_violation(schema, '{"inner": {"k": "v"}}') is None
    assert_fires(schema, '{"inner": {"k": "v", "z": 0¦}}', ("inner",), "unevaluatedProperties")


def test_draft_2019_09_reads_them_too() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "type": "array",
        "items": [{"type": "string"}],
        "unevaluatedItems": False,
    }
    assert first_violation(schema, '["a"]') is None
    assert_fires(schema, '["a", "b"¦]', (), "unevaluatedItems")


def test_validate_reports_them() -> None:
    compiled = compile_schema(PERSON)
    assert compiled.validate({"name": "a", "age": 1}) == {"name": "a", "age": 1}
    with pytest.raises(ValidationFailed) as info:
        compiled.validate({"name": "a", "extra": True})
    assert info.value.keyword == "unevaluatedProperties"


@pytest.mark.parametrize("value", [True, {}])
def test_a_keyword_that_allows_everything_costs_nothing(value: Any) -> None:
    compiled = compile_schema({"type": "object", "unevaluatedProperties": value})
    assert compiled.root.unevaluated == ()


def test_a_schema_without_them_has_no_judge() -> None:
    assert compile_schema({"type": "object", "properties": {"a": {}}}).root.unevaluated == ()


def test_compose_spec_closes_a_service_with_unevaluated_properties() -> None:
    corpus = Path(__file__).resolve().parents[2] / "data" / "schema-corpus" / "schemastore"
    schema = json.loads((corpus / "compose-spec.json").read_text(encoding="utf-8"))
    ok = {"services": {"web": {"image": "nginx", "ports": ["80:80"], "x-team": "a"}}}
    assert first_violation(schema, json.dumps(ok)) is None
    found = first_violation(schema, json.dumps({"services": {"web": {"image": "x", "bogus": 1}}}))
    assert found is not None
    assert (found[1].path, found[1].keyword) == (("services", "web"), "unevaluatedProperties")
    assert "'bogus'" in found[1].message


def test_contains_evaluates_items_in_2020_12_and_2019_09_with_both_is_refused() -> None:
    schema: dict[str, Any] = {"contains": {"type": "string"}, "unevaluatedItems": False}
    assert first_violation(schema, '["a", "b"]') is None
    assert_fires(schema, '["a", 1¦]', (), "unevaluatedItems")
    draft2019 = {"$schema": "https://json-schema.org/draft/2019-09/schema", **schema}
    with pytest.raises(SchemaError) as info:
        compile_schema(draft2019)
    assert (info.value.keyword, info.value.pointer) == ("unevaluatedItems", "")


def test_a_pattern_python_cannot_read_is_refused_beside_them() -> None:
    pattern = {"type": "string", "pattern": "^\\p{L}+$"}  # ECMA-262 (u), not Python's re
    assert first_violation(pattern, '"abc"') is None
    with pytest.raises(SchemaError) as info:
        compile_schema({"properties": {"a": pattern}, "unevaluatedProperties": False})
    assert (info.value.keyword, info.value.pointer) == ("pattern", "/properties/a/pattern")


def test_a_value_too_deep_for_jsonschema_is_a_violation_not_a_crash() -> None:
    schema = {"type": "array", "items": {"$ref": "#"}, "unevaluatedItems": False}
    assert first_violation(schema, "[" * 50 + "]" * 50) is None
    found = first_violation(schema, "[" * 400 + "]" * 400)
    assert found is not None
    assert found[1].keyword == "unevaluatedItems"
    assert "too deeply" in found[1].message
