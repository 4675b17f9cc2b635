"""Client.stream over respx: abort on a violation, early retry with feedback, transport faults,
Retry-After, exactly-once across attempts, usage; and the Client's constructors."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import types
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import httpx
import pytest
import respx
from pydantic import BaseModel, Field

from sdk._backend import Delta, GenerationRequest, Usage
from sdk._client import Client
from sdk._errors import (
    InternalServerError,
    RateLimitError,
    SchemaViolation,
    TransportError,
    TruncatedError,
)
from sdk._events import FieldEvent, ReasoningDelta
from sdk._retry import Retry
from sdk._schema import compile_schema
from sdk._schema_prompt import with_schema
from tests.sdk._http_support import Body

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
MESSAGES = [{"role": "user", "content": "Describe a pet."}]


class Pet(BaseModel):
    name: str = Field(max_length=12)
    kind: Literal["cat", "dog"]
    age: int


def event(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: tuple[int, int] | None = None,
) -> bytes:
    chunk: dict[str, Any] = {"object": "chat.completion.chunk", "choices": []}
    if delta is not None or finish is not None:
        chunk["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        chunk["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def stream_of(
    *texts: str,
    finish: str | None = "stop",
    usage: tuple[int, int] | None = (10, 5),
    done: bool = True,
) -> list[bytes]:
    parts = [event({"role": "assistant", "content": ""})]
    parts += [event({"content": t}) for t in texts]
    if finish is not None:
        parts.append(event(finish=finish))
    if usage is not None:
        parts.append(event(usage=usage))
    if done:
        parts.append(b"data: [DONE]\n\n")
    return parts


GOOD = stream_of('{"name": "Rex", ', '"kind": "dog", ', '"age": 3}')


def sse(body: Body) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)


class Sleeps:
    """A fake Retry.sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as mock:
        yield mock


@pytest.fixture
def client() -> Client:
    return Client(base_url=BASE, model="m")


def sent(route: respx.Route, i: int) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(route.calls[i].request.content)
    return result


async def test_violation_aborts_the_response_and_retries_at_once_with_feedback(
    router: respx.MockRouter, client: Client
) -> None:
    # Attempt 1 breaks the enum at "kind" and would go on for 200 more events.
    bad = Body(stream_of('{"name": "Rex", ', '"kind": "ham', *(["ster"] * 200), '"}'))
    good = Body(list(GOOD))
    route = router.post("/chat/completions").mock(side_effect=[sse(bad), sse(good)])
    sleeps = Sleeps()
    seen: list[FieldEvent] = []
    async with client.stream(
        messages=MESSAGES,
        schema=Pet,
        on_field={"/name": seen.append},
        retry=Retry(max_attempts=3, sleep=sleeps),
    ) as s:
        pet = await s.result()
    assert pet == Pet(name="Rex", kind="dog", age=3)
    # Aborted: closed, and nothing read after the event that broke the schema.
    assert bad.closed
    assert bad.pulled == 3
    assert sleeps.delays == []  # an output error is retried at once
    assert [a.number for a in s.attempts] == [1, 2]
    error = s.attempts[0].error
    assert isinstance(error, SchemaViolation)
    assert (error.path, error.keyword) == (("kind",), "enum")
    # The second request carries the failed output and what was wrong with it.
    # The server (not OpenAI's) is not said to show the schema: the client shows it, once, in
    # a system message before the conversation; the feedback follows, never repeating it.
    shown = list(with_schema(MESSAGES, compile_schema(Pet).json_schema))
    first, second = sent(route, 0)["messages"], sent(route, 1)["messages"]
    assert first == shown and first[0]["role"] == "system" and first[1:] == MESSAGES
    assert second[: len(shown)] == shown and len(second) == len(shown) + 2
    assert second[-2] == {"role": "assistant", "content": '{"name": "Rex", "kind": "ham'}
    assert second[-1]["role"] == "user" and "/kind" in second[-1]["content"]
    assert sum("JSON Schema:" in str(m["content"]) for m in second) == 1
    # "/name" was "Rex" in both attempts: dispatched once.
    assert [(ev.value, ev.attempt) for ev in seen] == [("Rex", 1)]


