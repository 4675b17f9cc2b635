"""SyncClient: the async client behind a blocking face. Events, results, callbacks, retries,
abort, and every way of leaving a stream (break, exception, interrupt) closes the generation."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import httpx
import pytest
import respx
from pydantic import BaseModel, Field

from sdk import FieldEvent, Retry, SchemaViolation, StreamUsageError, SyncClient, TransportError
from tests.sdk._http_support import Body

BASE = "http://llm.test/v1"
MESSAGES = [{"role": "user", "content": "Describe a pet."}]


class Pet(BaseModel):
    name: str = Field(max_length=12)
    kind: Literal["cat", "dog"]
    age: int


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    payload = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def body_of(doc: str, size: int = 4, end: bool = True) -> Body:
    parts = [chunk(doc[i : i + size]) for i in range(0, len(doc), size)]
    if end:
        parts += [chunk(finish="stop"), b"data: [DONE]\n\n"]
    return Body(parts)


def sse(body: httpx.AsyncByteStream) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)


GOOD = json.dumps({"name": "Rex", "kind": "dog", "age": 3})
BAD = json.dumps({"name": "Rex", "kind": "cow", "age": 3})


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE) as router:
        yield router


@pytest.fixture
def client() -> Iterator[SyncClient]:
    with SyncClient(base_url=BASE, api_key="k", max_retries=0) as client:
        yield client


def test_events_and_a_typed_result(router: respx.MockRouter, client: SyncClient) -> None:
    router.post("/chat/completions").mock(return_value=sse(body_of(GOOD)))
    with client.stream(messages=MESSAGES, schema=Pet) as s:
        pointers = [ev.pointer for ev in s if isinstance(ev, FieldEvent)]
        pet = s.result()
    assert pointers == ["/name", "/kind", "/age", ""]
    assert pet == Pet(name="Rex", kind="dog", age=3)
    assert s.usage.completion_tokens > 0


def test_callbacks_and_an_early_retry(router: respx.MockRouter, client: SyncClient) -> None:
    bodies = [body_of(BAD), body_of(GOOD)]
    route = router.post("/chat/completions").mock(side_effect=[sse(b) for b in bodies])
    seen: list[tuple[str, Any, int]] = []
    with client.stream(
        messages=MESSAGES,
        schema=Pet,
        retry=Retry(max_attempts=2),
        on_field={"/*": lambda ev: seen.append((ev.pointer, ev.value, threading.get_ident()))},
    ) as s:
        assert s.result() == Pet(name="Rex", kind="dog", age=3)
    assert [p for p, _, _ in seen] == ["/name", "/kind", "/age"]  # /name once: same value
    assert {t for _, _, t in seen} != {threading.get_ident()}  # they ran in the loop thread
    assert bodies[0].closed and bodies[0].pulled < len(bodies[0].parts)  # aborted at "cow"
    assert route.call_count == 2
    assert isinstance(s.attempts[0].error, SchemaViolation)


def test_an_error_is_raised_as_itself(router: respx.MockRouter, client: SyncClient) -> None:
    router.post("/chat/completions").mock(return_value=httpx.Response(503, text="busy"))
    with pytest.raises(TransportError) as info, client.stream(messages=MESSAGES, schema=Pet) as s:
        s.result()
    assert info.value.status == 503


def test_break_closes_the_generation(router: respx.MockRouter, client: SyncClient) -> None:
    body = body_of(GOOD, size=2)
    router.post("/chat/completions").mock(return_value=sse(body))
    with client.stream(messages=MESSAGES, schema=Pet) as s:
        for _ in s:
            break
    assert body.closed
    assert body.pulled < len(body.parts)


def test_an_exception_in_the_block_closes_the_generation(
    router: respx.MockRouter, client: SyncClient
) -> None:
    body = body_of(GOOD, size=2)
    router.post("/chat/completions").mock(return_value=sse(body))
    with (
        pytest.raises(RuntimeError, match="boom"),
        client.stream(messages=MESSAGES, schema=Pet) as s,
    ):
        next(iter(s))
        raise RuntimeError("boom")
    assert body.closed


# How long a test waits for what it sent (a signal, a thread's step) before it fails saying what
# never came: far longer than a loaded machine needs, far shorter than the suite's timeout.
WAIT = 30.0


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """SIGINT raising ``KeyboardInterrupt`` in the main thread (Python's default), for the test,
    then what it was. A process started in the background by a non-interactive shell (``cmd &``
    in a script, many CI runners) inherits SIGINT ignored: a test that sends one and waits for
    its ``KeyboardInterrupt`` would wait for good."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def sigint_as(request: pytest.FixtureRequest) -> Iterator[None]:
    """SIGINT's disposition set to ``request.param`` for the test, then what it was."""
    previous = signal.signal(signal.SIGINT, request.param)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Hanging(httpx.AsyncByteStream):
    """A body that sends a first part, then waits until closed; after :data:`WAIT` seconds it
    fails, saying the interrupt it waited for never reached the call (the test then fails with
    that, not at the suite's timeout)."""

    def __init__(self) -> None:
        self.closed = False
        self.started = threading.Event()  # set once the first part is sent

    async def __aiter__(self) -> Any:
        import anyio

        yield chunk('{"name": "R')
        self.started.set()
        await anyio.sleep(WAIT)
        raise AssertionError(f"no interrupt reached the waiting call in {WAIT} s")

    async def aclose(self) -> None:
        self.closed = True


class Resumed(httpx.AsyncByteStream):
    """A body that sends a first part, waits until :attr:`resume` is set (by the test, once its
    signal was sent or handled), then the rest of :data:`GOOD`."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.resume = threading.Event()

    async def __aiter__(self) -> Any:
        import anyio

        yield chunk(GOOD[:5])
        self.started.set()
        with anyio.fail_after(WAIT):  # the test's step never came: fail, do not hang
            # A threading.Event, set from another thread or a signal handler: polled, since
            # an anyio.Event may only be set from the loop's own thread.
            while not self.resume.is_set():  # noqa: ASYNC110
                await anyio.sleep(0.01)
        yield chunk(GOOD[5:])
        yield chunk(finish="stop")
        yield b"data: [DONE]\n\n"


def _in_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _hanging(router: respx.MockRouter) -> Hanging:
    """A chat completions body that streams nothing and never ends, until closed."""
    body = Hanging()
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)
    )
    return body


def _interrupt_main_once_streaming(body: Hanging) -> Callable[[], None]:
    """What a signalling thread runs: a real SIGINT to the main thread (what Ctrl-C does), once
    ``body`` is being read."""
    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:
        assert body.started.wait(WAIT), f"the body was not read in {WAIT} s"
        signal.pthread_kill(main, signal.SIGINT)

    return interrupt


def _joined(thread: threading.Thread) -> None:
    thread.join(WAIT)
    assert not thread.is_alive(), f"the test's signalling thread did not end in {WAIT} s"


@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_while_waiting_closes_the_generation(
    router: respx.MockRouter, client: SyncClient
) -> None:
    body = _hanging(router)
    # A real SIGINT, to the main thread: what Ctrl-C does. Sent once the body is streaming,
    # while the main thread waits for the result (however slowly a loaded machine gets there).
    interrupt = _interrupt_main_once_streaming(body)
    with pytest.raises(KeyboardInterrupt), client.stream(messages=MESSAGES, schema=Pet) as s:
        timer = _in_thread(interrupt)
        s.result()  # waits on the hanging body until the interrupt
    _joined(timer)
    assert body.closed


@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_caught_by_another_thread_still_interrupts_the_wait(
    router: respx.MockRouter, client: SyncClient
) -> None:
    """A SIGINT whose C handler runs in another thread (the kernel may deliver a process's
    signal to any thread) only sets a flag: a main thread asleep on a lock is not woken, and
    one unbounded wait for the result slept through it for good. Waited in slices, the main
    thread sees the flag at the next slice."""
    body = _hanging(router)

    def interrupt() -> None:
        assert body.started.wait(WAIT), f"the body was not read in {WAIT} s"
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread, not main

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), client.stream(messages=MESSAGES, schema=Pet) as s:
        thread = _in_thread(interrupt)
        s.result()
    _joined(thread)
    assert body.closed
    assert time.monotonic() - started < WAIT


@pytest.mark.parametrize("sigint_as", [signal.SIG_IGN], indirect=True)
@pytest.mark.usefixtures("sigint_as")
def test_with_sigint_ignored_a_ctrl_c_leaves_the_call_to_its_end(
    router: respx.MockRouter, client: SyncClient
) -> None:
    """SIGINT ignored (``nohup``, a background job of a script): the SyncClient installs no
    handler of its own and waits for no signal, so the call runs to its end and returns."""
    body = Resumed()
    router.post("/chat/completions").mock(return_value=sse(body))
    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:
        assert body.started.wait(WAIT), f"the body was not read in {WAIT} s"
        signal.pthread_kill(main, signal.SIGINT)  # discarded: ignored
        time.sleep(0.3)  # three of the waiting call's slices
        body.resume.set()

    with client.stream(messages=MESSAGES, schema=Pet) as s:
        thread = _in_thread(interrupt)
        assert s.result() == Pet(name="Rex", kind="dog", age=3)
    _joined(thread)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # left as the process had it


class Stop(Exception):
    """What an application's own SIGINT handler raises."""


def _raise_stop(signum: int, frame: Any) -> None:
    raise Stop(signum)


@pytest.mark.parametrize("sigint_as", [_raise_stop], indirect=True)
@pytest.mark.usefixtures("sigint_as")
def test_a_handler_of_the_app_s_own_that_raises_interrupts_the_wait(
    router: respx.MockRouter, client: SyncClient
) -> None:
    """A handler the application installed runs while the call waits (within a slice); what it
    raises ends the call as ``KeyboardInterrupt`` does: the generation is closed first."""
    body = _hanging(router)
    interrupt = _interrupt_main_once_streaming(body)
    with pytest.raises(Stop), client.stream(messages=MESSAGES, schema=Pet) as s:
        thread = _in_thread(interrupt)
        s.result()
    _joined(thread)
    assert body.closed


def test_a_handler_of_the_app_s_own_that_returns_leaves_the_call_running(
    router: respx.MockRouter, client: SyncClient
) -> None:
    """A handler that only records the signal (a flag the application reads later) runs while
    the call waits, and the call goes on to its end: the SyncClient does not turn a signal into
    an interrupt the application did not ask for."""
    body = Resumed()
    router.post("/chat/completions").mock(return_value=sse(body))
    handled: list[int] = []

    def record(signum: int, frame: Any) -> None:
        handled.append(signum)
        body.resume.set()  # the rest of the reply comes only once the handler has run

    interrupt = _interrupt_main_once_streaming(body)
    previous = signal.signal(signal.SIGINT, record)
    try:
        with client.stream(messages=MESSAGES, schema=Pet) as s:
            thread = _in_thread(interrupt)
            assert s.result() == Pet(name="Rex", kind="dog", age=3)
        _joined(thread)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert handled == [signal.SIGINT]


def test_ctrl_c_inside_the_portal_after_the_task_began_still_closes_the_generation(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    router: respx.MockRouter,
    client: SyncClient,
) -> None:
    """The race a loaded machine hit: the interrupt lands inside the portal's own code, after
    the task began and before the caller held its future. The task must still be cancelled,
    and ended, before the stream is left: else leaving closes a generation that task is still
    reading ("aclose(): asynchronous generator is already running") and it stays open."""
    from anyio.from_thread import BlockingPortal

    body = _hanging(router)
    real = BlockingPortal.start_task_soon
    armed = [True]

    def start_then_interrupt(self: BlockingPortal, func: Any, *args: Any, **kw: Any) -> Any:
        future = real(self, func, *args, **kw)
        if armed[0]:
            armed[0] = False
            assert body.started.wait(WAIT)  # the task is reading the body
            raise KeyboardInterrupt  # as a SIGINT's handler would, here
        return future

    with client.stream(messages=MESSAGES, schema=Pet) as s:
        monkeypatch.setattr(BlockingPortal, "start_task_soon", start_then_interrupt)
        with pytest.raises(KeyboardInterrupt):
            s.result()
        monkeypatch.undo()
    assert not armed[0]
    assert body.closed
    assert "closing the stream's source failed" not in caplog.text


def test_one_client_from_many_threads(router: respx.MockRouter, client: SyncClient) -> None:
    router.post("/chat/completions").mock(side_effect=lambda _: sse(body_of(GOOD)))
    results: list[Pet] = []

    def run() -> None:
        with client.stream(messages=MESSAGES, schema=Pet) as s:
            results.append(s.result())

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        _joined(t)
    assert results == [Pet(name="Rex", kind="dog", age=3)] * 8


def test_arguments_are_checked_at_the_call(client: SyncClient) -> None:
    with pytest.raises(TypeError, match="messages"):
        client.stream(messages="hi", schema=Pet)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="mode"):
        client.stream(messages=MESSAGES, schema=Pet, mode="json")  # type: ignore[call-overload]


