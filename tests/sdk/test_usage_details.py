"""Usage, honestly: every detail the server sends kept (cached and reasoning tokens, Chat and
Responses), an aborted attempt's prompt counted (the backend's estimate where the server said
nothing, marked so), and the sum over attempts the same on ``stream.usage``, the end event and a
batch result."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sdk import Client, Retry, StreamEnded, Usage
from sdk._http._transport import encode_body, estimate_tokens
from sdk._http.openai._chat_request import chat_body

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
MESSAGES = [{"role": "user", "content": "Give a."}]
CHAT_USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 90,
    "total_tokens": 1290,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 64,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}


def sse(*texts: str, usage: dict[str, Any] | None = None) -> str:
    chunks: list[dict[str, Any]] = [
        {"id": "c", "choices": [{"index": 0, "delta": {"content": t}}]} for t in texts
    ]
    if usage is not None:
        chunks.append({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        chunks.append({"id": "c", "choices": [], "usage": usage})
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return body + ("data: [DONE]\n\n" if usage is not None else "")


def client(*replies: str, api: str = "chat") -> tuple[Client, list[bytes]]:
    sent: list[bytes] = []
    queue = list(replies)

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=queue.pop(0))

    http = httpx.AsyncClient(transport=httpx.MockTransport(reply))
    return Client(base_url="http://llm.test/v1", model="m", api=api, http_client=http), sent  # type: ignore[arg-type]


async def test_every_detail_of_the_chat_usage_is_kept() -> None:
    c, _ = client(sse('{"a": 1}', usage=CHAT_USAGE))
    async with c, c.stream(messages=MESSAGES, schema=SCHEMA) as s:
        await s.result()
    assert s.usage == Usage(
        1200,
        90,
        prompt_tokens_details={"cached_tokens": 1024, "audio_tokens": 0},
        completion_tokens_details=CHAT_USAGE["completion_tokens_details"],
    )
    assert (s.usage.cached_tokens, s.usage.reasoning_tokens) == (1024, 64)
    assert not s.usage.estimated


async def test_the_responses_details_are_kept_under_the_chat_names() -> None:
    events = [
        {"type": "response.output_text.delta", "delta": '{"a": 2}'},
        {
            "type": "response.completed",
            "response": {
                "usage": {
                    "input_tokens": 300,
                    "input_tokens_details": {"cached_tokens": 256},
                    "output_tokens": 40,
                    "output_tokens_details": {"reasoning_tokens": 32},
                    "total_tokens": 340,
                }
            },
        },
    ]
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    c, _ = client(text, api="responses")
    async with c, c.stream(messages=MESSAGES, schema=SCHEMA) as s:
        await s.result()
    assert (s.usage.prompt_tokens, s.usage.completion_tokens) == (300, 40)
    assert (s.usage.cached_tokens, s.usage.reasoning_tokens) == (256, 32)


async def test_an_aborted_attempt_counts_its_prompt_and_the_sum_is_the_same_everywhere() -> None:
    # Attempt 1 breaks the schema at its second token and is aborted: the server never sent its
    # usage. Attempt 2 succeeds and reports its own.
    c, sent = client(sse('{"a": ', '"x"'), sse('{"a": 3}', usage=CHAT_USAGE))
    async with (
        c,
        c.stream(messages=MESSAGES, schema=SCHEMA, retry=Retry(max_attempts=2), progress=True) as s,
    ):
        events = [ev async for ev in s]
        assert await s.result() == {"a": 3}
    first, second = s.attempts
    assert first.error is not None
    # The estimate is the first request's body, about four bytes a token, and says so.
    assert first.usage.prompt_tokens == estimate_tokens(sent[0]) > 0
    assert first.usage.completion_tokens == 2 and first.usage.estimated
    assert second.usage.prompt_tokens == 1200 and not second.usage.estimated
    total = first.usage + second.usage
    assert total.prompt_tokens == estimate_tokens(sent[0]) + 1200
    assert total.cached_tokens == 1024 and total.estimated
    assert s.usage == total
    (ended,) = [ev for ev in events if isinstance(ev, StreamEnded)]
    assert ended.usage == total


async def test_the_estimate_is_what_the_request_body_says() -> None:
    from sdk._backend import GenerationRequest

    body = chat_body(GenerationRequest(messages=tuple(MESSAGES), schema=SCHEMA), model="m")
    assert estimate_tokens(encode_body(body)) == (len(encode_body(body)) + 3) // 4


async def test_a_batch_result_carries_the_sum() -> None:
    c, _ = client(sse('{"a": ', '"x"'), sse('{"a": 3}', usage=CHAT_USAGE))
    async with (
        c,
        c.batch(
            [{"id": "r1", "prompt": "Give a."}], schema=SCHEMA, retry=Retry(max_attempts=2)
        ) as results,
    ):
        (result,) = [r async for r in results]
    assert result.ok and result.attempts == 2
    assert result.usage.prompt_tokens > 1200 and result.usage.estimated
    assert result.usage.reasoning_tokens == 64


async def test_an_attempt_with_no_output_costs_no_prompt() -> None:
    from sdk._stream._attempt import AttemptState
    from sdk._trackers._target import compile_target

    state = AttemptState(1, compile_target(SCHEMA, None))
    state.prompt_estimate = 500
    assert state.usage == Usage()  # nothing came: the server may not have read it
    state.feed('{"a"')
    assert state.usage == Usage(500, 1, estimated=True)


def test_usage_with_details_stays_a_hashable_value() -> None:
    a = Usage(5, 2, prompt_tokens_details={"cached_tokens": 4})
    b = Usage(5, 2, prompt_tokens_details={"cached_tokens": 4})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a + b == Usage(10, 4, prompt_tokens_details={"cached_tokens": 8})
    assert (a + b) - a == a