async def test_retry_after_is_honoured_for_429(router: respx.MockRouter, client: Client) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "7"}, json={"error": {"message": "slow"}}),
            sse(Body(list(GOOD))),
        ]
    )
    sleeps = Sleeps()
    async with client.stream(
        messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=2, sleep=sleeps)
    ) as s:
        assert (await s.result()).name == "Rex"
    assert sleeps.delays == [7.0]
    assert route.call_count == 2
    error = s.attempts[0].error
    assert isinstance(error, TransportError)
    assert (error.status, error.retry_after) == (429, 7.0)
    # A transport error adds no feedback: the same conversation is sent again.
    assert sent(route, 1)["messages"] == sent(route, 0)["messages"]  # no feedback


async def test_500_is_retried_with_backoff(router: respx.MockRouter, client: Client) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(500, text="internal error"),
            httpx.Response(503, text="unavailable"),
            sse(Body(list(GOOD))),
        ]
    )
    sleeps = Sleeps()
    retry = Retry(max_attempts=3, backoff=0.5, multiplier=2.0, jitter=0.0, sleep=sleeps)
    async with client.stream(messages=MESSAGES, schema=Pet, retry=retry) as s:
        await s.result()
    assert sleeps.delays == [0.5, 1.0]
    assert route.call_count == 3
    assert [getattr(a.error, "status", None) for a in s.attempts] == [500, 503, None]


async def test_400_is_not_retried(router: respx.MockRouter, client: Client) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(400, json={"error": {"message": "bad schema"}}),
            sse(Body(list(GOOD))),
        ]
    )
    with pytest.raises(TransportError, match="bad schema") as info:
        async with client.stream(
            messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=3, sleep=Sleeps())
        ) as s:
            await s.result()
    assert info.value.status == 400
    assert route.call_count == 1


async def test_every_attempt_failing(router: respx.MockRouter, client: Client) -> None:
    router.post("/chat/completions").mock(
        side_effect=lambda _: httpx.Response(502, text="bad gateway")
    )
    # Retries of a transport failure that run out raise the failure's own class (as with
    # retries off), the earlier tries in its ``retries``.
    with pytest.raises(InternalServerError) as info:
        async with client.stream(
            messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=3, sleep=Sleeps())
        ) as s:
            await s.result()
    assert info.value.status_code == 502
    assert [e.status for e in info.value.retries] == [502, 502]
    assert [getattr(a.error, "status", None) for a in s.attempts] == [502, 502, 502]


async def test_connection_drop_mid_stream_is_retried_and_fields_fire_once(
    router: respx.MockRouter, client: Client
) -> None:
    dropped = Body(
        stream_of('{"name": "Rex", ', '"kind": "do', done=False, finish=None, usage=None),
        error=httpx.RemoteProtocolError("peer closed"),
    )
    router.post("/chat/completions").mock(side_effect=[sse(dropped), sse(Body(list(GOOD)))])
    names: list[str] = []
    async with client.stream(
        messages=MESSAGES,
        schema=Pet,
        on_field={"/name": names.append},
        retry=Retry(max_attempts=2, sleep=Sleeps(), jitter=0.0),
    ) as s:
        events = [ev async for ev in s if isinstance(ev, FieldEvent)]
        await s.result()
    assert isinstance(s.attempts[0].error, TransportError)
    assert s.attempts[0].error.retryable
    assert len(names) == 1
    assert [ev.path for ev in events].count(("name",)) == 1


async def test_stream_cut_without_done_or_finish_reason_is_truncation(
    router: respx.MockRouter, client: Client
) -> None:
    cut = Body(stream_of('{"name": "Rex", ', '"kind": "dog"', finish=None, usage=None, done=False))
    router.post("/chat/completions").mock(side_effect=[sse(cut), sse(Body(list(GOOD)))])
    async with client.stream(
        messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=2, sleep=Sleeps())
    ) as s:
        await s.result()
    error = s.attempts[0].error
    assert isinstance(error, TruncatedError)
    assert error.reason == "eof"
    assert error.snapshot == {"name": "Rex", "kind": "dog"}


