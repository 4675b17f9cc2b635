"""Strict schemas: what OpenAI's structured outputs accept, never wider than the caller's.

Checked three ways on a corpus of real-world pydantic models: against openai-python's own
``to_strict_json_schema``, against the rules of OpenAI's structured-outputs documentation, and
by generating documents from the strict schema and validating them with the original.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import TypeAdapter

from sdk._http.openai._strict import WRAPPER_KEY, strict_schema
from tests.sdk.http.openai._models_corpus import (
    MAP_ROOTS,
    OBJECT_ROOTS,
    OTHER_ROOTS,
    Node,
    json_schema,
)

ALL = {**OBJECT_ROOTS, **MAP_ROOTS, **OTHER_ROOTS}


@pytest.mark.parametrize("name", list(OBJECT_ROOTS))
def test_object_roots_match_openai_python(name: str) -> None:
    model = OBJECT_ROOTS[name]
    sent = strict_schema(json_schema(model))
    assert sent.strict and not sent.wrapped
    assert sent.schema == to_strict_json_schema(TypeAdapter(model))


@pytest.mark.parametrize("name", list(OTHER_ROOTS))
def test_other_roots_are_wrapped_around_what_openai_python_makes(name: str) -> None:
    model = OTHER_ROOTS[name]
    sent = strict_schema(json_schema(model))
    assert sent.strict and sent.wrapped
    theirs = to_strict_json_schema(TypeAdapter(model))  # leaves the root as it is
    defs = theirs.pop("$defs", None)
    inner = sent.schema["properties"][WRAPPER_KEY]
    assert inner == theirs
    assert sent.schema.get("$defs") == defs


@pytest.mark.parametrize("name", list(MAP_ROOTS))
def test_maps_are_sent_as_they_are_and_not_strict(name: str) -> None:
    schema = json_schema(MAP_ROOTS[name])
    sent = strict_schema(schema)
    assert (sent.strict, sent.wrapped) == (False, False)
    assert sent.schema == schema


# -- OpenAI's documented rules ------------------------------------------------------------------


def _nodes(schema: Any) -> Iterator[dict[str, Any]]:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _openai_rule_breaks(schema: dict[str, Any]) -> list[str]:
    """The rules of OpenAI's structured-outputs guide ("Supported schemas") that a strict
    schema breaks: the root must be an object and not ``anyOf``; every object sets
    ``additionalProperties: false`` and lists every property in ``required``; a ``$ref`` has no
    siblings and points at a definition; ``default: null`` is not used."""
    breaks = []
    if schema.get("type") != "object" or "anyOf" in schema or "$ref" in schema:
        breaks.append("root is not an object")
    for node in _nodes(schema):
        if node.get("type") == "object" or "properties" in node:
            if node.get("additionalProperties") is not False:
                breaks.append(f"object without additionalProperties false: {node}")
            if node.get("required") != list(node.get("properties", {})):
                breaks.append(f"object whose properties are not all required: {node}")
        if "$ref" in node:
            if len(node) > 1:
                breaks.append(f"$ref with siblings: {node}")
            name = node["$ref"].removeprefix("#/$defs/")
            if name not in schema.get("$defs", {}):
                breaks.append(f"dangling $ref {node['$ref']}")
        if "default" in node and node["default"] is None:
            breaks.append("default null")
    return breaks


@pytest.mark.parametrize("name", [*OBJECT_ROOTS, *OTHER_ROOTS])
def test_strict_schemas_follow_openais_rules(name: str) -> None:
    sent = strict_schema(json_schema(ALL[name]))
    assert _openai_rule_breaks(sent.schema) == []


def test_the_rules_check_catches_what_pydantic_writes() -> None:
    # The check is not vacuous: pydantic's own schemas break the rules the rewrite fixes.
    assert _openai_rule_breaks(json_schema(OBJECT_ROOTS["person"]))  # $ref with description
    assert _openai_rule_breaks(json_schema(Node))  # a root $ref, default null
    assert _openai_rule_breaks(json_schema(OTHER_ROOTS["list[Item]"]))  # an array root


def test_a_ref_cycle_through_siblings_keeps_the_bare_ref() -> None:
    # openai-python's function recurses forever on this one; ours stops at the cycle.
    schema = {
        "$defs": {
            "Tree": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/Tree", "title": "Kid"}},
                },
            }
        },
        "$ref": "#/$defs/Tree",
    }
    sent = strict_schema(schema)
    assert sent.strict and not sent.wrapped
    assert sent.schema["properties"]["kids"]["items"] == {"$ref": "#/$defs/Tree"}
    assert _openai_rule_breaks(sent.schema) == []


def test_conflicting_siblings_of_a_ref_both_hold() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/Small", "maximum": 5}},
        "$defs": {"Small": {"type": "integer", "maximum": 9}},
    }
    inner = strict_schema(schema).schema["properties"]["n"]
    assert inner == {"allOf": [{"type": "integer", "maximum": 9}, {"maximum": 5}]}


# -- never wider ----------------------------------------------------------------------------------


def _generate(schema: Any, root: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A random document shaped by ``schema`` (it may still break a constraint; callers keep
    the ones the schema accepts)."""
    if not isinstance(schema, dict) or depth > 6:
        return None
    if "$ref" in schema:
        return _generate(root["$defs"][schema["$ref"].split("/")[-1]], root, rng, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _generate(rng.choice(schema[key]), root, rng, depth + 1)
    if "allOf" in schema:
        return _generate(schema["allOf"][0], root, rng, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    kind = rng.choice(kind) if isinstance(kind, list) else kind
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return {
            k: _generate(v, root, rng, depth + 1)
            for k, v in props.items()
            if k in required or rng.random() < 0.5
        }
    if kind == "array":
        if "prefixItems" in schema:
            return [_generate(s, root, rng, depth + 1) for s in schema["prefixItems"]]
        return [
            _generate(schema.get("items", {}), root, rng, depth + 1)
            for _ in range(rng.randint(0, 3))
        ]
    if kind == "string":
        fmt = schema.get("format")
        samples = {
            "date": "2024-05-01",
            "date-time": "2024-05-01T10:00:00Z",
            "uuid": "a8098c1a-f86e-11da-bd1a-00112444be1e",
        }
        return samples.get(fmt, rng.choice(["EUR", "x", "Ada", ""]))
    if kind == "integer":
        return rng.randint(-3, 200)
    if kind == "number":
        return rng.choice([0, 1.5, -2, 99.25])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return rng.choice([1, "s", None, [], {}])


@pytest.mark.parametrize("name", list(ALL))
def test_every_document_the_strict_schema_accepts_the_original_accepts(name: str) -> None:
    original = json_schema(ALL[name])
    sent = strict_schema(original)
    check_sent = jsonschema.Draft202012Validator(sent.schema)
    check_original = jsonschema.Draft202012Validator(original)
    rng = random.Random(name)
    accepted = 0
    for _ in range(400):
        doc = _generate(sent.schema, sent.schema, rng)
        if not check_sent.is_valid(doc):
            continue
        accepted += 1
        inner = doc[WRAPPER_KEY] if sent.wrapped else doc
        assert check_original.is_valid(inner), (name, inner)
    assert accepted >= 20, f"too few documents generated for {name}: {accepted}"


# -- unevaluatedProperties / unevaluatedItems ----------------------------------------------------


def test_unevaluated_keywords_are_dropped_where_they_mean_nothing() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}, "unevaluatedItems": False},
        },
        "unevaluatedProperties": False,
    }
    sent = strict_schema(schema)
    assert sent.strict and not sent.wrapped
    assert sent.schema == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
        "required": ["a", "tags"],
    }
    # Dropped, not widened: the original refuses what the strict schema refuses.
    for doc in ({"a": "x", "tags": ["t"], "b": 1}, {"a": "x", "tags": [1]}):
        assert not jsonschema.Draft202012Validator(sent.schema).is_valid(doc)
        assert not jsonschema.Draft202012Validator(schema).is_valid(doc)


@pytest.mark.parametrize(
    "schema",
    [
        {
            "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}],
            "unevaluatedProperties": False,
        },
        {"type": "array", "prefixItems": [{"type": "string"}], "unevaluatedItems": False},
    ],
)
def test_unevaluated_keywords_that_still_mean_something_are_sent_as_they_are(
    schema: dict[str, Any],
) -> None:
    sent = strict_schema(schema)
    assert not sent.strict
    assert sent.schema == schema
