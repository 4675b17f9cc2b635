"""``Client(provider="anthropic")`` end to end over the real wire: the Messages API as the
bridge (``anthropic_bridge.py``) speaks it in front of llama.cpp's server on SmolLM2-135M, so
the model's real tokens arrive in Anthropic's framing. The abort closes both hops and
llama.cpp stops decoding; a retry is sent as Anthropic's own turns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anthropic_bridge import AnthropicBridge, start
from llama_server import LlamaServer

from sdk._client import Client
from sdk._errors import SchemaViolation
from sdk._retry import Retry

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def bridge(llama_server: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    log = Path(tmp_path_factory.mktemp("bridge")) / "requests.jsonl"
    log.touch()
    with start(llama_server.base_url, str(log)) as server:
        yield server, log


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


FRUITS = [{"role": "user", "content": "List one hundred fruits."}]
# Anthropic's subset has no maxItems: the bridge's llama.cpp is told "a list of strings" and
# writes on; fieldstream wants at most 2 and aborts at the third.
STRICT_LIST = {
    "type": "object",
    "properties": {"fruits": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
    "required": ["fruits"],
}


async def test_an_abort_goes_through_both_hops(
    llama_server: LlamaServer, bridge: tuple[AnthropicBridge, Path]
) -> None:
    server, log = bridge
    await anyio.to_thread.run_sync(llama_server.wait_idle)
    before = await anyio.to_thread.run_sync(llama_server.metrics)
    http = httpx.AsyncClient(timeout=120, base_url=server.base_url)
    async with Client(provider="anthropic", model="smollm2", http_client=http) as client:
        with pytest.raises(SchemaViolation) as info:
            async with client.stream(
                messages=FRUITS,
                schema=STRICT_LIST,
                max_tokens=200,
                extra_body={"temperature": 0},
            ) as s:
                await s.result()
    await http.aclose()
    await anyio.to_thread.run_sync(llama_server.wait_idle)
    after = await anyio.to_thread.run_sync(llama_server.metrics)
    assert info.value.keyword == "maxItems"
    sent = received(log)[-1]
    items = sent["output_config"]["format"]["schema"]["properties"]["fruits"]
    assert "maxItems" not in items and "maxItems: 2" in items["description"]
    predicted = after["tokens_predicted_total"] - before["tokens_predicted_total"]
    # Three short strings take some twenty tokens; the 200 allowed were not decoded.
    assert 0 < predicted < 100, predicted
    assert len(s.attempts[0].text) > 0


COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white"]


def pick_schema(colors: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"color": {"enum": colors}},
        "required": ["color"],
        "additionalProperties": False,
    }


PICK = [{"role": "user", "content": "Pick a colour. Reply in JSON."}]
EVERY_COLOUR = {"format": {"type": "json_schema", "schema": pick_schema(COLORS)}}


async def test_a_violation_is_retried_with_anthropic_turns(
    bridge: tuple[AnthropicBridge, Path],
) -> None:
    server, log = bridge
    http = httpx.AsyncClient(timeout=120, base_url=server.base_url)
    shown = False
    async with Client(provider="anthropic", model="smollm2", http_client=http) as client:
        for seed in (7, 8, 9):
            extra = {"temperature": 1.0, "seed": seed, "output_config": EVERY_COLOUR}
            async with client.stream(
                messages=PICK, schema=pick_schema(COLORS), max_tokens=20, extra_body=extra
            ) as s:
                first = (await s.result())["color"]
            allowed = [c for c in COLORS if c != first]
            async with client.stream(
                messages=PICK,
                schema=pick_schema(allowed),
                max_tokens=20,
                extra_body=extra,
                retry=Retry(max_attempts=6),
            ) as s:
                result = await s.result()
            assert result["color"] in allowed
            broken = [a for a in s.attempts if isinstance(a.error, SchemaViolation)]
            if not broken:
                continue  # the first attempt did not repeat its sample this time
            retry = received(log)[-len(s.attempts) + 1]
            # The feedback is the Messages API's own turns: the broken answer as the
            # assistant's text block, then the user's correction.
            assert [t["role"] for t in retry["messages"]] == ["user", "assistant", "user"]
            assert retry["messages"][1]["content"] == [{"type": "text", "text": broken[0].text}]
            assert "color" in retry["messages"][2]["content"][0]["text"]
            shown = True
            break
    await http.aclose()
    assert shown, "no seed reproduced its first sample: the retry path was never exercised"
