"""The client's own connection pool holds hundreds of open streams at once (loopback server).

httpx's default pool has 100 connections: with it, the 101st concurrent stream would wait for a
connection until the pool timeout and fail. Here 300 streams are held open mid-document
together, each by the ``Client`` made with no ``http_client`` of the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
from pydantic import BaseModel

from sdk import Client, FieldEvent
from tests.integration.loopback_server import LoopbackServer, start

pytestmark = pytest.mark.anyio

STREAMS = 300


class Small(BaseModel):
    id: int
    city: str
    temperature: int
    units: str


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with start() as running:
        yield running


async def test_hundreds_of_streams_are_open_at_once(server: LoopbackServer) -> None:
    client = Client(base_url=server.base_url, model="m")
    arrived = 0
    everyone = anyio.Event()
    ids: list[int] = []

    async def one(ident: int) -> None:
        nonlocal arrived
        # The server sends the id and part of the city, then holds the stream open.
        command = {"doc": "small", "id": ident, "hold_after": 6}
        messages = [{"role": "user", "content": json.dumps(command)}]
        async with client.stream(messages=messages, schema=Small) as stream:
            async for event in stream:
                if isinstance(event, FieldEvent) and event.path == ("id",):
                    ids.append(event.value)
                    break
            arrived += 1
            if arrived == STREAMS:
                everyone.set()
            await everyone.wait()  # every stream is open (and holds its connection) here

    try:
        with anyio.fail_after(60):  # a pool of 100 would stop at 100 and wait here
            async with anyio.create_task_group() as tg:
                for ident in range(STREAMS):
                    tg.start_soon(one, ident)
    finally:
        await client.aclose()
    assert sorted(ids) == list(range(STREAMS))
