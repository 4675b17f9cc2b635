"""The Responses API event decoder, sans-I/O: the streams in tests/data/openai_responses, and
each rule on its own (llama.cpp's events, which carry neither sequence numbers nor output
indices, included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sdk._backend import Delta, Usage
from sdk._errors import TransportError
from sdk._http.openai._responses_decoder import ResponsesDecoder

DATA = Path(__file__).resolve().parents[3] / "data" / "openai_responses"
NAMES = sorted(p.stem for p in DATA.glob("*.sse"))
# The recorded usage carries its details (cached, reasoning tokens), kept as they came.
DETAILS: dict[str, Any] = {
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}


def events(name: str) -> list[tuple[str, str]]:
    """The (event, data) pairs of a stream file."""
    out = []
    for block in (DATA / f"{name}.sse").read_text().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], lines["data"]))
    return out


def decode(name: str, **kw: Any) -> list[Delta]:
    decoder = ResponsesDecoder(**kw)
    return [d for event, data in events(name) for d in decoder.feed_event(event, data)]


@pytest.mark.parametrize("name", NAMES)
def test_the_streams_are_consistent_in_themselves(name: str) -> None:
    # The SSE event name is the data's type; sequence numbers count from 0; each item's and
    # each call's deltas add up to what its .done event says.
    pairs = events(name)
    payloads = [json.loads(data) for _, data in pairs]
    assert [event for event, _ in pairs] == [p["type"] for p in payloads]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    pieces: dict[str, str] = {}
    for p in payloads:
        if p["type"].endswith(".delta"):
            pieces[p["item_id"]] = pieces.get(p["item_id"], "") + p["delta"]
        elif p["type"] in ("response.output_text.done", "response.refusal.done"):
            assert pieces[p["item_id"]] == p.get("text", p.get("refusal"))
        elif p["type"] == "response.function_call_arguments.done":
            assert pieces[p["item_id"]] == p["arguments"]
            json.loads(p["arguments"])
    last = payloads[-1]
    assert last["type"] in ("response.completed", "response.incomplete", "response.failed", "error")


def test_json_output() -> None:
    deltas = decode("json_output")
    text = "".join(d.text for d in deltas)
    assert json.loads(text) == {
        "city": "Paris",
        "temperature_c": 18.5,
        "conditions": "partly cloudy",
    }
    assert deltas[-1] == Delta(finish_reason="stop", usage=Usage(52, 18, **DETAILS))
    assert all(d.tool_call is None for d in deltas)


def test_tool_calls_name_and_id_on_the_first_delta_and_arguments_by_item() -> None:
    deltas = decode("tool_calls", tools=True)
    firsts = [d for d in deltas if d.tool_name is not None]
    assert [(d.tool_call, d.tool_name, d.tool_call_id, d.text) for d in firsts] == [
        (0, "get_weather", "call_Xk3vQ2pL8mN4rT6yW1zA9bC5", ""),
        (1, "get_stock_price", "call_Hj7fR2sD4gK9lP1qZ8xV3nM6", ""),
    ]
    args = {i: "".join(d.text for d in deltas if d.tool_call == i) for i in (0, 1)}
    assert json.loads(args[0]) == {"city": "Paris"}
    assert json.loads(args[1]) == {"ticker": "AAPL", "exchange": "NASDAQ"}
    assert deltas[-1] == Delta(finish_reason="tool_calls", usage=Usage(87, 41, **DETAILS))


def test_refusal() -> None:
    deltas = decode("refusal")
    assert "".join(d.refusal or "" for d in deltas) == "I'm sorry, I can't help with that."
    assert not any(d.text for d in deltas)


@pytest.mark.parametrize(
    ("name", "reason", "usage"),
    [
        ("incomplete_max_output_tokens", "length", Usage(52, 16, **DETAILS)),
        ("incomplete_content_filter", "content_filter", Usage(52, 5, **DETAILS)),
    ],
)
def test_incomplete_has_the_finish_reason_of_chat_completions(
    name: str, reason: str, usage: Usage
) -> None:
    decoder = ResponsesDecoder()
    deltas = [d for e, data in events(name) for d in decoder.feed_event(e, data)]
    raw = name.removeprefix("incomplete_")  # the API's own word is kept when it is another
    said = {"stop_reason": raw} if raw != reason else None
    assert deltas[-1] == Delta(finish_reason=reason, usage=usage, response=said)
    assert decoder.done


def test_a_failed_response_is_a_transport_error_retryable_by_its_code() -> None:
    with pytest.raises(
        TransportError, match=r"failed to generate a response\. \(server_error\)"
    ) as info:
        decode("failed")
    assert info.value.retryable and info.value.status is None
    assert info.value.body["code"] == "server_error"  # the error object, as a status's body
    assert info.value.code == "server_error"


def test_an_error_event_is_a_transport_error() -> None:
    with pytest.raises(TransportError, match="Rate limit reached") as info:
        decode("error_event")
    assert info.value.retryable


@pytest.mark.parametrize(
    ("error", "status", "retryable"),
    [
        ({"code": "invalid_prompt", "message": "no"}, None, False),
        ({"code": "rate_limit_exceeded", "message": "slow down"}, None, True),
        ({"code": 400, "message": "bad"}, 400, False),
        ({"code": "503", "message": "busy"}, 503, True),
        ({"message": "something broke"}, None, True),
    ],
)
def test_error_codes_decide_whether_a_retry_may_help(
    error: dict[str, Any], status: int | None, retryable: bool
) -> None:
    with pytest.raises(TransportError) as info:
        ResponsesDecoder().feed("error", {"type": "error", **error})
    assert (info.value.status, info.value.retryable) == (status, retryable)


@pytest.mark.parametrize(
    ("error", "status", "retryable"),
    [
        ({"code": "invalid_prompt", "message": "no"}, None, False),
        ({"code": "rate_limit_exceeded", "message": "slow down"}, None, True),
        ({"code": 429, "message": "slow down"}, 429, True),
        ({"code": None, "message": "something broke"}, None, True),
    ],
)
def test_error_events_in_openais_nested_shape_keep_message_and_code(
    error: dict[str, Any], status: int | None, retryable: bool
) -> None:
    # OpenAI's own shape: {"type": "error", "error": {"type", "code", "message", "param"}}.
    payload = {"type": "error", "error": {"type": "invalid_request_error", "param": None, **error}}
    with pytest.raises(TransportError) as info:
        ResponsesDecoder().feed("error", payload)
    assert (info.value.status, info.value.retryable) == (status, retryable)
    assert error["message"] in str(info.value)
    if isinstance(error["code"], str):
        assert f"({error['code']})" in str(info.value)
    assert info.value.body == payload["error"]  # the error object, as a status's body
    assert (info.value.code, info.value.type) == (error["code"], "invalid_request_error")


def test_llama_cpp_events_without_indices_or_sequence_numbers() -> None:
    # As xllamacpp's /v1/responses streams them (seen on the suite's server).
    decoder = ResponsesDecoder()
    out = []
    for data in [
        {
            "type": "response.created",
            "response": {"id": "resp_x", "object": "response", "status": "in_progress"},
        },
        {
            "type": "response.output_item.added",
            "item": {
                "content": [],
                "id": "msg_x",
                "role": "assistant",
                "status": "in_progress",
                "type": "message",
            },
        },
        {"type": "response.output_text.delta", "item_id": "msg_x", "delta": "{"},
        {"type": "response.output_text.delta", "item_id": "msg_x", "delta": "}"},
        {
            "type": "response.completed",
            "response": {
                "status": "completed",
                "usage": {"input_tokens": 40, "output_tokens": 2, "total_tokens": 42},
            },
        },
    ]:
        out.extend(decoder.feed_event(data["type"], json.dumps(data)))
    assert out == [
        Delta(response={"id": "resp_x"}),  # the response's id, once
        Delta(text="{"),
        Delta(text="}"),
        Delta(finish_reason="stop", usage=Usage(40, 2)),
    ]
    assert decoder.done


def test_whitespace_text_is_dropped_when_a_tool_call_was_asked_for() -> None:
    event = {"type": "response.output_text.delta", "delta": "\n"}
    assert ResponsesDecoder(tools=True).feed_event("", json.dumps(event)) == []
    assert ResponsesDecoder().feed_event("", json.dumps(event)) == [Delta(text="\n")]


@pytest.mark.parametrize("data", ["not json", "[1, 2]"])
def test_a_malformed_event_is_a_transport_error(data: str) -> None:
    with pytest.raises(TransportError, match="malformed stream"):
        ResponsesDecoder().feed_event("", data)


@pytest.mark.parametrize(
    "kind", ["response.reasoning_text.delta", "response.reasoning_summary_text.delta"]
)
def test_reasoning_text_is_a_reasoning_delta(kind: str) -> None:
    decoder = ResponsesDecoder()
    assert decoder.feed(kind, {"delta": "Let me see {"}) == [Delta(reasoning="Let me see {")]
    assert decoder.feed(kind, {"delta": ""}) == []


def test_keep_alives_unknown_events_and_a_second_terminal_event_say_nothing() -> None:
    decoder = ResponsesDecoder()
    assert decoder.feed_event("", "") == []
    assert decoder.feed("response.reasoning_text.done", {"text": "hmm"}) == []
    assert (
        decoder.feed("response.function_call_arguments.delta", {"item_id": "nope", "delta": "{"})
        == []
    )
    assert decoder.feed("response.completed", {"response": {}}) == [Delta(finish_reason="stop")]
    assert decoder.feed("response.completed", {"response": {}}) == []
    assert decoder.end() == []
