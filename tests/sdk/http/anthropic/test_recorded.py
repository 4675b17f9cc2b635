"""Anthropic's recorded streams (``tests/data/anthropic_sse``, from anthropic-sdk-python's own
test suite) through :class:`AnthropicBackend`, in random chunkings: what fieldstream makes of
the bytes is what the ``anthropic`` SDK's accumulator makes of the same bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import httpx
import pytest

from sdk._backend import Delta, GenerationRequest
from sdk._http._stop_reasons import finish_reason_of
from sdk._http.anthropic import AnthropicBackend
from sdk._http.anthropic._decoder import STOP_REASONS
from tests.sdk._http_support import Body

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is a dev dependency")
from anthropic._streaming import SSEDecoder  # noqa: E402
from anthropic.lib.streaming._messages import accumulate_event  # noqa: E402

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parents[3] / "data" / "anthropic_sse"
FIXTURES = sorted(DATA.glob("*.sse"))
RAW = {path.stem: path.read_bytes() for path in FIXTURES}
SCHEMA = {"type": "object"}


def test_the_fixtures_are_there() -> None:
    assert len(FIXTURES) == 7
    assert (DATA / "LICENSE").read_text().startswith("Copyright 2023 Anthropic, PBC.")


def sdk_view(raw: bytes) -> dict[str, Any]:
    """What the anthropic SDK's accumulator makes of ``raw``: text, tool calls (name, id, the
    raw arguments text), the stop reason and usage."""
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for sse in SSEDecoder().iter_bytes(iter([raw])):
        if sse.event in ("ping", "error"):
            continue
        snapshot = accumulate_event(
            event=json.loads(sse.data), current_snapshot=snapshot, json_bufs=buffers
        )
    calls = []
    for index, block in enumerate(snapshot.content):
        if block.type == "tool_use":
            calls.append((block.name, block.id, buffers.get(index, b"").decode()))
    usage = snapshot.usage
    prompt = (
        usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )
    return {
        "text": "".join(b.text for b in snapshot.content if b.type == "text"),
        "thinking": "".join(b.thinking for b in snapshot.content if b.type == "thinking"),
        "calls": calls,
        "stop_reason": snapshot.stop_reason,
        "usage": (prompt, usage.output_tokens),
    }


def chunkings(raw: bytes, rng: random.Random) -> list[list[bytes]]:
    """The body whole, one byte at a time, and three random splits."""
    out = [[raw], [raw[i : i + 1] for i in range(len(raw))]]
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(raw)), k=min(len(raw) - 1, rng.randint(1, 40))))
        out.append([raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)])
    return out


async def read(parts: list[bytes], *, mode: str = "json_schema") -> list[Delta]:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Body(parts)
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    backend = AnthropicBackend(
        base_url="http://anthropic.test", api_key="k", model="claude", http_client=client
    )
    request = GenerationRequest(
        messages=({"role": "user", "content": "hi"},),
        schema=SCHEMA,
        mode=mode,  # type: ignore[arg-type]
        tool_choice="auto" if mode == "tool" else None,
    )
    try:
        return [
            d if isinstance(d, Delta) else Delta(text=d) async for d in backend.generate(request)
        ]
    finally:
        await client.aclose()


def our_view(deltas: list[Delta]) -> dict[str, Any]:
    names: dict[int, tuple[str | None, str | None]] = {}
    texts: dict[int, list[str]] = {}
    for d in deltas:
        if d.tool_call is not None:
            if d.tool_name is not None or d.tool_call_id is not None:
                names[d.tool_call] = (d.tool_name, d.tool_call_id)
            texts.setdefault(d.tool_call, []).append(d.text)
    last = deltas[-1]
    assert last.usage is not None
    return {
        "text": "".join(d.text for d in deltas if d.tool_call is None),
        "thinking": "".join(d.reasoning or "" for d in deltas),
        "calls": [(*names[k], "".join(texts[k])) for k in sorted(texts)],
        "finish": last.finish_reason,
        "refusal": "".join(d.refusal or "" for d in deltas),
        "usage": (last.usage.prompt_tokens, last.usage.completion_tokens),
    }


@pytest.mark.parametrize("name", sorted(RAW))
async def test_recorded_streams_read_as_the_sdk_reads_them(name: str) -> None:
    raw = RAW[name]
    expected = sdk_view(raw)
    rng = random.Random(name)
    views = [our_view(await read(parts)) for parts in chunkings(raw, rng)]
    assert all(view == views[0] for view in views)  # every chunking gives the same
    view = views[0]
    assert view["text"] == expected["text"]
    assert view["thinking"] == expected["thinking"]
    assert view["calls"] == expected["calls"]
    assert view["usage"] == expected["usage"]
    reason = expected["stop_reason"]
    assert view["finish"] == finish_reason_of(STOP_REASONS, reason)
    assert bool(view["refusal"]) == (reason == "refusal")


async def test_the_recorded_structured_output_is_the_document() -> None:
    deltas = await read([RAW["structured_output_response"]])
    assert "".join(d.text for d in deltas) == "[12345,67890]"
    assert deltas[-1].finish_reason == "stop"


async def test_the_recorded_refusal_says_why() -> None:
    deltas = await read([RAW["refusal_response"]])
    assert [d.refusal for d in deltas if d.refusal] == ["This request was refused due to policy."]
    # The server tool's input (server_tool_use) is not a call of the caller's tools.
    deltas = await read([RAW["server_tool_refusal_response"]])
    assert all(d.tool_call is None for d in deltas)
    assert deltas[-2].refusal == "the model refused (stop_reason 'refusal')"
