"""Fine-grained tool streaming: every tool fieldstream defines is sent
``eager_input_streaming`` (checked against the ``anthropic`` package's own request type), and
on streams of the two recorded shapes the granularity shows: with the input buffered (one
``input_json_delta`` holding it all, as Claude sends it without the field) the first field is
final only at the end; with the input streamed, before the input's last byte. Each stream is
replayed whole, byte by byte and in random splits, and the anthropic SDK's accumulator reads
the same bytes as the oracle."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest

import sdk
from sdk import Client
from sdk._backend import GenerationRequest
from sdk._constraints import Tool, tools_of
from sdk._http.anthropic._request import anthropic_body
from tests.sdk._http_support import Body
from tests.sdk.http.openai._openai_types import openai_errors

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is a dev dependency")
from anthropic._streaming import SSEDecoder  # noqa: E402
from anthropic.lib.streaming._messages import accumulate_event  # noqa: E402
from anthropic.types.message_create_params import MessageCreateParamsStreaming  # noqa: E402

pytestmark = pytest.mark.anyio

CITY = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
}
DOCUMENT = '{"name": "Paris", "population": 2100000}'
MESSAGES = ({"role": "user", "content": "Which city?"},)


# ---------------------------------------------------------------- the body


def test_tool_mode_and_tools_are_sent_eager_input_streaming() -> None:
    request = GenerationRequest(messages=MESSAGES, schema=CITY, mode="tool")
    body = anthropic_body(request, model="claude")
    assert body["tools"][0]["eager_input_streaming"] is True
    assert openai_errors(body, MessageCreateParamsStreaming) == []
    many = GenerationRequest(
        messages=MESSAGES,
        schema={},
        mode="tool",
        tools=tools_of(
            [Tool("look", {"type": "object", "properties": {"q": {}}}), Tool("b", CITY)]
        ),
    )
    body = anthropic_body(many, model="claude")
    assert [t["eager_input_streaming"] for t in body["tools"]] == [True, True]
    assert openai_errors(body, MessageCreateParamsStreaming) == []
    assert (
        anthropic_body(request, model="claude", eager=False)["tools"][0]["eager_input_streaming"]
        is False
    )
    assert "eager_input_streaming" not in anthropic_body(request, model="c", eager=None)["tools"][0]
    # No tool, no field: the answer is text (output_config) there.
    text = anthropic_body(GenerationRequest(messages=MESSAGES, schema=CITY), model="claude")
    assert "tools" not in text


async def test_the_option_reaches_the_wire() -> None:
    sent: list[dict[str, Any]] = []
    raw = stream_of(fine_grained())

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)

    for option, expected in ((True, True), (False, False), (None, None)):
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        async with Client(
            provider="anthropic",
            base_url="http://anthropic.test",
            api_key="k",
            model="claude",
            http_client=http,
            eager_input_streaming=option,  # type: ignore[call-arg]  # Client types OpenAI's
        ) as client:
            async with client.stream(messages=list(MESSAGES), schema=CITY, mode="tool") as s:
                assert await s.result() == json.loads(DOCUMENT)
        await http.aclose()
        assert sent[-1]["tools"][0].get("eager_input_streaming") is expected
    with pytest.raises(TypeError, match="eager_input_streaming"):
        Client(provider="anthropic", api_key="k", eager_input_streaming="yes")  # type: ignore[call-arg]


# ---------------------------------------------------------------- the two shapes


def event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def stream_of(pieces: list[str]) -> bytes:
    """A tool-mode message whose tool input arrives as ``pieces``."""
    start: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-test",
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    block = {"type": "tool_use", "id": "toolu_1", "name": "City", "input": {}}
    return b"".join(
        [
            event("message_start", message=start),
            event("content_block_start", index=0, content_block=block),
            event("ping"),
            *(
                event(
                    "content_block_delta",
                    index=0,
                    delta={"type": "input_json_delta", "partial_json": p},
                )
                for p in pieces
            ),
            event("content_block_stop", index=0),
            event(
                "message_delta",
                delta={"stop_reason": "tool_use", "stop_sequence": None},
                usage={"output_tokens": 20},
            ),
            event("message_stop"),
        ]
    )


def buffered() -> list[str]:
    """Without fine-grained streaming: the whole input, validated, in one delta."""
    return [DOCUMENT]


def fine_grained() -> list[str]:
    """With it: the input as it is written, a few characters per delta."""
    return [DOCUMENT[i : i + 4] for i in range(0, len(DOCUMENT), 4)]


def chunkings(raw: bytes, rng: random.Random) -> list[list[bytes]]:
    """The body whole, one byte at a time, and three random splits."""
    out = [[raw], [raw[i : i + 1] for i in range(len(raw))]]
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(raw)), k=rng.randint(1, 40)))
        out.append([raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)])
    return out


def sdk_input(raw: bytes) -> Any:
    """The tool's input as the anthropic SDK's accumulator reads ``raw``."""
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for sse in SSEDecoder().iter_bytes(iter([raw])):
        if sse.event != "ping":
            snapshot = accumulate_event(
                event=json.loads(sse.data), current_snapshot=snapshot, json_bufs=buffers
            )
    (block,) = snapshot.content
    return block.input


async def first_field_at(parts: list[bytes]) -> tuple[int, Any]:
    """How many bytes of the body had been read when the first field was final, and the
    result."""
    body = Body(parts)
    at: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with (
        Client(
            provider="anthropic",
            base_url="http://anthropic.test",
            api_key="k",
            model="claude",
            http_client=http,
        ) as client,
        client.stream(messages=list(MESSAGES), schema=CITY, mode="tool") as s,
    ):
        async for ev in s:
            if isinstance(ev, sdk.FieldEvent) and not at:
                at.append(sum(len(p) for p in parts[: body.pulled]))
        value = await s.result()
    await http.aclose()
    return at[0], value


@pytest.mark.parametrize("shape", [buffered, fine_grained])
async def test_both_shapes_read_as_the_sdk_reads_them(shape: Any) -> None:
    raw = stream_of(shape())
    expected = sdk_input(raw)
    assert expected == json.loads(DOCUMENT)
    for parts in chunkings(raw, random.Random(shape.__name__)):
        _, value = await first_field_at(parts)
        assert value == expected


async def test_buffered_the_first_field_is_final_only_at_the_end() -> None:
    raw = stream_of(buffered())
    # The byte after which no input is left: the end of the one input_json_delta event.
    input_end = raw.index(b"event: content_block_stop")
    at, _ = await first_field_at([raw[i : i + 1] for i in range(len(raw))])
    assert at == input_end  # "name" waited for the whole input


async def test_fine_grained_the_first_field_is_final_before_the_last_byte() -> None:
    raw = stream_of(fine_grained())
    last_delta = raw.rindex(b"event: content_block_delta")  # where the input's last piece starts
    at, _ = await first_field_at([raw[i : i + 1] for i in range(len(raw))])
    assert at < last_delta
    # "name" is final at the event that brings the comma after "Paris": the 4th piece.
    fourth = raw.index(json.dumps({"partial_json": fine_grained()[3]})[1:-1].encode())
    assert at == raw.index(b"event: content_block_delta", fourth + 1)  # that event's end
