"""Messages API request bodies (sans-I/O), checked against the ``anthropic`` package's own
request type (``MessageCreateParamsStreaming``; unknown keys refused, as the API refuses
them), the messages translation, and the schema rewritten to Anthropic's subset."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from sdk._backend import GenerationRequest
from sdk._constraints import Tool, tools_of
from sdk._errors import StreamUsageError, UnsupportedConstraint
from sdk._http.anthropic._messages import anthropic_messages
from sdk._http.anthropic._request import (
    DEFAULT_MAX_TOKENS,
    anthropic_body,
    anthropic_request,
    check_anthropic_request,
)
from sdk._http.anthropic._schema import anthropic_schema
from tests.sdk.http.openai._openai_types import openai_errors

anthropic_types = pytest.importorskip("anthropic.types.message_create_params")
STREAMING = anthropic_types.MessageCreateParamsStreaming

CITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "population": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    },
    "required": ["name"],
}
CHAT = (
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": [{"type": "text", "text": "JSON only."}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Which city?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        ],
    },
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "look", "arguments": "{}"}},
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "look", "arguments": '{"q": "x"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Paris"},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "France"}]},
    {"role": "user", "content": "Answer now."},
)


def request(**kw: Any) -> GenerationRequest:
    return GenerationRequest(**{"messages": CHAT, "schema": CITY, **kw})


def tools() -> tuple[Tool, ...]:
    return tools_of(
        [
            Tool("look", {"type": "object", "properties": {"q": {"type": "string"}}}),
            Tool("city", CITY, description="A city."),
        ]
    )


BODIES = {
    "json_schema": request(),
    "tool": request(mode="tool"),
    "tool, array root": request(
        mode="tool", schema={"type": "array", "items": {"type": "integer"}}
    ),
    "json_object": request(mode="json_object"),
    "none": request(mode="none", max_tokens=10),
    "tools": request(mode="tool", tools=tools()),
    "tools auto": request(mode="tool", tools=tools(), tool_choice="auto"),
    "tools none": request(mode="tool", tools=tools(), tool_choice="none"),
    "tools required": request(mode="tool", tools=tools(), tool_choice="required"),
    "tools named": request(
        mode="tool", tools=tools(), tool_choice={"type": "function", "function": {"name": "city"}}
    ),
    "open object": request(schema={"type": "object", "additionalProperties": True}),
    "extra": request(
        extra={"thinking": {"type": "enabled", "budget_tokens": 2048}, "stop_sequences": ["END"]}
    ),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_bodies_are_anthropics_request_type(name: str) -> None:
    body = anthropic_body(BODIES[name], model="claude-test")
    assert openai_errors(body, STREAMING) == []


def test_the_type_check_refuses_what_the_api_refuses() -> None:
    body = anthropic_body(request(), model="claude-test")
    assert openai_errors({**body, "response_format": {}}, STREAMING) == [
        "body.response_format: unknown parameter"
    ]
    bad = {**body, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}
    assert openai_errors(bad, STREAMING)


def test_json_schema_goes_in_output_config_in_the_subset() -> None:
    body = anthropic_body(request(), model="claude-test")
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert "tools" not in body
    assert body["output_config"] == {
        "format": {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "{minLength: 1}"},
                    "population": {"type": "integer", "description": "{minimum: 0}"},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "{minItems: 2}",
                    },
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        }
    }


def test_tool_modes() -> None:
    body = anthropic_body(request(mode="tool"), model="m")
    assert body["tool_choice"] == {"type": "tool", "name": "response"}
    assert body["tools"][0]["strict"] is True
    body, wrapped = anthropic_request(
        request(mode="tool", schema={"type": "array", "items": {"type": "integer"}}), model="m"
    )
    assert wrapped
    assert body["tools"][0]["input_schema"]["properties"] == {
        "value": {"type": "array", "items": {"type": "integer"}}
    }
    choices = {
        name: anthropic_body(BODIES[name], model="m")["tool_choice"]
        for name in ("tools", "tools auto", "tools none", "tools required", "tools named")
    }
    assert choices == {
        "tools": {"type": "any"},
        "tools auto": {"type": "auto"},
        "tools none": {"type": "none"},
        "tools required": {"type": "any"},
        "tools named": {"type": "tool", "name": "city"},
    }
    look = anthropic_body(BODIES["tools"], model="m")["tools"][0]
    # An object with properties but no additionalProperties is closed, as strict tools need.
    assert look["strict"] is True and look["input_schema"]["additionalProperties"] is False


def test_what_the_subset_cannot_hold_is_not_sent_as_a_format() -> None:
    assert "output_config" not in anthropic_body(BODIES["open object"], model="m")
    assert "output_config" not in anthropic_body(BODIES["json_object"], model="m")
    open_tool = Tool("free", {"type": "object", "additionalProperties": {"type": "integer"}})
    body = anthropic_body(request(mode="tool", tools=tools_of([open_tool])), model="m")
    assert "strict" not in body["tools"][0]
    assert body["tools"][0]["input_schema"]["additionalProperties"] == {"type": "integer"}


def test_messages_translation() -> None:
    system, turns = anthropic_messages(CHAT)
    assert system == [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "JSON only."}]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert turns[0]["content"][2]["source"] == {"type": "url", "url": "https://example.com/a.png"}
    assert turns[1]["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_1", "name": "look", "input": {}},
        {"type": "tool_use", "id": "call_2", "name": "look", "input": {"q": "x"}},
    ]
    # The two tool results and the next user turn are one user turn, the results first.
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "Paris"},
        {
            "type": "tool_result",
            "tool_use_id": "call_2",
            "content": [{"type": "text", "text": "France"}],
        },
        {"type": "text", "text": "Answer now."},
    ]


def test_native_messages_pass_as_they_are() -> None:
    native = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "x"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]
    system, turns = anthropic_messages(native)
    assert system == [] and turns == native
    body = anthropic_body(request(messages=tuple(native)), model="m")
    assert openai_errors(body, STREAMING) == []


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        ([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}], "after"),
        ([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}], "audio"),
        ([{"role": "user", "content": [{"type": "file", "file": {}}]}], "document"),
        ([{"role": "function", "name": "f", "content": "x"}], "'name'"),
        ([{"role": "user", "name": "bob", "content": "x"}], "'name'"),
        ([{"role": "critic", "content": "x"}], "role 'critic'"),
        ([{"role": "tool", "content": "x"}], "tool_call_id"),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "[1]"}}],
                }
            ],
            "JSON object",
        ),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}],
            "data: or http",
        ),
        (
            [
                {
                    "role": "system",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x"}}],
                }
            ],
            "text only",
        ),
    ],
)
def test_what_has_no_equivalent_is_refused(messages: list[dict[str, Any]], said: str) -> None:
    with pytest.raises(StreamUsageError, match=said) as info:
        anthropic_messages(messages)
    assert "messages[" in str(info.value)


SUBSET_CASES: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"type": ["string", "null"]}, {"anyOf": [{"type": "string"}, {"type": "null"}]}),
    (
        {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    ),
    ({"type": "string", "format": "email"}, {"type": "string", "format": "email"}),
    (
        {"type": "string", "format": "ipv4", "pattern": "^a"},
        {"type": "string", "format": "ipv4", "pattern": "^a"},
    ),
    ({"type": "string", "format": "regex"}, {"type": "string", "description": "{format: 'regex'}"}),
    (
        {"type": "string", "pattern": "^(?!x)"},
        {"type": "string", "description": "{pattern: '^(?!x)'}"},
    ),
    ({"enum": [{"a": 1}, 2]}, {"description": "{enum: [{'a': 1}, 2]}"}),
    ({"type": "integer", "enum": [1, 2.0, True]}, {"type": "integer", "enum": [1, 2.0]}),
    ({"const": "x", "title": "T"}, {"const": "x", "title": "T"}),
    (
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        {
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 1,
            "description": "{maxItems: 3}",
        },
    ),
    ({"type": "object", "additionalProperties": True}, None),
    ({"type": "object", "properties": {"a": {}}}, None),
    ({"type": "object"}, None),
    (
        {
            "type": "object",
            "patternProperties": {"^a": {"type": "string"}},
            "properties": {"b": {"type": "string"}},
        },
        None,
    ),
    (
        {
            "$ref": "#/$defs/n",
            "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
        },
        None,
    ),
    ({"$ref": "http://example.com/s.json"}, None),
    (
        {
            "$ref": "#/$defs/a",
            "$defs": {
                "a": {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 2}}}
            },
        },
        {
            "$ref": "#/$defs/a",
            "$defs": {
                "a": {
                    "type": "object",
                    "properties": {"x": {"type": "number", "description": "{multipleOf: 2}"}},
                    "additionalProperties": False,
                }
            },
        },
    ),
]


@pytest.mark.parametrize(("schema", "sent"), SUBSET_CASES)
def test_the_subset_rewrite(schema: dict[str, Any], sent: dict[str, Any] | None) -> None:
    assert anthropic_schema(schema) == sent


DOCUMENTS = [
    None,
    True,
    0,
    1,
    2.5,
    -3,
    "",
    "a",
    "a@b.c",
    "1.2.3.4",
    [],
    [1],
    [1, 2, 3, 4],
    {},
    {"x": 2},
    {"x": 3},
]


@pytest.mark.parametrize(("schema", "sent"), [c for c in SUBSET_CASES if c[1] is not None])
def test_the_subset_never_refuses_a_document_the_schema_allows(
    schema: dict[str, Any], sent: dict[str, Any]
) -> None:
    # Objects aside (closing them is the API's rule, as OpenAI's strict mode), what is sent only
    # drops constraints: fieldstream checks them, the server's mask is looser, never stricter.
    for document in DOCUMENTS:
        if isinstance(document, dict):
            continue
        if jsonschema.Draft202012Validator(schema).is_valid(document):
            assert jsonschema.Draft202012Validator(sent).is_valid(document), document


def test_named_parameters_in_the_messages_apis_words() -> None:
    given = {
        "max_completion_tokens": 77,
        "stop": "END",
        "user": "u-1",
        "parallel_tool_calls": False,
        "reasoning_effort": "high",
        "service_tier": "auto",
        "stream_options": {"include_usage": True},
    }
    body = anthropic_body(request(mode="tool", tools=tools(), parameters=given), model="m")
    assert openai_errors(body, STREAMING) == []
    assert body["max_tokens"] == 77
    assert body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "u-1"}
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["output_config"] == {"effort": "high"}
    assert body["service_tier"] == "auto"
    schema_body = anthropic_body(request(parameters={"reasoning_effort": "low"}), model="m")
    assert schema_body["output_config"]["effort"] == "low"
    assert schema_body["output_config"]["format"]["type"] == "json_schema"
    assert openai_errors(schema_body, STREAMING) == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"logprobs": True}, "logprobs= has no equivalent"),
        ({"frequency_penalty": 0.5}, "frequency_penalty= has no equivalent"),
        ({"metadata": {"a": "b"}}, "metadata= has no equivalent"),
        ({"reasoning_effort": "minimal"}, "reasoning_effort='minimal'"),
        ({"service_tier": "flex"}, "service_tier='flex'"),
    ],
)
def test_named_parameters_it_has_no_equivalent_for_are_refused(
    given: dict[str, Any], said: str
) -> None:
    with pytest.raises(UnsupportedConstraint, match=said):
        check_anthropic_request(request(parameters=given))