async def test_a_complete_document_without_done_is_accepted(
    router: respx.MockRouter, client: Client
) -> None:
    router.post("/chat/completions").mock(
        return_value=sse(
            Body(
                stream_of(
                    '{"name": "Rex", "kind": "dog", "age": 3}', finish=None, usage=None, done=False
                )
            )
        )
    )
    async with client.stream(messages=MESSAGES, schema=Pet) as s:
        assert (await s.result()).age == 3


async def test_usage_is_summed_over_attempts(router: respx.MockRouter, client: Client) -> None:
    truncated = Body(stream_of('{"name": "Re', finish="length", usage=(10, 4)))
    router.post("/chat/completions").mock(side_effect=[sse(truncated), sse(Body(list(GOOD)))])
    async with client.stream(
        messages=MESSAGES, schema=Pet, max_tokens=4, retry=Retry(max_attempts=2, sleep=Sleeps())
    ) as s:
        await s.result()
    assert [a.usage for a in s.attempts] == [Usage(10, 4), Usage(10, 5)]
    assert s.usage == Usage(20, 9)
    assert isinstance(s.attempts[0].error, TruncatedError)
    assert s.attempts[0].error.reason == "length"


async def test_leaving_the_block_early_closes_the_response(
    router: respx.MockRouter, client: Client
) -> None:
    body = Body(
        stream_of('{"name": "Rex", ', *(['"kind": "dog", '] * 1), *([" "] * 100), '"age": 3}')
    )
    router.post("/chat/completions").mock(return_value=sse(body))
    async with client.stream(messages=MESSAGES, schema=Pet) as s:
        async for ev in s:
            if isinstance(ev, FieldEvent) and ev.path == ("name",):
                break
    assert body.closed
    assert body.pulled < 10


async def test_extra_parameters_reach_the_body(router: respx.MockRouter, client: Client) -> None:
    route = router.post("/chat/completions").mock(return_value=sse(Body(list(GOOD))))
    async with client.stream(
        messages=MESSAGES,
        schema=Pet,
        max_tokens=64,
        temperature=0.0,
        seed=1,
        extra_body={"stop": ["\n\n"], "logprobs": True, "structured_outputs": {"regex": ".*"}},
    ) as s:
        await s.result()
    body = sent(route, 0)
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (64, 0.0, 1)
    assert body["stop"] == ["\n\n"]
    assert body["logprobs"] is True
    assert body["structured_outputs"] == {"regex": ".*"}
    assert body["response_format"]["json_schema"]["name"] == "Pet"


async def test_a_looser_response_format_can_be_sent_in_extra(
    router: respx.MockRouter, client: Client
) -> None:
    # The server is given its own schema; the client still checks Pet.
    loose = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    route = router.post("/chat/completions").mock(
        return_value=sse(Body(stream_of('{"name": "Rex", "kind": "cow"}')))
    )
    with pytest.raises(SchemaViolation):
        async with client.stream(
            messages=MESSAGES, schema=Pet, extra_body={"response_format": loose}
        ) as s:
            await s.result()
    assert sent(route, 0)["response_format"] == loose


async def test_client_closes_only_the_http_client_it_made(router: respx.MockRouter) -> None:
    router.post("/chat/completions").mock(side_effect=lambda _: sse(Body(list(GOOD))))
    async with Client(base_url=BASE) as own:
        backend_http = own.backend.http_client  # type: ignore[attr-defined]
    assert backend_http.is_closed
    async with httpx.AsyncClient() as mine:
        async with Client(base_url=BASE, http_client=mine) as c:
            async with c.stream(messages=MESSAGES, schema=Pet) as s:
                await s.result()
        assert not mine.is_closed


class FakeBackend:
    """A backend that records requests and replays scripted deltas."""

    def __init__(self, *scripts: list[Delta]) -> None:
        self.scripts = list(scripts)
        self.requests: list[GenerationRequest] = []
        self.closed = False

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        self.requests.append(request)
        for delta in self.scripts.pop(0):
            yield delta

    async def aclose(self) -> None:
        self.closed = True


