"""The Chat Completions request body: modes, strict schemas, pass-through, n > 1."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from sdk._backend import GenerationRequest
from sdk._errors import StreamUsageError
from sdk._http.openai._chat_request import chat_body
from sdk._http.openai._strict import strict_schema
from sdk._schema import schema_name

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["city"],
        },
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}, "maxItems": 3},
    },
    "required": ["name"],
    "$defs": {"Tag": {"type": "object", "properties": {"label": {"enum": ["a", "b"]}}}},
}


def request(**kw: Any) -> GenerationRequest:
    kw.setdefault("messages", ({"role": "user", "content": "hi"},))
    kw.setdefault("schema", PERSON)
    kw.setdefault("schema_name", "Person")
    return GenerationRequest(**kw)


def test_json_schema_body() -> None:
    body = chat_body(request(max_tokens=50, temperature=0.0, top_p=0.9, seed=7), model="m")
    assert body["model"] == "m"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (
        50,
        0.0,
        0.9,
        7,
    )
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Person"
    assert fmt["json_schema"]["strict"] is True
    assert "tools" not in body


def test_unset_sampling_parameters_are_left_out() -> None:
    body = chat_body(request(), model=None)
    for key in ("model", "max_tokens", "temperature", "top_p", "seed", "n"):
        assert key not in body


def test_strict_schema_closes_objects_and_requires_every_property() -> None:
    sent = strict_schema(PERSON)
    assert sent.strict and not sent.wrapped
    strict = sent.schema
    assert strict["additionalProperties"] is False
    assert strict["required"] == ["name", "age", "address", "tags"]
    address = strict["properties"]["address"]
    assert address["additionalProperties"] is False
    assert address["required"] == ["city", "zip"]
    tag = strict["$defs"]["Tag"]
    assert tag == {
        "type": "object",
        "properties": {"label": {"enum": ["a", "b"]}},
        "additionalProperties": False,
        "required": ["label"],
    }


def test_strict_schema_does_not_modify_its_input() -> None:
    before = copy.deepcopy(PERSON)
    strict_schema(PERSON)
    assert before == PERSON


def test_strict_schema_only_narrows() -> None:
    # Every document the strict schema accepts is valid under the original one.
    strict = strict_schema(PERSON).schema
    good = {"name": "Ann", "age": 3, "address": {"city": "X", "zip": "1"}, "tags": [{"label": "a"}]}
    jsonschema.validate(good, strict)
    jsonschema.validate(good, PERSON)
    extra = {**good, "nickname": "A"}
    jsonschema.validate(extra, PERSON)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(extra, strict)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},  # free-form object
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True},
        {"type": "object", "additionalProperties": {"type": "integer"}},  # a map
        {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {}}}},
        {"type": "object", "properties": {}, "patternProperties": {"^x": {}}},
    ],
)
def test_schemas_that_cannot_be_strict_are_sent_unchanged_and_not_strict(
    schema: dict[str, Any],
) -> None:
    sent = strict_schema(schema)
    assert not sent.strict and not sent.wrapped
    assert sent.schema == schema
    body = chat_body(request(schema=schema), model="m")
    assert body["response_format"]["json_schema"] == {
        "name": "Person",
        "schema": schema,
        "strict": False,
    }


def test_strict_false_sends_the_schema_as_is() -> None:
    body = chat_body(request(), model="m", strict=False)
    assert body["response_format"]["json_schema"]["schema"] == PERSON
    assert body["response_format"]["json_schema"]["strict"] is False


def test_strict_schema_walks_anyof_items_and_prefix_items() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {
                "type": "array",
                "prefixItems": [{"type": "object", "properties": {"b": {}}}],
                "items": {"type": "object", "properties": {"c": {}}},
            },
        ]
    }
    sent = strict_schema(schema)
    assert sent.strict and sent.wrapped  # a root anyOf is wrapped
    out = sent.schema["properties"]["value"]
    assert out["anyOf"][0]["additionalProperties"] is False
    assert out["anyOf"][1]["prefixItems"][0]["required"] == ["b"]
    assert out["anyOf"][1]["items"]["additionalProperties"] is False


def test_json_object_mode_sends_the_schema_to_llama_cpp_only_and_unchanged() -> None:
    body = chat_body(request(mode="json_object"), model="m", server="llamacpp")
    assert body["response_format"] == {"type": "json_object", "schema": PERSON}
    for server in (None, "openai", "vllm"):
        body = chat_body(request(mode="json_object"), model="m", server=server)
        assert body["response_format"] == {"type": "json_object"}


def test_tool_mode_forces_one_function_tool() -> None:
    schema = {**PERSON, "description": "A person."}
    body = chat_body(request(mode="tool", schema=schema), model="m")
    assert "response_format" not in body
    (tool,) = body["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "Person"
    assert tool["function"]["description"] == "A person."
    assert tool["function"]["strict"] is True
    assert tool["function"]["parameters"]["additionalProperties"] is False
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Person"}}


def test_mode_none_with_vllm_structured_outputs_as_extra() -> None:
    outputs = {"choice": ["yes", "no"]}
    body = chat_body(request(mode="none", extra={"structured_outputs": outputs}), model="m")
    assert body["structured_outputs"] == outputs
    assert "response_format" not in body
    assert "tools" not in body


def test_extra_is_passed_through_and_replaces_built_keys() -> None:
    mine = {"type": "json_object"}
    body = chat_body(
        request(
            extra={
                "stop": ["\n\n"],
                "logprobs": True,
                "response_format": mine,
                "stream_options": {"include_usage": False},
            }
        ),
        model="m",
    )
    assert body["stop"] == ["\n\n"]
    assert body["logprobs"] is True
    assert body["response_format"] == mine
    assert body["stream_options"] == {"include_usage": False}


@pytest.mark.parametrize("n", [2, 3, 0])
def test_more_than_one_choice_is_refused(n: int) -> None:
    with pytest.raises(StreamUsageError, match="n="):
        chat_body(request(extra={"n": n}), model="m")


def test_n_equal_one_is_fine() -> None:
    assert chat_body(request(extra={"n": 1}), model="m")["n"] == 1


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Person", "Person"), ("list[int]", "list_int"), ("", "response"), ("a" * 80, "a" * 64)],
)
def test_tool_names_are_made_valid(name: str, expected: str) -> None:
    assert schema_name(name) == expected
