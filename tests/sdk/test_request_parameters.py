"""The request parameters openai-python names, by name on ``Client.stream``: checked at the call,
written into each API's body as OpenAI reads it (checked against the ``openai`` package's
``CompletionCreateParamsStreaming`` / ``ResponseCreateParamsStreaming``), the token limit under
the name each server reads, and refused before any request where the Responses API has no
equivalent."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

from sdk import Client, UnsupportedConstraint
from sdk._backend import GenerationRequest
from sdk._http.openai._chat_request import chat_body
from sdk._http.openai._responses_request import responses_body
from sdk._options import split_options
from tests.sdk.http.openai._openai_types import openai_errors

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
EVERY: dict[str, Any] = {
    "stop": ["\n\n", "END"],
    "logprobs": True,
    "top_logprobs": 3,
    "parallel_tool_calls": False,
    "reasoning_effort": "low",
    "user": "user-1",
    "metadata": {"run": "7"},
    "store": False,
    "service_tier": "flex",
    "frequency_penalty": 0.5,
    "presence_penalty": -0.5,
    "prediction": {"type": "content", "content": '{"a": 1}'},
    "stream_options": {"include_obfuscation": False},
    "max_completion_tokens": 64,
}
RESPONSES_ONES = {
    k: v
    for k, v in EVERY.items()
    if k not in ("stop", "frequency_penalty", "presence_penalty", "prediction")
}


def request(**options: Any) -> GenerationRequest:
    """The request ``Client.stream(**options)`` would build (the options split and checked)."""
    _, fields = split_options(options, where="Client.stream", request=True)
    return GenerationRequest(messages=({"role": "user", "content": "hi"},), schema=SCHEMA, **fields)


@pytest.mark.parametrize("server", [None, "openai", "vllm", "llamacpp"])
def test_every_parameter_goes_into_the_chat_body_as_openai_types_it(server: str | None) -> None:
    body = chat_body(request(**EVERY), model="o4-mini", server=server)  # type: ignore[arg-type]
    for name, value in EVERY.items():
        if name != "stream_options":
            assert body[name] == value, name
    assert body["stream_options"] == {"include_usage": True, "include_obfuscation": False}
    assert "max_tokens" not in body
    assert openai_errors(body, CompletionCreateParamsStreaming) == []


def test_the_responses_api_gets_its_own_names() -> None:
    body = responses_body(request(**RESPONSES_ONES), model="o4-mini", server="openai")
    assert body["max_output_tokens"] == 64
    assert body["reasoning"] == {"effort": "low"}
    assert body["include"] == ["message.output_text.logprobs"]
    assert body["top_logprobs"] == 3
    assert body["stream_options"] == {"include_obfuscation": False}  # usage always comes
    for name in ("user", "metadata", "store", "service_tier", "parallel_tool_calls"):
        assert body[name] == EVERY[name]
    for name in ("max_completion_tokens", "reasoning_effort", "logprobs"):
        assert name not in body
    assert openai_errors(body, ResponseCreateParamsStreaming) == []
    given = responses_body(
        request(reasoning_effort="high", reasoning_summary="auto"), model="o4-mini", server=None
    )
    assert given["reasoning"] == {"effort": "high", "summary": "auto"}
    assert openai_errors(given, ResponseCreateParamsStreaming) == []


@pytest.mark.parametrize(
    ("server", "given", "sent"),
    [
        ("openai", {"max_tokens": 50}, {"max_completion_tokens": 50}),
        ("openai", {"max_completion_tokens": 50}, {"max_completion_tokens": 50}),
        (None, {"max_tokens": 50}, {"max_tokens": 50}),
        ("vllm", {"max_tokens": 50}, {"max_tokens": 50}),
        ("llamacpp", {"max_tokens": 50}, {"max_tokens": 50}),
        (None, {"max_completion_tokens": 50}, {"max_completion_tokens": 50}),
        ("vllm", {"max_completion_tokens": 50}, {"max_completion_tokens": 50}),
        ("llamacpp", {"max_completion_tokens": 50}, {"max_completion_tokens": 50}),
    ],
)
def test_the_token_limit_goes_under_the_name_each_server_reads(
    server: str | None, given: dict[str, int], sent: dict[str, int]
) -> None:
    body = chat_body(request(**given), model="m", server=server)  # type: ignore[arg-type]
    limits = {k: v for k, v in body.items() if k in ("max_tokens", "max_completion_tokens")}
    assert limits == sent
    assert responses_body(request(**given), model="m", server=server)["max_output_tokens"] == 50  # type: ignore[arg-type]


def test_stream_options_can_be_removed() -> None:
    assert "stream_options" not in chat_body(request(stream_options={}), model="m")
    assert chat_body(request(), model="m")["stream_options"] == {"include_usage": True}
    body = chat_body(request(stream_options={"include_usage": False}), model="m")
    assert body["stream_options"] == {"include_usage": False}


def test_a_reasoning_summary_is_refused_on_chat() -> None:
    client = Client(base_url="http://llm.test/v1", model="m")
    with pytest.raises(UnsupportedConstraint, match="reasoning_summary= has no equivalent"):
        client.stream(
            messages=[{"role": "user", "content": "hi"}], schema=SCHEMA, reasoning_summary="auto"
        )


@pytest.mark.parametrize(
    ("options", "error", "says"),
    [
        ({"max_tokens": 5, "max_completion_tokens": 5}, ValueError, "not both"),
        ({"max_completion_tokens": 0}, TypeError, "max_completion_tokens must be an int >= 1"),
        ({"stop": ["a", "b", "c", "d", "e"]}, TypeError, "stop must be a str or a list"),
        ({"top_logprobs": 21}, TypeError, "top_logprobs must be an int from 0 to 20"),
        ({"reasoning_effort": "huge"}, TypeError, "reasoning_effort must be one of"),
        ({"service_tier": "gold"}, TypeError, "service_tier must be one of"),
        ({"metadata": {"a": 1}}, TypeError, "metadata must be a mapping of str to str"),
        ({"frequency_penalty": 3}, TypeError, "frequency_penalty must be a number from -2"),
        ({"prediction": {"content": "x"}}, TypeError, "prediction must be"),
        ({"stream_options": {"usage": True}}, TypeError, "stream_options must be"),
        ({"logprobs": "yes"}, TypeError, "logprobs must be True or False"),
        ({"temperature": float("inf")}, TypeError, "temperature must be a finite number >= 0"),
        ({"temperature": float("nan")}, TypeError, "temperature must be a finite number >= 0"),
        ({"temperature": -0.5}, TypeError, "temperature must be a finite number >= 0"),
    ],
)
def test_each_parameter_is_checked_at_the_call(
    options: dict[str, Any], error: type[Exception], says: str
) -> None:
    client = Client(base_url="http://llm.test/v1", model="m")
    with pytest.raises(error, match=says):
        client.stream(messages=[{"role": "user", "content": "hi"}], schema=SCHEMA, **options)


@pytest.mark.parametrize("name", ["stop", "frequency_penalty", "presence_penalty", "prediction"])
def test_what_the_responses_api_lacks_is_refused_before_any_request(name: str) -> None:
    sent: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(500))
    client = Client(
        base_url="http://llm.test/v1",
        model="m",
        api="responses",
        http_client=httpx.AsyncClient(transport=transport),
    )
    with pytest.raises(UnsupportedConstraint, match=f"{name}= has no equivalent"):
        client.stream(
            messages=[{"role": "user", "content": "hi"}], schema=SCHEMA, **{name: EVERY[name]}
        )
    assert sent == []


@pytest.mark.anyio
async def test_the_parameters_reach_the_wire() -> None:
    bodies: list[dict[str, Any]] = []

    def reply(req: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(req.content))
        events = [
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": '{"a": 1}'}}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)

    http = httpx.AsyncClient(transport=httpx.MockTransport(reply))
    async with Client(
        base_url="http://llm.test/v1", model="o4-mini", server="openai", http_client=http
    ) as client:
        async with client.stream(
            messages=[{"role": "user", "content": "hi"}],
            schema=SCHEMA,
            max_tokens=100,
            reasoning_effort="minimal",
            stop="END",
            user="u",
        ) as stream:
            assert await stream.result() == {"a": 1}
    (body,) = bodies
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body
    assert (body["reasoning_effort"], body["stop"], body["user"]) == ("minimal", "END", "u")
    assert openai_errors(body, CompletionCreateParamsStreaming) == []