async def test_from_backend_builds_one_request_per_attempt() -> None:
    backend = FakeBackend(
        [Delta(text='{"name": "Rex", "kind": "dog", "age": "three"}')],
        [Delta(text='{"name": "Rex", "kind": "dog", "age": 3}'), Delta(finish_reason="stop")],
    )
    async with Client.from_backend(backend) as client:
        async with client.stream(
            messages=MESSAGES,
            schema=Pet,
            max_tokens=9,
            mode="tool",
            schema_name="pet",
            seed=7,
            retry=Retry(max_attempts=2),
        ) as s:
            await s.result()
    assert backend.closed
    first, second = backend.requests
    assert first.messages == tuple(MESSAGES)
    assert (first.mode, first.schema_name, first.max_tokens) == ("tool", "pet", 9)
    assert first.schema["properties"]["kind"]["enum"] == ["cat", "dog"]
    assert len(second.messages) == len(MESSAGES) + 2
    assert "/age" in second.messages[-1]["content"]
    # A retry does not replay the failed attempt's sampling.
    assert (first.seed, second.seed) == (7, 8)


async def test_schema_name_defaults_to_the_model_name() -> None:
    backend = FakeBackend([Delta(text='{"name": "Rex", "kind": "dog", "age": 3}')])
    async with client_for(backend).stream(messages=MESSAGES, schema=Pet) as s:
        await s.result()
    assert backend.requests[0].schema_name == "Pet"


class _Runaway(TruncatedError):
    cure = "compact_whitespace"


class CuringBackend(FakeBackend):
    """The first attempt ends with an error that names a cure."""

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        if not self.requests:
            self.requests.append(request)
            yield Delta(text='{"name": ')
            raise _Runaway("whitespace without end")
        async for delta in super().generate(request):
            yield delta


async def test_a_retry_asks_the_backend_for_the_cure_the_error_named() -> None:
    backend = CuringBackend([Delta(text='{"name": "Rex", "kind": "dog", "age": 3}')])
    async with client_for(backend).stream(
        messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=2)
    ) as s:
        await s.result()
    first, second = backend.requests
    assert (first.cures, second.cures) == (frozenset(), {"compact_whitespace"})


def client_for(backend: FakeBackend) -> Client:
    return Client.from_backend(backend)


def test_local_constructs_the_local_backend_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, Any]] = []

    class LocalBackend:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

    fake = types.ModuleType("sdk._local")
    fake.LocalBackend = LocalBackend  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sdk._local", fake)
    client = Client.local("some/model", "cpu", jump_forward=False, threads=1)
    assert isinstance(client.backend, LocalBackend)
    assert made == [
        {
            "model": "some/model",
            "device": "cpu",
            "runtime": None,
            "jump_forward": False,
            "threads": 1,
        }
    ]