def test_a_closed_client_says_so_and_starts_no_thread(router: respx.MockRouter) -> None:
    client = SyncClient(base_url=BASE, api_key="k")
    client.close()
    threads = threading.active_count()
    with pytest.raises(StreamUsageError, match="closed"):
        client.stream(messages=MESSAGES, schema=Pet)
    assert threading.active_count() == threads
    client.close()  # closing twice does nothing


def test_a_stream_never_left_does_not_block_close(router: respx.MockRouter) -> None:
    body = body_of(GOOD, end=False)
    router.post("/chat/completions").mock(return_value=sse(body))
    client = SyncClient(base_url=BASE, api_key="k", max_retries=0)
    s = client.stream(messages=MESSAGES, schema=Pet)
    s.__enter__()
    next(iter(s))  # reading, then abandoned inside its block
    closer = threading.Thread(target=client.close, daemon=True)
    closer.start()
    closer.join(timeout=20)
    assert not closer.is_alive(), "close() waited for a stream nobody will leave"
    assert body.closed  # the generation was stopped
    s.__exit__(None, None, None)  # leaving it later does nothing


def test_a_task_its_caller_lost_does_not_block_close(router: respx.MockRouter) -> None:
    # Ctrl-C landing inside the portal's own code, after it started a task and before the
    # caller held its future, leaves a task nobody waits for: close() cancels it.
    import anyio

    client = SyncClient(base_url=BASE, api_key="k")
    client._loop.portal().start_task_soon(anyio.sleep_forever)
    closer = threading.Thread(target=client.close, daemon=True)
    closer.start()
    closer.join(timeout=20)
    assert not closer.is_alive(), "close() waited for a task nobody will end"


