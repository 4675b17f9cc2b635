"""Chat-shaped conversations sent to ``api="responses"``: every message shape the Chat API takes
becomes the Responses API's input items, checked against the ``openai`` package's
``ResponseCreateParamsStreaming`` (the checker of test_server_bodies: unknown keys refused,
required ones present, every value of its declared type); Responses-shaped input goes as it
is; what has no equivalent is refused before any request."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

from sdk import Client, StreamUsageError
from sdk._backend import GenerationRequest
from sdk._http.openai._responses_input import responses_input
from sdk._http.openai._responses_request import responses_body
from tests.sdk.http.openai._openai_types import openai_errors

IMAGE = "data:image/png;base64,iVBORw0KGgo="
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}

IMAGE_PROMPT: list[dict[str, Any]] = [
    {"role": "system", "content": "You describe images."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": IMAGE}},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
            {
                "type": "file",
                "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
            },
            {"type": "file", "file": {"file_id": "file-123"}},
        ],
    },
]
TOOL_LOOP: list[dict[str, Any]] = [
    {"role": "developer", "content": "Use the tools."},
    {"role": "user", "content": "Weather in Paris and Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "refusal": None,  # as openai's message.model_dump() writes it
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"c": 21}'},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": '{"c": 9}'}]},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Paris 21, "}, {"type": "text", "text": "Oslo 9."}],
    },
    {"role": "user", "content": "Thanks; now as JSON."},
]


def body_of(messages: list[dict[str, Any]]) -> dict[str, Any]:
    request = GenerationRequest(messages=tuple(messages), schema=SCHEMA, schema_name="R")
    return responses_body(request, model="gpt-4.1", server="openai")


def test_an_image_prompt_becomes_input_parts_openai_accepts() -> None:
    untranslated = {**body_of(IMAGE_PROMPT), "input": IMAGE_PROMPT}
    assert openai_errors(untranslated, ResponseCreateParamsStreaming) != []  # the checker bites
    body = body_of(IMAGE_PROMPT)
    assert body["input"] == [
        {"role": "system", "content": "You describe images."},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in these?"},
                {"type": "input_image", "image_url": IMAGE, "detail": "auto"},
                {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "low"},
                {
                    "type": "input_file",
                    "file_data": "data:application/pdf;base64,JVBE",
                    "filename": "a.pdf",
                },
                {"type": "input_file", "file_id": "file-123"},
            ],
        },
    ]
    assert openai_errors(body, ResponseCreateParamsStreaming) == []


def test_a_tool_loop_becomes_function_call_items_openai_accepts() -> None:
    untranslated = {**body_of(TOOL_LOOP), "input": TOOL_LOOP}
    assert openai_errors(untranslated, ResponseCreateParamsStreaming) != []
    body = body_of(TOOL_LOOP)
    assert body["input"] == [
        {"role": "developer", "content": "Use the tools."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "get_weather",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": '{"c": 21}'},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": '{"c": 9}'}],
        },
        {"role": "assistant", "content": "Paris 21, Oslo 9."},
        {"role": "user", "content": "Thanks; now as JSON."},
    ]
    assert openai_errors(body, ResponseCreateParamsStreaming) == []


def test_responses_shaped_input_is_sent_as_it_is() -> None:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "role": "user",
            "content": [{"type": "input_image", "image_url": IMAGE, "detail": "high"}],
        },
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "42"},
    ]
    body = body_of(items)
    assert body["input"] == items
    assert openai_errors(body, ResponseCreateParamsStreaming) == []


def test_arguments_given_as_an_object_are_sent_as_their_json_text() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"x": "é"}}}
        ],
    }
    (item,) = responses_input([message])
    assert json.loads(item["arguments"]) == {"x": "é"}


@pytest.mark.parametrize(
    ("message", "says"),
    [
        (
            {
                "role": "user",
                "content": [
                    {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}}
                ],
            },
            r"messages\[0\]\.content\[0\]: an input_audio part has no equivalent",
        ),
        (
            {"role": "user", "content": "hi", "name": "ann"},
            r"messages\[0\]: 'name' of a user message",
        ),
        (
            {"role": "function", "name": "f", "content": "1"},
            r"messages\[0\]: role 'function' has no equivalent",
        ),
        ({"role": "tool", "content": "1"}, r"messages\[0\]: a tool message needs its tool_call_id"),
        (
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c", "type": "custom", "custom": {"name": "g", "input": "x"}}
                ],
            },
            r"messages\[0\]\.tool_calls\[0\]: only function calls",
        ),
        (
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
            r"messages\[0\]\.content\[0\]: an assistant part other than text",
        ),
        (
            {"role": "user", "content": [{"type": "video"}]},
            r"a part of type 'video' has no equivalent",
        ),
    ],
)
def test_what_has_no_equivalent_is_refused_before_any_request(
    message: dict[str, Any], says: str
) -> None:
    sent: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(500))
    client = Client(
        base_url="http://llm.test/v1",
        model="m",
        api="responses",
        http_client=httpx.AsyncClient(transport=transport),
    )
    with pytest.raises(StreamUsageError, match=says):
        client.stream(messages=[message], schema=SCHEMA)
    assert sent == []
