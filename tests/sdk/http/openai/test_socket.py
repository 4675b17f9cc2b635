"""OpenAIBackend / Client against a real TCP server in the test (anyio): timeouts, abrupt
disconnects, and proof from the server's side that an abort or a cancellation closes the
connection (the server notices and stops sending) — no connection is left open."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

import anyio
import httpx
import pytest
from anyio.abc import SocketAttribute, SocketStream
from pydantic import BaseModel

from sdk._client import Client
from sdk._errors import APITimeoutError, SchemaViolation, TransportError
from sdk._events import FieldEvent
from sdk._retry import Retry

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "hi"}]


class Pet(BaseModel):
    name: str
    kind: Literal["cat", "dog"]


def event(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@dataclass
class Conn:
    """What the server saw of one connection."""

    sent: int = 0
    closed_by_client: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)


Script = Callable[[SocketStream, Conn], Awaitable[None]]


async def read_request(stream: SocketStream) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(rest) < length:
        rest += await stream.receive()


async def send_chunk(stream: SocketStream, payload: bytes) -> None:
    await stream.send(b"%x\r\n%s\r\n" % (len(payload), payload))


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


@dataclass
class Server:
    url: str
    conns: list[Conn] = field(default_factory=list)
    requests: int = 0


@asynccontextmanager
async def server(*scripts: Script) -> AsyncIterator[Server]:
    """A tiny HTTP/1.1 server with keep-alive: the n-th request runs scripts[n] (the last
    script for any later request)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    srv = Server(f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}/v1")

    async def handle(stream: SocketStream) -> None:
        conn = Conn()
        srv.conns.append(conn)
        async with stream:
            try:
                while True:
                    await read_request(stream)
                    script = scripts[min(srv.requests, len(scripts) - 1)]
                    srv.requests += 1
                    await stream.send(HEAD)
                    await script(stream, conn)
            except (
                anyio.BrokenResourceError,
                anyio.ClosedResourceError,
                anyio.EndOfStream,
                ConnectionError,
            ):
                conn.closed_by_client.set()
            finally:
                conn.done.set()

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield srv
        finally:
            tg.cancel_scope.cancel()


def endless(first: list[bytes]) -> Script:
    """Send ``first``, then whitespace forever, one event every 10 ms, until the client goes."""

    async def script(stream: SocketStream, conn: Conn) -> None:
        for payload in first:
            await send_chunk(stream, payload)
            conn.sent += 1
        while True:
            await anyio.sleep(0.01)
            await send_chunk(stream, event(" "))
            conn.sent += 1

    return script


def complete(texts: list[str]) -> Script:
    async def script(stream: SocketStream, conn: Conn) -> None:
        for text in texts:
            await send_chunk(stream, event(text))
            conn.sent += 1
        await send_chunk(stream, event(finish="stop") + b"data: [DONE]\n\n")
        await stream.send(b"0\r\n\r\n")

    return script


def stall(first: list[bytes]) -> Script:
    async def script(stream: SocketStream, conn: Conn) -> None:
        for payload in first:
            await send_chunk(stream, payload)
            conn.sent += 1
        await anyio.sleep(30)

    return script


def cut(first: list[bytes]) -> Script:
    """Send ``first`` and half a chunk, then drop the connection."""

    async def script(stream: SocketStream, conn: Conn) -> None:
        for payload in first:
            await send_chunk(stream, payload)
            conn.sent += 1
        await stream.send(b"ff\r\ndata: {")
        await stream.aclose()

    return script


GOOD = ['{"name": "Rex", ', '"kind": "dog"}']


async def test_a_violation_closes_the_connection_and_the_server_stops() -> None:
    bad = endless([event('{"name": "Rex", '), event('"kind": "cow')])
    async with server(bad, complete(GOOD)) as srv:
        async with Client(base_url=srv.url) as client:
            async with client.stream(
                messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=2)
            ) as s:
                assert await s.result() == Pet(name="Rex", kind="dog")
        with anyio.fail_after(10):  # a guard against hanging, not a timing assertion
            await srv.conns[0].closed_by_client.wait()
    assert isinstance(s.attempts[0].error, SchemaViolation)
    assert len(srv.conns) == 2


