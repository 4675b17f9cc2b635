"""Soak: thousands of streams through one Client, nothing leaks and no result is lost.

A loopback server in its own process (loopback_server.py) streams a small recorded document
(``{"id": <n>, "city": ..., ...}``, 18 tokens, one per event) for each request. One ``Client``
runs the streams, 64 at a time, and every sixth stream of each kind:

- ``ok``: read to the end, every field event, then ``result()``;
- ``abandon``: leaves the ``async with`` after the first field event;
- ``callback``: its ``on_field`` callback raises (the stream fails with ``CallbackError``);
- ``drop``: the server closes the connection mid-document (``TransportError``);
- ``drop_retry``: the same, with a transport retry (``max_retries=1``): the second request
  gets the whole document;
- ``cancel``: a cancel scope around the stream is cancelled after the first field event.

After a warm-up, open file descriptors, running tasks and the pool's connections must be back
where they were, RSS may grow only within a stated bound, and every ``ok`` and ``drop_retry``
stream must have returned its own value exactly once (the id in the document is the stream's);
every other stream none, each with the outcome its kind implies.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import os
import pathlib
import resource
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from sdk._client import Client
from sdk._errors import CallbackError, TransportError
from sdk._events import FieldEvent
from tests.integration.loopback_server import LoopbackServer, small_value, start

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONCURRENCY = 64
WARMUP = 900
SOAK = 3000
KINDS = ("ok", "abandon", "callback", "drop", "drop_retry", "cancel")
EXPECTED = {
    "ok": "result",
    "abandon": "abandoned",
    "callback": "CallbackError",
    "drop": "TransportError",
    "drop_retry": "result",
    "cancel": "cancelled",
}
RSS_BOUND = 3 * 1024 * 1024  # see the end of soak() for what the growth is and why this bound
# The server counts requests per command (a drop happens once per id): each run has its own ids.
_FIRST_IDS = itertools.count(0, 1_000_000)
_HERE = pathlib.Path(__file__).resolve().parent


class Small(BaseModel):
    id: int
    city: str
    temperature: int
    units: Literal["c", "f"]


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with start() as running:
        yield running


@dataclass
class Tally:
    """What the streams of ``idents`` did, kept small (its growth is not the client's)."""

    idents: range
    results: bytearray = field(init=False)  # results returned, per stream
    wrong: list[tuple[int, Small]] = field(default_factory=list)  # results not its own
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.results = bytearray(len(self.idents))


def boom(event: FieldEvent) -> None:
    raise RuntimeError("the callback failed")


async def one(client: Client, ident: int, tally: Tally) -> None:
    kind = KINDS[ident % len(KINDS)]
    command: dict[str, Any] = {"doc": "small", "id": ident}
    if kind in ("drop", "drop_retry"):
        command["drop_after"] = 8  # after '{"id":<n>,"city":"San': mid-string
    elif kind in ("abandon", "callback", "cancel"):
        # The server sends 12 of the 18 tokens (the id and the city are final by then) and
        # waits for the client to go: a stream left without closing its connection would hang.
        command["hold_after"] = 12
    messages = [{"role": "user", "content": json.dumps(command)}]
    # A dropped connection is a transport failure: retried by the transport budget
    # (max_retries, per request) on the same attempt, never by Retry (which counts answers).
    max_retries = 1 if kind == "drop_retry" else 0
    on_field = {"/city": boom} if kind == "callback" else None
    stream = client.stream(
        messages=messages, schema=Small, on_field=on_field, max_retries=max_retries
    )
    try:
        if kind == "cancel":
            with anyio.CancelScope() as scope:
                async with stream:
                    async for _ in stream:
                        scope.cancel()
                        await anyio.lowlevel.checkpoint()  # the cancellation lands here
            outcome = "cancelled" if scope.cancelled_caught else "not cancelled"
        elif kind == "abandon":
            async with stream:
                async for _ in stream:
                    break
            outcome = "abandoned"
        else:
            async with stream:
                if kind == "ok":
                    fields = [ev async for ev in stream]
                    assert len(fields) == 5  # id, city, temperature, units, the root
                value = await stream.result()
            tally.results[ident - tally.idents.start] += 1
            if value != Small(**small_value(ident)):
                tally.wrong.append((ident, value))
            outcome = "result"
    except CallbackError:
        outcome = "CallbackError"
    except TransportError:  # whichever class of it (a dropped connection: APIConnectionError)
        outcome = "TransportError"
    tally.outcomes[kind, outcome] += 1


async def run(client: Client, tally: Tally) -> None:
    pending = iter(tally.idents)

    async def worker() -> None:
        for ident in pending:  # one shared iterator: each id is taken once
            await one(client, ident, tally)

    async with anyio.create_task_group() as tg:
        for _ in range(CONCURRENCY):
            tg.start_soon(worker)


@dataclass(frozen=True)
class Snapshot:
    fds: int
    tasks: int
    connections: int  # open connections in the pool, all idle
    rss: int


def running_tasks(backend: str) -> int:
    if backend == "asyncio":
        return len(asyncio.all_tasks())
    import trio

    count, stack = 0, [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        count += 1
        stack.extend(t for nursery in task.child_nurseries for t in nursery.child_tasks)
    return count


def rss() -> int:
    """Resident set size in bytes (Linux); elsewhere the peak, which bounds it from above."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def snapshot(client: Client, backend: str) -> Snapshot:
    gc.collect()
    # httpx's transport and httpcore's pool are private; they are the only view of the pool.
    pool = client.backend.http_client._transport._pool  # type: ignore[attr-defined]
    open_connections = [c for c in pool.connections if not c.is_closed()]
    assert all(c.is_idle() for c in open_connections), pool.connections
    return Snapshot(
        fds=len(os.listdir("/dev/fd")),
        tasks=running_tasks(backend),
        connections=len(open_connections),
        rss=rss(),
    )


def check(tally: Tally) -> None:
    """Each stream that should succeed returned its own value once; no other returned any;
    each kind ended as it should."""
    assert tally.wrong == []
    expected = Counter[tuple[str, str]]()
    for ident, count in zip(tally.idents, tally.results, strict=True):
        kind = KINDS[ident % len(KINDS)]
        assert count == (EXPECTED[kind] == "result"), (ident, kind, count)
        expected[kind, EXPECTED[kind]] += 1
    assert tally.outcomes == expected


async def test_soak(server: LoopbackServer, anyio_backend: str) -> None:
    # In an interpreter of its own: in the suite's, RSS would also count whatever the other
    # tests loaded and freed meanwhile (a model, torch's allocator), which is not the client's.
    path = os.pathsep.join([str(_HERE.parents[1]), str(_HERE), os.environ.get("PYTHONPATH", "")])
    first = str(next(_FIRST_IDS))  # the server drops once per id: each run has its own ids
    with anyio.fail_after(540):
        done = await anyio.run_process(
            [sys.executable, __file__, anyio_backend, server.base_url, first],
            check=False,
            env={**os.environ, "PYTHONPATH": path},
        )
    output = (done.stdout + done.stderr).decode(errors="replace")
    print(output[-2000:])
    assert done.returncode == 0, output[-4000:]


async def soak(base_url: str, anyio_backend: str, first: int) -> None:
    # A stream that does not close its connection when left would wait forever.
    with anyio.fail_after(300):
        await _soak(base_url, anyio_backend, first)


async def _soak(base_url: str, anyio_backend: str, first: int) -> None:
    async with Client(base_url=base_url, model="soak") as client:
        keepalive = 20  # httpx's default max_keepalive_connections, which the client keeps
        tally = Tally(range(first, first + WARMUP))
        await run(client, tally)
        check(tally)
        before = snapshot(client, anyio_backend)

        # Two soaks of SOAK streams each: the first may still grow the allocators' pools to
        # their plateau, the second must not grow RSS beyond the bound (a per-stream leak would).
        tally = Tally(range(first + WARMUP, first + WARMUP + SOAK))
        await run(client, tally)
        check(tally)
        middle = snapshot(client, anyio_backend)
        tally = Tally(range(first + WARMUP + SOAK, first + WARMUP + 2 * SOAK))
        await run(client, tally)
        check(tally)
        after = snapshot(client, anyio_backend)

        print(f"\n{anyio_backend}: before {before}, middle {middle}, after {after}")
        assert after.tasks == before.tasks
        assert before.connections <= keepalive and after.connections <= keepalive
        # Every descriptor opened since the baseline is an idle keep-alive connection.
        assert after.fds - after.connections == before.fds - before.connections
        # RSS: memory the allocators keep after the peak of 64 streams at once (pymalloc arenas,
        # malloc pages that fragmentation keeps from the system) grows to a plateau whose height
        # depends on the interpreter: over the first 3,000 streams +1.0 MB (asyncio) / +0.7 MB
        # (trio) on CPython 3.11, +9.4 / +7.7 MB on 3.13, and on 3.13 +10.5 MB after 9,000: a
        # plateau, not growth per stream. The Python heap itself stays flat (tracemalloc, 3.11:
        # +0.07 MB over 2,000 streams). So the bound holds for the second 3,000 streams, after
        # the plateau: a leak of 1 KB per stream would break it.
        assert after.rss - middle.rss < RSS_BOUND


if __name__ == "__main__":  # the soak itself, in a fresh interpreter (see test_soak)
    anyio.run(soak, sys.argv[2], sys.argv[1], int(sys.argv[3]), backend=sys.argv[1])
