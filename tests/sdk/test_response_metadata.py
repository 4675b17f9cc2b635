"""What comes back besides the document, on each attempt's record: the response id, the
``system_fingerprint``, the finish reason and, when asked for, each token's log probabilities
(Chat Completions and the Responses API, from hand-made and recorded streams)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from sdk import Client

pytestmark = pytest.mark.anyio

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
MESSAGES = [{"role": "user", "content": "hi"}]
DATA = Path(__file__).resolve().parents[1] / "data" / "openai_responses"


def token(text: str, logprob: float) -> dict[str, Any]:
    return {
        "token": text,
        "logprob": logprob,
        "bytes": list(text.encode()),
        "top_logprobs": [{"token": text, "logprob": logprob, "bytes": list(text.encode())}],
    }


def chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": finish}
    if content is not None:
        choice["delta"] = {"content": content}
        choice["logprobs"] = {"content": [token(content, -0.25)], "refusal": None}
    return {
        "id": "chatcmpl-42",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_abc",
        "choices": [choice],
        **extra,
    }


def sse(*events: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def client(text: str, *, api: str = "chat", seen: list[dict[str, Any]] | None = None) -> Client:
    def reply(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)

    http = httpx.AsyncClient(transport=httpx.MockTransport(reply))
    return Client(base_url="http://llm.test/v1", model="m", api=api, http_client=http)  # type: ignore[arg-type]


async def test_a_chat_attempt_records_id_fingerprint_finish_reason_and_logprobs() -> None:
    text = sse(chunk('{"a"'), chunk(": 7}"), chunk(finish="stop"))
    seen: list[dict[str, Any]] = []
    async with client(text, seen=seen) as c:
        async with c.stream(messages=MESSAGES, schema=SCHEMA, logprobs=True, top_logprobs=1) as s:
            assert await s.result() == {"a": 7}
        (record,) = s.attempts
    assert (seen[0]["logprobs"], seen[0]["top_logprobs"]) == (True, 1)
    assert record.response_id == "chatcmpl-42"
    assert record.system_fingerprint == "fp_abc"
    assert record.finish_reason == "stop"
    assert record.logprobs == (token('{"a"', -0.25), token(": 7}", -0.25))
    assert "".join(t["token"] for t in record.logprobs) == record.text


async def test_without_logprobs_asked_there_are_none() -> None:
    plain = [{k: v for k, v in chunk(t).items()} for t in ('{"a": 1}',)]
    for event in plain:
        del event["choices"][0]["logprobs"]
    async with client(sse(*plain, chunk(finish="stop"))) as c:
        async with c.stream(messages=MESSAGES, schema=SCHEMA) as s:
            await s.result()
    assert s.attempts[0].logprobs == ()
    assert s.attempts[0].response_id == "chatcmpl-42"


async def test_a_responses_attempt_records_its_id_and_logprobs() -> None:
    events = [
        {
            "type": "response.created",
            "response": {"id": "resp_1", "model": "gpt-4.1", "status": "in_progress"},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "m",
            "delta": '{"a": 3}',
            "logprobs": [token('{"a": 3}', -0.5)],
        },
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "usage": {"input_tokens": 5, "output_tokens": 4},
            },
        },
    ]
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    seen: list[dict[str, Any]] = []
    async with client(text, api="responses", seen=seen) as c:
        async with c.stream(messages=MESSAGES, schema=SCHEMA, logprobs=True, top_logprobs=2) as s:
            assert await s.result() == {"a": 3}
    assert seen[0]["include"] == ["message.output_text.logprobs"]
    record = s.attempts[0]
    assert (record.response_id, record.finish_reason) == ("resp_1", "stop")
    assert record.logprobs == (token('{"a": 3}', -0.5),)


async def test_the_recorded_responses_stream_gives_its_id() -> None:
    text = (DATA / "json_output.sse").read_text()
    expected = json.loads(text.split("data: ", 1)[1].split("\n", 1)[0])["response"]["id"]
    async with client(text, api="responses") as c:
        async with c.stream(
            messages=MESSAGES,
            schema={"type": "object"},
        ) as s:
            await s.result()
    assert s.attempts[-1].response_id == expected
    assert s.attempts[-1].finish_reason == "stop"
