"""ChunkDecoder: Chat Completions chunks -> deltas, without I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk._backend import Delta, Usage
from sdk._errors import BackendError, TransportError
from sdk._http._chunks import ChunkDecoder, error_from_payload


def chunk(
    delta: dict[str, Any] | None = None, *, finish: str | None = None, index: int = 0, **extra: Any
) -> str:
    choices = (
        []
        if delta is None and finish is None
        else [{"index": index, "delta": delta or {}, "finish_reason": finish}]
    )
    return json.dumps({"object": "chat.completion.chunk", "choices": choices, **extra})


def feed(decoder: ChunkDecoder, *datas: str) -> list[Delta]:
    out: list[Delta] = []
    for data in datas:
        out += decoder.feed_event("", data)
    return out


def test_content_then_finish_and_usage_as_one_last_delta() -> None:
    d = ChunkDecoder()
    out = feed(
        d,
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": '{"a"'}),
        chunk({"content": ": 1}"}),
        chunk(finish="stop"),
    )
    assert out == [Delta(text='{"a"'), Delta(text=": 1}")]
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    assert feed(d, chunk(usage=usage)) == [
        Delta(finish_reason="stop", usage=Usage(prompt_tokens=5, completion_tokens=3))
    ]
    assert feed(d, "[DONE]") == []
    assert d.done


def test_finish_without_usage_is_reported_at_done() -> None:
    d = ChunkDecoder()
    assert feed(d, chunk({"content": "1"}), chunk(finish="length")) == [Delta(text="1")]
    assert d.finished
    assert feed(d, "[DONE]") == [Delta(finish_reason="length")]


def test_finish_without_done_is_reported_at_end() -> None:
    d = ChunkDecoder()
    feed(d, chunk({"content": "1"}), chunk(finish="stop"))
    assert d.end() == [Delta(finish_reason="stop")]
    assert d.end() == []  # once


def test_nothing_pending_at_end() -> None:
    d = ChunkDecoder()
    feed(d, chunk({"content": "{"}))
    assert d.end() == []
    assert not d.finished


def test_usage_on_the_finish_chunk_itself() -> None:
    d = ChunkDecoder()
    out = feed(
        d,
        chunk({"content": "x"}, finish="stop", usage={"prompt_tokens": 1, "completion_tokens": 1}),
    )
    assert out == [Delta(text="x"), Delta(finish_reason="stop", usage=Usage(1, 1))]


def test_refusal_deltas() -> None:
    d = ChunkDecoder()
    out = feed(
        d,
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        chunk({"refusal": "I can't"}),
        chunk({"refusal": " do that"}),
    )
    assert out == [Delta(refusal="I can't"), Delta(refusal=" do that")]


def test_tool_call_arguments_by_index_with_the_name_first() -> None:
    d = ChunkDecoder(tools=True)
    out = feed(
        d,
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c0",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                    }
                ],
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "g", "arguments": "{"},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": "1}"}},
                    {"index": 1, "function": {"arguments": "}"}},
                ]
            }
        ),
    )
    assert out == [
        Delta(text="", tool_call=0, tool_name="f"),
        Delta(text='{"a":', tool_call=0),
        Delta(text="{", tool_call=1, tool_name="g"),
        Delta(text="1}", tool_call=0),
        Delta(text="}", tool_call=1),
    ]


def test_tool_call_without_index_uses_its_position() -> None:
    d = ChunkDecoder(tools=True)
    out = feed(d, chunk({"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}))
    assert out == [Delta(text="{}", tool_call=0, tool_name="f")]


def test_whitespace_content_is_dropped_in_tool_mode_only() -> None:
    assert feed(ChunkDecoder(tools=True), chunk({"content": "\n"})) == []
    assert feed(ChunkDecoder(tools=True), chunk({"content": "Sure"})) == [Delta(text="Sure")]
    assert feed(ChunkDecoder(), chunk({"content": "\n"})) == [Delta(text="\n")]


def test_logprobs_and_unknown_fields_are_ignored() -> None:
    d = ChunkDecoder()
    data = json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "x", "reasoning": "?"},
                    "logprobs": {"content": [{"token": "x"}]},
                }
            ],
            "timings": {"predicted_n": 1},
        }
    )
    assert feed(d, data) == [Delta(text="x")]


def test_a_second_choice_is_refused() -> None:
    d = ChunkDecoder()
    feed(d, chunk({"content": "{"}))
    with pytest.raises(BackendError, match="choice 1"):
        feed(d, chunk({"content": "{"}, index=1))


@pytest.mark.parametrize("data", ["", "   "])
def test_empty_data_is_a_keepalive(data: str) -> None:
    assert ChunkDecoder().feed_event("", data) == []


def test_unknown_event_types_are_ignored() -> None:
    assert ChunkDecoder().feed_event("ping", chunk({"content": "x"})) == []
    assert ChunkDecoder().feed_event("message", chunk({"content": "x"})) == [Delta(text="x")]


@pytest.mark.parametrize("data", ["{not json", "[1, 2]", '"text"'])
def test_malformed_data_is_a_transport_error(data: str) -> None:
    with pytest.raises(TransportError, match="malformed") as info:
        ChunkDecoder().feed_event("", data)
    assert info.value.retryable is False
    assert info.value.status is None


def test_error_event() -> None:
    with pytest.raises(TransportError, match="overloaded") as info:
        ChunkDecoder().feed_event("error", '{"error": {"message": "overloaded", "code": 503}}')
    assert info.value.status == 503
    assert info.value.retryable


def test_error_event_with_plain_text() -> None:
    with pytest.raises(TransportError, match="boom") as info:
        ChunkDecoder().feed_event("error", "boom")
    assert info.value.retryable


def test_error_object_inside_a_chunk() -> None:
    data = json.dumps(
        {"error": {"message": "bad grammar", "type": "invalid_request_error", "code": 400}}
    )
    with pytest.raises(TransportError, match="bad grammar") as info:
        ChunkDecoder().feed_event("", data)
    assert info.value.status == 400
    assert not info.value.retryable
    assert info.value.body is not None and "bad grammar" in info.value.body


@pytest.mark.parametrize(
    ("payload", "status", "retryable"),
    [
        ({"error": {"message": "m", "code": 429}}, 429, True),
        ({"error": {"message": "m", "code": "500"}}, 500, True),
        ({"error": {"message": "m", "code": 404}}, 404, False),
        ({"error": {"message": "m", "type": "invalid_request_error"}}, None, False),
        ({"error": {"message": "m", "type": "server_error", "code": None}}, None, True),
        ({"error": "plain"}, None, True),
        ({"message": "inner object", "code": 502}, 502, True),
    ],
)
def test_error_payload_status_and_retryable(
    payload: dict[str, Any], status: int | None, retryable: bool
) -> None:
    err = error_from_payload(payload, default="d")
    assert (err.status, err.retryable) == (status, retryable)
