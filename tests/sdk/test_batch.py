"""Client.batch: bounded concurrency, results as they complete, bad requests as results, lazy
reading, and leaving early stops what runs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from sdk import BatchRequest, Choice, Client, Retry, UnsupportedConstraint
from sdk._backend import Delta, GenerationRequest, Usage
from sdk._batch import BatchInputError
from sdk._constants import DEFAULT_BATCH_CONCURRENCY

pytestmark = pytest.mark.anyio


class Answer(BaseModel):
    n: int


class Backend:
    """Answers ``{"n": k}`` for a prompt ``"k"``; ``"bad"`` breaks the schema; ``"hang"``
    waits forever. Counts generations running at once."""

    def __init__(self, pause: float = 0.0) -> None:
        self.pause = pause
        self.running = 0
        self.peak = 0
        self.closed = 0

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        prompt = request.messages[-1]["content"]
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            if prompt == "hang":
                await anyio.sleep_forever()
            doc = '{"n": "x"}' if prompt == "bad" else json.dumps({"n": int(prompt)})
            for piece in (doc[:3], doc[3:]):
                await anyio.sleep(self.pause)
                yield Delta(piece)
            yield Delta(finish_reason="stop", usage=Usage(5, 2))
        finally:
            self.running -= 1
            self.closed += 1

    async def aclose(self) -> None:
        pass


async def collect(client: Client, requests: Any, **kw: Any) -> list[Any]:
    return await collect_with(client, requests, schema=Answer, **kw)


async def collect_with(client: Client, requests: Any, *, schema: Any, **kw: Any) -> list[Any]:
    async with client.batch(requests, schema=schema, **kw) as results:
        return [r async for r in results]


async def test_every_request_once_at_most_concurrency_at_a_time() -> None:
    backend = Backend(pause=0.001)
    client = Client.from_backend(backend)
    requests = [{"id": f"r{i}", "prompt": str(i)} for i in range(30)]
    results = await collect(client, requests, concurrency=4)
    assert sorted(r.id for r in results) == sorted(f"r{i}" for i in range(30))
    assert all(r.ok and r.value == Answer(n=int(r.id[1:])) for r in results)
    assert all(r.attempts == 1 and r.usage == Usage(5, 2) for r in results)
    assert backend.peak == 4


async def test_the_default_concurrency_is_the_backend_s_slots() -> None:
    """A backend with ``slots`` (the local engine: streams it decodes together) runs that many
    at once; one without runs ``DEFAULT_BATCH_CONCURRENCY``."""
    backend = Backend(pause=0.2)  # long enough that every slot fills under load
    backend.slots = 3  # type: ignore[attr-defined]
    client = Client.from_backend(backend)
    results = await collect(client, [{"id": f"r{i}", "prompt": str(i)} for i in range(20)])
    assert len(results) == 20 and backend.peak == 3
    plain = Backend(pause=0.2)
    await collect(
        Client.from_backend(plain), [{"id": f"r{i}", "prompt": str(i)} for i in range(20)]
    )
    assert plain.peak == DEFAULT_BATCH_CONCURRENCY


async def test_bad_input_and_failed_requests_are_results_not_crashes() -> None:
    client = Client.from_backend(Backend())
    requests: list[Any] = [
        {"id": "ok", "prompt": "1"},
        {"prompt": "2"},  # no id
        {"id": "empty", "prompt": ""},
        {"id": "both", "prompt": "3", "messages": []},
        {"id": "ok", "prompt": "4"},  # a repeated id
        "not an object",
        {"id": "bad", "prompt": "bad"},
        BatchRequest("msgs", [{"role": "user", "content": "5"}]),
    ]
    results = {(r.id, type(r.error).__name__): r for r in await collect(client, requests)}
    assert set(results) == {
        ("ok", "NoneType"),
        (None, "BatchInputError"),
        ("empty", "BatchInputError"),
        ("both", "BatchInputError"),
        ("ok", "BatchInputError"),
        ("bad", "SchemaViolation"),
        ("msgs", "NoneType"),
    }
    assert results[("msgs", "NoneType")].value == Answer(n=5)
    assert "repeated" in str(results[("ok", "BatchInputError")].error)


async def test_retries_apply_to_each_request() -> None:
    client = Client.from_backend(Backend())
    [result] = await collect(client, [{"id": "b", "prompt": "bad"}], retry=Retry(max_attempts=2))
    assert isinstance(result.error, Exception) and result.attempts == 2


async def test_requests_are_read_lazily() -> None:
    pulled = 0

    def requests() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for i in range(1000):
            pulled += 1
            yield {"id": str(i), "prompt": str(i)}

    client = Client.from_backend(Backend(pause=0.001))
    async with client.batch(requests(), schema=Answer, concurrency=3) as results:
        first = [await results.__anext__() for _ in range(5)]
        # Read as room freed up: the results so far, the three running, one waiting for room.
        assert pulled <= len(first) + 3 + 1
    assert pulled < 1000


async def test_leaving_early_stops_the_running_generations() -> None:
    backend = Backend()
    client = Client.from_backend(backend)
    requests = [{"id": "1", "prompt": "1"}] + [{"id": f"h{i}", "prompt": "hang"} for i in range(3)]
    async with client.batch(requests, schema=Answer, concurrency=4) as results:
        done = await results.__anext__()
        assert done.id == "1"
        await anyio.sleep(0.01)
        assert backend.running == 3
    assert backend.running == 0 and backend.closed == 4


async def test_an_async_iterable_of_requests() -> None:
    async def requests() -> AsyncIterator[dict[str, Any]]:
        for i in range(5):
            await anyio.lowlevel.checkpoint()
            yield {"id": str(i), "messages": [{"role": "user", "content": str(i)}]}

    results = await collect(Client.from_backend(Backend()), requests())
    assert sorted(r.value.n for r in results) == [0, 1, 2, 3, 4]


async def test_a_system_message_comes_before_each_prompt() -> None:
    seen: list[Any] = []

    class Recording(Backend):
        async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
            seen.append(request.messages)
            async for delta in super().generate(request):
                yield delta

    await collect(
        Client.from_backend(Recording()), [{"id": "1", "prompt": "1"}], system="Be brief."
    )
    assert seen == [({"role": "system", "content": "Be brief."}, {"role": "user", "content": "1"})]


async def test_bad_arguments_fail_before_anything_runs() -> None:
    client = Client.from_backend(Backend())
    with pytest.raises(ValueError, match="concurrency"):
        await collect(client, [], concurrency=0)
    with pytest.raises(TypeError, match="max_tokens"):
        await collect(client, [], max_tokens="many")
    with pytest.raises(TypeError, match="iterable"):
        await collect(client, 42)


async def test_a_batch_checks_schema_and_options_as_each_stream_would() -> None:
    # Checked once, at the call, by the same checks as Client.stream: an option that does not
    # go with the schema fails there (not once per request), and so does a constraint the
    # backend cannot send (this one sends JSON Schema only) — a typed error, not a crash.
    backend = Backend()
    client = Client.from_backend(backend)
    with pytest.raises(ValueError, match="tool_choice goes with tools="):
        await collect(client, [{"id": "1", "prompt": "1"}], tool_choice="auto")
    assert backend.closed == 0  # nothing was sent
    with pytest.raises(UnsupportedConstraint):
        await collect_with(client, [{"id": "1", "prompt": "7"}], schema=Choice(["7", "8"]))
    assert backend.closed == 0


def test_batch_input_errors_say_what_is_missing() -> None:
    from sdk._batch import as_request

    with pytest.raises(BatchInputError, match='"prompt" or "messages"'):
        as_request({"id": 1})
    # The id is given back as it came: 7 stays an integer.
    assert as_request({"id": 7, "prompt": "hi"}) == BatchRequest(
        7, [{"role": "user", "content": "hi"}]
    )
