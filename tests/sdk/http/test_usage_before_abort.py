"""What a provider reported before an abort survives it: a violation closes the stream before
its end, and the attempt's usage is still the prompt tokens the provider said (Anthropic's
``message_start``, Gemini's ``usageMetadata``), not the client's estimate."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field

import sdk
from sdk import Client
from tests.sdk.http.anthropic.test_wire import Server, start, stop, stream, text_block

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "A city?"}]


class City(BaseModel):
    name: str = Field(max_length=3)
    population: int


async def failed_attempt(client: Client) -> sdk.AttemptInfo:
    async with client.stream(messages=MESSAGES, schema=City) as s:
        with pytest.raises(sdk.SchemaViolation):
            await s.result()
    (attempt,) = s.attempts
    return attempt


async def test_anthropic_keeps_message_starts_usage() -> None:
    # The name breaks maxLength at once; the rest of the stream (its end) is never read.
    server = Server(
        stream(
            start(input_tokens=123),
            text_block(0, '{"name": "Paris", ', '"population": 2100000}'),
            stop("end_turn", output=9),
        )
    )
    async with server.client() as client:
        attempt = await failed_attempt(client)
    assert attempt.finish_reason is None  # aborted before the end
    assert attempt.usage.prompt_tokens == 123  # as reported, not estimated from the body


async def test_gemini_keeps_usage_metadata() -> None:
    def record(text: str, **extra: Any) -> str:
        content = {"role": "model", "parts": [{"text": text}]}
        return "data: " + json.dumps({"candidates": [{"content": content}], **extra}) + "\n\n"

    body = (
        record('{"name": "Paris", ', usageMetadata={"promptTokenCount": 123})
        + record('"population": 2100000}')
        + "data: "
        + json.dumps({"candidates": [{"finishReason": "STOP"}], "usageMetadata": {}})
        + "\n\n"
    ).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://g.test")
    async with Client(provider="gemini", model="m", api_key="k", http_client=http) as client:
        attempt = await failed_attempt(client)
    assert attempt.finish_reason is None
    assert attempt.usage.prompt_tokens == 123
