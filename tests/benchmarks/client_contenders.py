"""The contenders of bench_client.py: one HTTP client each against the loopback server, and the
documents they read (see bench_client.py): the weather document, and the field-dense catalog."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

import httpx  # noqa: E402
import httpx2  # noqa: E402
import openai  # noqa: E402
from httpx_sse import EventSource  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from sdk._backend import GenerationRequest  # noqa: E402
from sdk._client import Client  # noqa: E402
from sdk._events import FieldEvent  # noqa: E402
from sdk._trackers._field import FieldTracker  # noqa: E402
from tests.integration.loopback_server import (  # noqa: E402
    CATALOG_TEXT,
    CATALOG_TOKENS,
    WEATHER_TEXT,
    WEATHER_TOKENS,
)


class Current(BaseModel):
    temperature: str
    condition: str
    humidity: str
    windSpeed: str  # the document's own keys
    windDirection: str


class Day(BaseModel):
    day: str
    high: str
    low: str
    condition: str


class Weather(BaseModel):
    location: str
    weather: Current
    forecast: list[Day]


class Item(BaseModel):
    id: int
    name: str
    price: float
    tags: list[str]


class Catalog(BaseModel):
    items: list[Item]


@dataclass(frozen=True)
class Document:
    """A document the server streams (``doc`` in its command) and what the clients expect."""

    name: str
    model: type[BaseModel]
    tokens: list[str]
    expected: BaseModel


DOCUMENTS = {
    "weather": Document(
        "weather", Weather, WEATHER_TOKENS, Weather.model_validate_json(WEATHER_TEXT)
    ),
    "catalog": Document(
        "catalog", Catalog, CATALOG_TOKENS, Catalog.model_validate_json(CATALOG_TEXT)
    ),
}
"""The weather document (177 tokens, long values) and the field-dense catalog (30 records of
``id``, ``name``, ``price``, ``tags``: 1,143 tokens, a value finished every ~4.7 tokens)."""
NAMES = ["floor", "fieldstream", "openai raw", "openai structured"]
EXTRAS = ["floor httpx2", "fieldstream from_openai"]
"""The same two over httpx2/httpcore2, the transport openai-python 3 uses (see the module
docstring)."""
PARTS = ["socket only", "httpx raw", "fieldstream backend", "tracker only"]
"""Parts of fieldstream's cost, for ``--breakdown``: the response read from an asyncio socket
with no HTTP library (a new connection per stream; the event loop's and the kernel's share,
what any asyncio client pays); the body's bytes read with httpx and nothing else; fieldstream's
backend alone (events, chunks, deltas; no tracker, no Stream); the tracker over the same tokens
without any I/O (feed, finish, close: the final validation)."""


def _fields_after(doc: Document, tokens: int) -> int:
    """How many field events fieldstream has yielded once ``tokens`` tokens are read."""
    tracker = FieldTracker(doc.model)
    return sum(isinstance(ev, FieldEvent) for t in doc.tokens[:tokens] for ev in tracker.feed(t))


class Hold:
    """Stops each stream at its ``at``-th unit (token, chunk or field event) until released."""

    def __init__(self, at: int, streams: int) -> None:
        self.at = at
        self.waiting = streams
        self.all_held = asyncio.Event()
        self.release = asyncio.Event()

    async def reached(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            self.all_held.set()
        await self.release.wait()


class Contenders:
    """One client per contender, all against the same server; ``run[name](command, hold)``
    reads one whole stream (or holds it mid-document)."""

    def __init__(self, base_url: str, doc: Document = DOCUMENTS["weather"]) -> None:
        self.base_url = base_url
        self.doc = doc
        self.tokens = len(doc.tokens)
        # Room for every stream at once; at most 20 idle connections kept (httpx's default): a
        # big keep-alive pool makes httpcore 1's bookkeeping quadratic (see the module docstring
        # of bench_client.py).
        self.limits: dict[str, Any] = dict(
            max_connections=1000, max_keepalive_connections=20, keepalive_expiry=5.0
        )
        self.floor_http = httpx.AsyncClient(limits=httpx.Limits(**self.limits), timeout=120)
        self.fs_http = httpx.AsyncClient(limits=httpx.Limits(**self.limits), timeout=120)
        self.fs = Client(base_url=base_url, model="bench", http_client=self.fs_http)
        self.oai = openai.AsyncOpenAI(
            base_url=base_url,
            api_key="bench",
            max_retries=0,
            timeout=120,
            http_client=openai.DefaultAsyncHttpxClient(limits=httpx2.Limits(**self.limits)),
        )
        self.floor2_http = httpx2.AsyncClient(limits=httpx2.Limits(**self.limits), timeout=120)
        self.oai2 = openai.AsyncOpenAI(
            base_url=base_url,
            api_key="bench",
            timeout=120,
            http_client=openai.DefaultAsyncHttpxClient(limits=httpx2.Limits(**self.limits)),
        )
        self.fs2 = Client.from_openai(self.oai2, model="bench")
        self.fs_held = _fields_after(doc, self.tokens // 2)
        self.run: dict[str, Callable[[str, Hold | None], Awaitable[None]]] = {
            "floor": lambda cmd, hold: self.floor(self.floor_http, cmd, hold),
            "fieldstream": lambda cmd, hold: self.fieldstream(self.fs, cmd, hold),
            "openai raw": self.openai_raw,
            "openai structured": self.openai_structured,
            "floor httpx2": lambda cmd, hold: self.floor(self.floor2_http, cmd, hold),
            "fieldstream from_openai": lambda cmd, hold: self.fieldstream(self.fs2, cmd, hold),
            "socket only": self.socket_only,
            "httpx raw": self.httpx_raw,
            "fieldstream backend": self.fieldstream_backend,
            "tracker only": self.tracker_only,
        }

    async def aclose(self) -> None:
        await self.floor_http.aclose()
        await self.floor2_http.aclose()
        await self.fs.aclose()
        await self.fs_http.aclose()
        await self.oai.close()
        await self.oai2.close()

    async def floor(self, http: Any, command: str, hold: Hold | None) -> None:
        body = {"model": "bench", "messages": [{"role": "user", "content": command}]}
        body["stream"] = True
        url = self.base_url + "/chat/completions"
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        n = 0
        async with http.stream("POST", url, json=body, headers=headers) as response:
            async for event in EventSource(response).aiter_sse():
                if event.data != "[DONE]":
                    json.loads(event.data)
                    n += 1
                    if hold is not None and n == hold.at:
                        await hold.reached()
        assert n == self.tokens + 3, n  # role, content, finish and usage chunks

    async def fieldstream(self, client: Client, command: str, hold: Hold | None) -> None:
        messages = [{"role": "user", "content": command}]
        n = 0
        async with client.stream(messages=messages, schema=self.doc.model) as stream:
            async for _ in stream:
                n += 1
                if hold is not None and n == hold.at:
                    await hold.reached()
            assert await stream.result() == self.doc.expected

    async def socket_only(self, command: str, hold: Hold | None) -> None:
        url = httpx.URL(self.base_url)
        body = json.dumps({"messages": [{"role": "user", "content": command}]}).encode()
        head = (
            f"POST {url.path}/chat/completions HTTP/1.1\r\nhost: {url.host}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        reader, writer = await asyncio.open_connection(url.host, url.port)
        try:
            writer.write(head.encode() + body)
            tail = b""
            while not tail.endswith(b"\r\n0\r\n\r\n"):  # the end of the chunked body
                piece = await reader.read(65536)
                assert piece, "the server closed the connection early"
                tail = (tail + piece)[-16:]
        finally:
            writer.close()
            await writer.wait_closed()

    async def httpx_raw(self, command: str, hold: Hold | None) -> None:
        body = {"model": "bench", "messages": [{"role": "user", "content": command}]}
        url = self.base_url + "/chat/completions"
        size = 0
        async with self.floor_http.stream("POST", url, json=body) as response:
            async for piece in response.aiter_raw():
                size += len(piece)
        assert size > 1000

    async def fieldstream_backend(self, command: str, hold: Hold | None) -> None:
        messages = ({"role": "user", "content": command},)
        request = GenerationRequest(messages=messages, schema=self.doc.model.model_json_schema())
        n = 0
        async for delta in self.fs.backend.generate(request):
            n += bool(delta.text)
        assert n == self.tokens

    async def tracker_only(self, command: str, hold: Hold | None) -> None:
        tracker = FieldTracker(self.doc.model)
        for token in self.doc.tokens:
            tracker.feed(token)
        tracker.finish()
        assert tracker.close() == self.doc.expected

    async def openai_raw(self, command: str, hold: Hold | None) -> None:
        messages: Any = [{"role": "user", "content": command}]
        n = 0
        stream = await self.oai.chat.completions.create(
            model="bench", messages=messages, stream=True
        )
        async with stream:
            async for _ in stream:
                n += 1
                if hold is not None and n == hold.at:
                    await hold.reached()
        assert n == self.tokens + 3, n

    async def openai_structured(self, command: str, hold: Hold | None) -> None:
        messages: Any = [{"role": "user", "content": command}]
        n = 0
        async with self.oai.chat.completions.stream(
            model="bench", messages=messages, response_format=self.doc.model
        ) as stream:
            async for event in stream:
                if event.type == "content.delta":
                    n += 1
                    if hold is not None and n == hold.at:
                        await hold.reached()
            completion = await stream.get_final_completion()
        assert completion.choices[0].message.parsed == self.doc.expected

    def hold_at(self, name: str) -> int:
        """The unit count at which a stream of ``name`` is half-way through the document."""
        if name.startswith("fieldstream"):
            return self.fs_held
        if name == "openai structured":
            return self.tokens // 2
        return self.tokens // 2 + 1  # chunks: the role chunk comes first


def command(concurrency: int, rate: float, doc: str = "weather", **extra: Any) -> str:
    interval = 0.0 if rate <= 0 else max(0.001, concurrency / rate)
    return json.dumps({"doc": doc, "interval": interval, **extra})


async def wave(run: Callable[[str, Hold | None], Awaitable[None]], cmd: str, n: int) -> None:
    await asyncio.gather(*(run(cmd, None) for _ in range(n)))