_NEVER_LEFT = """
import anyio, sdk
from sdk import Delta, SyncClient

class Forever:
    async def generate(self, request):
        yield Delta(text='{"name": ')
        await anyio.sleep_forever()
    async def aclose(self):
        pass

client = SyncClient.from_backend(Forever(), max_retries=0)
stream = client.stream(messages=[{"role": "user", "content": "x"}], schema={"type": "object"})
stream.__enter__()
print("entered", flush=True)
"""


def test_the_process_exits_with_a_stream_never_left_and_a_client_never_closed() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", _NEVER_LEFT], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "entered"


@pytest.mark.anyio
async def test_inside_a_running_event_loop_it_refuses_clearly(router: respx.MockRouter) -> None:
    client = SyncClient(base_url=BASE, api_key="k")
    try:
        with pytest.raises(StreamUsageError, match=r"inside a running .* event loop"):
            client.stream(messages=MESSAGES, schema=Pet)
    finally:
        client._finalizer()  # the loop thread never started; nothing to release there


def test_sync_stream_has_partial_and_the_schema(router: respx.MockRouter) -> None:
    router.post("/chat/completions").mock(return_value=sse(body_of(GOOD)))
    with SyncClient(base_url=BASE, api_key="k") as client:
        with client.stream(messages=MESSAGES, schema=Pet) as s:
            assert s.partial.view is None and s.partial.get(lambda p: p.name) is None
            first = next(iter(s))
            assert isinstance(first, FieldEvent)
            partial = s.partial
            assert isinstance(partial.view, Pet) and partial.get(lambda p: p.name) == "Rex"
            assert s.schema_name == "Pet" and s.json_schema["type"] == "object"
            s.result()