async def test_cancelling_the_consumer_closes_the_connection() -> None:
    async with server(endless([event('{"name": "Rex", ')])) as srv:
        async with Client(base_url=srv.url) as client:
            with anyio.CancelScope() as scope:
                async with client.stream(messages=MESSAGES, schema=Pet) as s:
                    async for ev in s:
                        if isinstance(ev, FieldEvent):
                            scope.cancel()
            assert scope.cancelled_caught
            with anyio.fail_after(10):
                await srv.conns[0].closed_by_client.wait()
            sent_at_close = srv.conns[0].sent
            await anyio.sleep(0.1)
            assert srv.conns[0].sent == sent_at_close  # the server stopped: nothing more sent


async def test_a_timeout_around_the_stream_closes_the_connection() -> None:
    async with server(endless([event('{"name": "Rex", ')])) as srv:
        async with Client(base_url=srv.url) as client:
            with anyio.move_on_after(0.3) as scope:
                async with client.stream(messages=MESSAGES, schema=Pet) as s:
                    await s.result()
            assert scope.cancelled_caught
            with anyio.fail_after(10):
                await srv.conns[0].closed_by_client.wait()


async def test_breaking_out_of_the_loop_closes_the_connection() -> None:
    async with server(endless([event('{"name": "Rex", ')])) as srv:
        async with Client(base_url=srv.url) as client:
            async with client.stream(messages=MESSAGES, schema=Pet) as s:
                async for _ in s:
                    break
            with anyio.fail_after(10):
                await srv.conns[0].closed_by_client.wait()


async def test_a_stalled_server_hits_the_read_timeout_and_is_retried() -> None:
    async with server(stall([event('{"name": ')]), complete(GOOD)) as srv:
        async with Client(base_url=srv.url, timeout=httpx.Timeout(5.0, read=0.2)) as client:
            async with client.stream(
                messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=2, backoff=0.0)
            ) as s:
                assert (await s.result()).kind == "dog"
    error = s.attempts[0].error
    assert isinstance(error, TransportError)
    assert error.retryable and error.status is None
    assert "timed out" in str(error)


async def test_a_stalled_server_without_retry_raises_the_timeout() -> None:
    async with server(stall([event('{"name": ')])) as srv:
        async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.2)) as http:
            async with Client(base_url=srv.url, http_client=http, max_retries=0) as client:
                with pytest.raises(TransportError, match="timed out"):
                    async with client.stream(messages=MESSAGES, schema=Pet) as s:
                        await s.result()


async def test_a_stalled_server_is_retried_by_default_then_gives_up() -> None:
    async with server(*[stall([event('{"name": ')])] * 2) as srv:
        async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.2)) as http:
            async with Client(base_url=srv.url, http_client=http, max_retries=1) as client:
                with pytest.raises(APITimeoutError) as info:
                    async with client.stream(messages=MESSAGES, schema=Pet) as s:
                        await s.result()
    # The same class as without retries; the try before it in its ``retries``.
    assert [type(e) for e in info.value.retries] == [APITimeoutError]
    assert len(s.attempts) == 2


async def test_an_abrupt_disconnect_mid_stream_is_a_retryable_transport_error() -> None:
    async with server(cut([event('{"name": "Rex", ')]), complete(GOOD)) as srv:
        async with Client(base_url=srv.url) as client:
            async with client.stream(
                messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=2, backoff=0.0)
            ) as s:
                await s.result()
    error = s.attempts[0].error
    assert isinstance(error, TransportError)
    assert error.retryable and error.status is None


async def test_a_complete_stream_leaves_the_connection_reusable() -> None:
    async with server(complete(GOOD)) as srv:
        async with Client(base_url=srv.url) as client:
            for _ in range(3):
                async with client.stream(messages=MESSAGES, schema=Pet) as s:
                    await s.result()
    # Each response was read to its end, so all three requests went over one connection.
    assert srv.requests == 3
    assert len(srv.conns) == 1
