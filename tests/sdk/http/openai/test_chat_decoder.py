"""ChunkDecoder: Chat Completions chunks -> deltas, without I/O."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sdk._backend import Delta, Usage
from sdk._errors import BackendError, BadRequestError, TransportError
from sdk._http.openai._chat_decoder import ChunkDecoder, error_from_payload


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


def test_logprobs_go_with_their_text_and_unknown_fields_are_ignored() -> None:
    d = ChunkDecoder()
    data = json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "x", "audio": "?"},
                    "logprobs": {"content": [{"token": "x"}]},
                }
            ],
            "timings": {"predicted_n": 1},
        }
    )
    assert feed(d, data) == [Delta(text="x", logprobs=({"token": "x"},))]


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_is_a_reasoning_delta_before_the_content_of_its_chunk(key: str) -> None:
    d = ChunkDecoder()
    assert feed(d, chunk({key: "Let me think {"})) == [Delta(reasoning="Let me think {")]
    both = feed(d, chunk({key: " done.", "content": "{"}))
    assert both == [Delta(reasoning=" done."), Delta(text="{")]
    assert feed(d, chunk({key: None, "content": "}"})) == [Delta(text="}")]
    assert feed(d, chunk({key: ""})) == []


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
    assert isinstance(info.value, BadRequestError)  # a status in the stream: its class
    assert not info.value.retryable
    # The error object itself, as for a status error (openai-python's body in both cases).
    assert info.value.body == json.loads(data)["error"]
    assert (info.value.code, info.value.type) == (400, "invalid_request_error")


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


# -- the short path for content chunks must decide exactly as the general path does ----------

CORPUS = sorted((Path(__file__).parents[3] / "data" / "openai_sse").glob("*.sse"))


def outcome(decoder: ChunkDecoder, event: str, data: str) -> object:
    """The deltas for one event, or the type and message of the error it raises."""
    try:
        return decoder.feed_event(event, data)
    except (TransportError, BackendError) as exc:
        return (type(exc), str(exc))


def general(decoder: ChunkDecoder, event: str, data: str) -> object:
    """The same event through the general path: json.loads and feed_chunk."""
    if data.strip() == "[DONE]":
        decoder.done = True
        return decoder.end()
    try:
        return decoder.feed_chunk(json.loads(data))
    except (TransportError, BackendError) as exc:
        return (type(exc), str(exc))


def variants(data: str) -> list[str]:
    """A recorded chunk, and the same chunk with each thing the short path must notice."""
    base = json.loads(data)
    if not base.get("choices"):
        return [data]

    def edit(change: Any) -> str:
        chunk = json.loads(data)
        change(chunk, chunk["choices"][0])
        return json.dumps(chunk)

    return [
        data,
        edit(lambda c, ch: ch.update(finish_reason="stop")),
        edit(lambda c, ch: ch.update(finish_reason="length", index=None)),
        edit(lambda c, ch: c.update(usage={"prompt_tokens": 1, "completion_tokens": 2})),
        edit(lambda c, ch: ch["delta"].update(refusal="no")),
        edit(lambda c, ch: ch["delta"].update(tool_calls=[{"index": 0, "function": {}}])),
        edit(lambda c, ch: ch.update(index=1)),
        edit(lambda c, ch: c["choices"].append(dict(ch))),
        edit(lambda c, ch: c.update(error={"message": "late", "code": 500})),
        edit(lambda c, ch: ch["delta"].update(content=" \n")),
        edit(lambda c, ch: ch["delta"].update(content=7)),
        edit(lambda c, ch: ch.update(delta=["not", "a", "dict"])),
    ]


@pytest.mark.parametrize("tools", [False, True], ids=["content", "tool-mode"])
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_short_path_gives_what_the_general_path_gives(path: Path, tools: bool) -> None:
    datas = [
        part.removeprefix(b"data: ").decode()
        for part in path.read_bytes().split(b"\n\n")
        if part.strip()
    ]
    for i in range(len(datas)):
        for variant in variants(datas[i]) if datas[i] != "[DONE]" else [datas[i]]:
            fast, slow = ChunkDecoder(tools=tools), ChunkDecoder(tools=tools)
            for data in datas[:i]:  # the same state before the event under test
                assert outcome(fast, "", data) == general(slow, "", data)
            assert outcome(fast, "", variant) == general(slow, "", variant), variant
            # What it left behind: the finish reason and usage reported at the end.
            assert fast.finished == slow.finished
            assert outcome(fast, "", "[DONE]") == general(slow, "", "[DONE]"), variant
        if isinstance(outcome(ChunkDecoder(tools=tools), "", datas[i]), tuple):
            break  # the stream fails here (a second choice): nothing after it is read


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (r"\ud83d\ude00", "\U0001f600"),  # a surrogate pair in escapes: one character
        (r"\ud83d", "\ud83d"),  # a lone surrogate: passed on as json.loads reads it
        (r"tab\tquote\"back\\slash\u00e9", 'tab\tquote"back\\slash\u00e9'),
        ("\U0001f600 é", "\U0001f600 é"),
    ],
)
def test_content_is_read_as_json_loads_reads_it(content: str, text: str) -> None:
    data = '{"choices":[{"index":0,"delta":{"content":"' + content + '"}}]}'
    assert json.loads(data)["choices"][0]["delta"]["content"] == text
    assert ChunkDecoder().feed_event("", data) == [Delta(text=text)]


def test_a_chunk_nested_too_deep_is_malformed() -> None:
    with pytest.raises(TransportError, match="malformed") as info:
        ChunkDecoder().feed_event("", '{"choices":' + "[" * 100_000 + "]" * 100_000 + "}")
    assert not info.value.retryable