def test_from_openai_takes_the_sync_openai_client_settings() -> None:
    import openai

    users = openai.OpenAI(
        api_key="sk-user",
        organization="org-1",
        project="proj-1",
        base_url="http://oai.test/v1",
        max_retries=4,
        timeout=12.0,
        default_headers={"X-App": "a"},
        default_query={"v": "1"},
    )
    with SyncClient.from_openai(users, model="gpt-4o") as client:
        copied = client.backend._client  # type: ignore[attr-defined]
        assert isinstance(copied, openai.AsyncOpenAI)
        assert (copied.api_key, copied.organization, copied.project) == (
            "sk-user",
            "org-1",
            "proj-1",
        )
        assert str(copied.base_url) == "http://oai.test/v1/"
        assert (copied.max_retries, copied.timeout) == (4, 12.0)
        assert copied.default_headers["X-App"] == "a"
        assert copied.default_query["v"] == "1"


def test_a_sync_httpx_client_gets_a_clear_error() -> None:
    with (
        httpx.Client() as http,
        pytest.raises(
            TypeError,
            match=r"SyncClient\(http_client=\.\.\.\) takes an httpx.AsyncClient.*timeout=",
        ),
    ):
        SyncClient(base_url=BASE, http_client=http)  # type: ignore[arg-type]