def test_importing_the_client_does_not_import_the_local_engine() -> None:
    code = (
        "import sys, sdk._client; "
        "assert 'sdk._local' not in sys.modules and 'torch' not in sys.modules; "
        "assert 'openai' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
async def test_a_reasoning_models_thoughts_stream_apart_from_the_document(
    router: respx.MockRouter, client: Client, key: str
) -> None:
    # vLLM, SGLang and llama.cpp send the thinking as delta.reasoning_content, others as
    # delta.reasoning; a brace in it must not reach the parser.
    thinking = [event({key: "A dog {maybe"}), event({key: " named Rex}."})]
    body = Body([*thinking, *GOOD])
    router.post("/chat/completions").mock(side_effect=[sse(body)])
    async with client.stream(messages=MESSAGES, schema=Pet, reasoning=True) as s:
        events = [ev async for ev in s]
        pet = await s.result()
    assert pet == Pet(name="Rex", kind="dog", age=3)
    thoughts = [ev.text for ev in events if isinstance(ev, ReasoningDelta)]
    assert thoughts == ["A dog {maybe", " named Rex}."]
    assert [ev.path for ev in events if isinstance(ev, FieldEvent)][:3] == [
        ("name",),
        ("kind",),
        ("age",),
    ]
    assert s.attempts[0].reasoning == "A dog {maybe named Rex}."


async def test_transport_retries_do_not_spend_the_answers_budget(
    router: respx.MockRouter, client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    # Two budgets: two 429s are the client's max_retries' (2); the three answers Retry allows
    # are all still there for the two bad answers and the good one.
    bad = stream_of('{"name": "Rex", ', '"kind": "fish"')
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(429, headers={"retry-after-ms": "250", "x-request-id": "req_1"}),
            httpx.Response(429, headers={"retry-after-ms": "250", "x-request-id": "req_2"}),
            sse(Body(list(bad))),
            sse(Body(list(bad))),
            sse(Body(list(GOOD))),
        ]
    )
    sleeps = Sleeps()
    caplog.set_level(logging.INFO, logger="fieldstream")
    async with client.stream(
        messages=MESSAGES, schema=Pet, retry=Retry(max_attempts=3, sleep=sleeps)
    ) as s:
        assert (await s.result()).kind == "dog"
    assert route.call_count == 5
    assert sleeps.delays == [0.25, 0.25]
    assert [type(a.error).__name__ for a in s.attempts] == [
        "RateLimitError",
        "RateLimitError",
        "SchemaViolation",
        "SchemaViolation",
        "NoneType",
    ]
    lines = [r.getMessage() for r in caplog.records if r.name == "fieldstream"]
    assert lines[:2] == [
        "retrying the request after RateLimitError HTTP 429 request id req_1 in 0.25 seconds"
        " (retry 1 of 2)",
        "retrying the request after RateLimitError HTTP 429 request id req_2 in 0.25 seconds"
        " (retry 2 of 2)",
    ]
    assert lines[2].startswith("asking for a new answer after SchemaViolation at /kind")
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "fieldstream")


async def test_no_log_line_holds_a_secret(router: respx.MockRouter) -> None:
    # The error's message holds the URL (and so any key put in its query); no log line does.
    import logging as std_logging

    records: list[std_logging.LogRecord] = []
    handler = std_logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log = std_logging.getLogger("fieldstream")
    log.addHandler(handler)
    old = log.level
    log.setLevel(std_logging.DEBUG)
    try:
        router.post("/chat/completions").mock(
            side_effect=[httpx.Response(500, text="sk-secret in body"), sse(Body(list(GOOD)))]
        )
        async with Client(base_url=BASE, api_key="sk-secret", model="m") as c:
            async with c.stream(messages=MESSAGES, schema=Pet, retry=Retry(sleep=Sleeps())) as s:
                await s.result()
    finally:
        log.removeHandler(handler)
        log.setLevel(old)
    assert records
    assert not any("sk-secret" in r.getMessage() for r in records)


@pytest.mark.parametrize("retries", [0, 2])
async def test_a_429_is_a_rate_limit_error_with_retries_off_or_exhausted(
    router: respx.MockRouter, retries: int
) -> None:
    router.post("/chat/completions").mock(
        side_effect=lambda _: httpx.Response(429, json={"error": {"message": "slow"}})
    )
    async with Client(base_url=BASE, model="m", max_retries=retries) as c:
        with pytest.raises(TransportError) as info:
            async with c.stream(messages=MESSAGES, schema=Pet, retry=Retry(sleep=Sleeps())) as s:
                await s.result()
    assert isinstance(info.value, RateLimitError) and info.value.status == 429
    assert len(info.value.retries) == retries


@pytest.mark.parametrize(
    "option",
    [{"model": "other/model"}, {"timeout": 5}, {"extra_headers": {"X-A": "1"}}],
    ids=["model", "timeout", "extra_headers"],
)
def test_the_local_engine_refuses_per_request_http_options(option: dict[str, Any]) -> None:
    # They would be silently ignored in process: refused at the call instead, by name.
    from sdk import UnsupportedConstraint
    from sdk._local import LocalBackend

    client = Client.from_backend(LocalBackend())
    name = next(iter(option))
    with pytest.raises(UnsupportedConstraint, match=name):
        client.stream(messages=[{"role": "user", "content": "x"}], schema={}, **option)