def test_with_options_shares_the_loop_and_closes_nothing(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(side_effect=lambda _: sse(body_of(GOOD)))
    with SyncClient(base_url=BASE, api_key="k", model="m") as client:
        other = client.with_options(model="m2", extra_headers={"X-A": "1"})
        with other.stream(messages=MESSAGES, schema=Pet) as s:
            s.result()
        sent = route.calls.last.request
        assert json.loads(sent.content)["model"] == "m2" and sent.headers["X-A"] == "1"
        other.close()
        with client.stream(messages=MESSAGES, schema=Pet) as s:  # the original still works
            s.result()
    with pytest.raises(StreamUsageError, match="closed"):
        other.stream(messages=MESSAGES, schema=Pet)


def test_a_with_options_copy_made_on_one_line_keeps_its_owner_alive(
    router: respx.MockRouter,
) -> None:
    # openai-python's usual `OpenAI().with_options(...)`: the owner is unreachable at once, and
    # its finalizer must not stop the loop thread the copy runs on.
    import gc

    router.post("/chat/completions").mock(side_effect=lambda _: sse(body_of(GOOD)))
    client = SyncClient(base_url=BASE, api_key="k", model="m").with_options(timeout=5)
    gc.collect()
    with client.stream(messages=MESSAGES, schema=Pet) as s:
        assert s.result() == Pet.model_validate_json(GOOD)


def test_batch_runs_many_requests_in_the_loop_thread(router: respx.MockRouter) -> None:
    router.post("/chat/completions").mock(side_effect=lambda _: sse(body_of(GOOD)))
    requests = [{"id": i, "prompt": f"pet {i}"} for i in range(6)]
    requests.append({"prompt": "no id"})  # a bad request is a result, not a crash
    with SyncClient(base_url=BASE, api_key="k") as client:
        with client.batch(requests, schema=Pet, concurrency=2) as results:
            done = list(results)
        pets = {r.id: r.value for r in done if r.error is None}
        assert pets == {i: Pet(name="Rex", kind="dog", age=3) for i in range(6)}
        assert [r.id for r in done if r.error is not None] == [None]
        with (
            pytest.raises(ValueError, match="concurrency"),
            client.batch([], schema=Pet, concurrency=0),
        ):
            pass


def test_leaving_a_batch_early_stops_what_runs(router: respx.MockRouter) -> None:
    bodies: list[Hanging] = []

    def hang(_: httpx.Request) -> httpx.Response:
        bodies.append(Hanging())
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=bodies[-1])

    router.post("/chat/completions").mock(side_effect=hang)
    with SyncClient(base_url=BASE, api_key="k", max_retries=0) as client:
        with client.batch([{"id": i, "prompt": "x"} for i in range(3)], schema=Pet) as results:
            assert all(b.started.wait(WAIT) for b in _wait_for(bodies, 3))
            del results  # never read: leaving the block cancels the three
    assert len(bodies) == 3 and all(b.closed for b in bodies)


def _wait_for(items: list[Hanging], n: int) -> list[Hanging]:
    deadline = time.monotonic() + WAIT
    while len(items) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return items


def test_the_sync_surface_is_derived_from_the_async_one() -> None:
    import inspect

    from sdk import Client

    for name in ("stream", "batch", "with_options", "from_backend", "local"):
        sync, original = getattr(SyncClient, name), getattr(Client, name)
        assert inspect.getdoc(original) in (inspect.getdoc(sync) or ""), name
        assert sync.__name__ == name
