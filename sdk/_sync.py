"""``SyncClient``: the :class:`~sdk.Client` for code without an event loop.

Scripts, notebooks and WSGI apps call it like any blocking library; underneath, one
implementation: the async :class:`~sdk.Client`, run on an event loop in a thread of its own
(anyio's blocking portal), started on first use and stopped by :meth:`SyncClient.close`.

Every call waits for its result; a call interrupted while it waits (Ctrl-C, a signal) cancels
what it was waiting for in the loop before it raises, so nothing keeps running behind the
caller's back. Leaving a ``with client.stream(...)`` block closes the generation whatever
happened inside it (a ``break``, an exception, an interrupt). ``on_field`` callbacks run in the
loop's thread, as they do in the async client.

Signals are the application's: the client installs no handler and never changes one. It waits
for a result, never for a signal, in slices of :data:`_WAIT_SLICE` seconds, so whatever SIGINT
handler the process has runs in the waiting main thread within a slice:

- Python's default (``KeyboardInterrupt``), or any handler that raises: the call is cancelled,
  its generation closed, and the exception raised;
- a handler that returns (one that records the signal for later): the call goes on to its end;
- SIGINT ignored (what a process started in the background by a non-interactive shell, or
  under ``nohup``, inherits): Ctrl-C does nothing to the call, which ends as it would have
  (its reply, an error, the client's timeouts); ``signal.signal(signal.SIGINT,
  signal.default_int_handler)`` gives Ctrl-C back.

Python runs signal handlers in the main thread only: a call made in another thread is not
interrupted by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, TypeVar, overload

import anyio
import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal
from typing_extensions import ParamSpec, Unpack

from sdk._backend import Backend
from sdk._client import Client
from sdk._constants import DEFAULT_MAX_RETRIES, WRAPPED_MAX_RETRIES
from sdk._errors import StreamUsageError
from sdk._events import Event, FieldEvent
from sdk._http.openai import DEFAULT_API, Api, Server, sync_client_hint
from sdk._partial_typed import Partial
from sdk._providers import DEFAULT_PROVIDER, Provider, async_vendor_client
from sdk._stream._stream import Stream

if TYPE_CHECKING:
    from sdk._client_options import ClientOptions

__all__ = ["SyncClient", "SyncStream"]

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

logger = logging.getLogger("fieldstream")

_CANCEL_WAIT = 10.0  # seconds an interrupted call waits for its task to end in the loop
# A blocking wait is made of waits this long: a signal (Ctrl-C) that lands between CPython's
# check for pending signals and its sleep on a lock is not lost, it is seen at the next slice.
_WAIT_SLICE = 0.1


def _wait(future: concurrent.futures.Future[R]) -> R:
    """``future.result()``, waited for in slices of :data:`_WAIT_SLICE` seconds, so that the
    calling thread runs its signal handlers (Ctrl-C's ``KeyboardInterrupt``) while it waits,
    however loaded the machine is: one unbounded wait on a lock can sleep through a SIGINT."""
    while True:
        try:
            return future.result(timeout=_WAIT_SLICE)
        except TimeoutError:
            if future.done():  # the task's own TimeoutError, not the slice's
                raise


class _Loop:
    """The event loop thread of one client, started on first use; never again once stopped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._manager: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._stopped = False
        self._open: set[SyncStream[Any]] = set()  # entered, not yet left

    def portal(self) -> BlockingPortal:
        _refuse_inside_a_loop()
        with self._lock:
            if self._stopped:
                raise StreamUsageError(
                    "this SyncClient was closed; make a new one to send more requests"
                )
            if self._portal is None:
                manager = start_blocking_portal(name="fieldstream")
                self._portal = manager.__enter__()
                self._manager = manager
            return self._portal

    def call(self, func: Callable[[], Awaitable[R]]) -> R:
        """Run ``func()`` in the loop and wait for it; an interrupted wait cancels it."""
        task = _Task(func)
        try:
            return _wait(task.start(self.portal()))
        except BaseException:
            task.cancel(self)
            raise

    def stop(self) -> None:
        for stream in list(self._open):  # entered, never left: left now, so nothing waits
            stream._abandon()
        with self._lock:
            self._stopped = True
            manager, self._manager = self._manager, None
            portal, self._portal = self._portal, None
        if manager is None or portal is None:
            return
        try:
            # Tasks still running are cancelled, not waited for: a task whose caller was
            # interrupted before it held the task's future (Ctrl-C inside the portal's own
            # code) would otherwise keep the loop, and this close, waiting for good.
            _wait(portal.start_task_soon(portal.stop, True))
        except RuntimeError:  # the loop had already stopped
            pass
        finally:
            manager.__exit__(None, None, None)


class _Task(Generic[R]):
    """``func()`` run as a task of the loop, for a thread that waits for it and may be
    interrupted (Ctrl-C) at any point: while it waits, or inside the portal's own code before
    it holds the task's future. Either way :meth:`cancel` finds the task, cancels it, and waits
    (a bounded time) until it has ended, so what the thread does next (leaving the stream, which
    closes the generation the task was reading) never runs beside it."""

    def __init__(self, func: Callable[[], Awaitable[R]]) -> None:
        self._func = func
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False  # these three are read and written in the loop's thread only
        self._begun = False
        self._ended = threading.Event()

    def start(self, portal: BlockingPortal) -> concurrent.futures.Future[R]:
        """Start the task; the future of its result."""
        return portal.start_task_soon(self._run)

    async def _run(self) -> R:
        self._begun = True
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._cancelled:  # cancelled before it began
                    scope.cancel()
                return await self._func()
            raise anyio.get_cancelled_exc_class()()  # its own scope caught the cancellation
        finally:
            self._ended.set()

    def _cancel_in_loop(self) -> None:
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    def cancel(self, loop: _Loop) -> None:
        """Cancel the task (begun, or not yet) and wait until it has ended; nothing if it had."""
        portal = loop._portal
        if portal is None:
            return
        try:
            # Run in the loop after the task's spawn, if there was one (the loop runs what it
            # is handed in order): it has begun by then, or it never will.
            _wait(portal.start_task_soon(self._cancel_in_loop))
        except RuntimeError:  # the loop has stopped: nothing runs there any more
            return
        if self._begun:
            self._ended.wait(_CANCEL_WAIT)


class _Context(Generic[T]):
    """An async context manager entered and left by a thread: both in one task of the loop
    (a task group opened on entry must be left by the task that opened it), as anyio's
    ``BlockingPortal.wrap_async_context_manager`` does, but with the thread's waits made by
    :func:`_wait`, so Ctrl-C interrupts them too."""

    def __init__(self, manager: AbstractAsyncContextManager[T], loop: _Loop) -> None:
        self._manager = manager
        self._loop = loop
        self._entered: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._exit_info: tuple[Any, Any, Any] = (None, None, None)
        self._leave: anyio.Event | None = None
        self._task: _Task[bool | None] | None = None
        self._exited: concurrent.futures.Future[bool | None] = concurrent.futures.Future()

    async def _run(self) -> bool | None:
        self._leave = anyio.Event()
        try:
            value = await self._manager.__aenter__()
        except BaseException as exc:
            self._entered.set_exception(exc)
            raise
        self._entered.set_result(value)
        try:
            await self._leave.wait()
        finally:  # also when the task is cancelled (an interrupted wait, a stopped loop)
            left = await self._manager.__aexit__(*self._exit_info)
        return left

    def __enter__(self) -> T:
        self._task = _Task(self._run)
        self._exited = self._task.start(self._loop.portal())
        try:
            return _wait(self._entered)
        except BaseException:
            self._task.cancel(self._loop)
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task is not None
        self._exit_info = (exc_type, exc, tb)
        if self._leave is not None and not self._exited.done():
            self._loop.call(self._set_leave)
        try:
            return _wait(self._exited)
        except BaseException:
            self._task.cancel(self._loop)
            raise

    async def _set_leave(self) -> None:
        assert self._leave is not None
        self._leave.set()


def _nothing() -> None:
    pass


def _refuse_inside_a_loop() -> None:
    """A blocking call made from a running event loop would block that loop (and every task
    on it) until it returns: refused, as ``asyncio.run`` refuses, with what to use instead."""
    library = None
    try:
        asyncio.get_running_loop()
        library = "asyncio"
    except RuntimeError:
        trio = sys.modules.get("trio")
        if trio is not None:
            try:
                trio.lowlevel.current_trio_token()
                library = "trio"
            except RuntimeError:
                pass
    if library is None:
        return
    raise StreamUsageError(
        f"SyncClient cannot be used inside a running {library} event loop (it would block "
        "the loop until the call returns); use sdk.Client and `await` it there"
    )


def _copying(
    method: Callable[Concatenate[Client, P], Client],
) -> Callable[Concatenate[SyncClient, P], SyncClient]:
    """``SyncClient.with_options``: ``method`` (``Client.with_options``) on the async client, the
    copy made a :class:`SyncClient` sharing this one's loop thread; it keeps its owner alive
    while it is used (``SyncClient(...).with_options(...)`` works on one line), and closing
    the copy closes nothing (close the original)."""

    def with_options(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> SyncClient:
        copy = SyncClient.__new__(SyncClient)
        copy._client = method(self._client, *args, **kwargs)
        copy._loop = self._loop
        copy._parent = self  # the owner of the loop thread lives as long as the copy
        copy._finalizer = weakref.finalize(copy, _nothing)
        copy._finalizer.detach()  # the owner's finalizer stops the loop, not the copy's
        return copy

    return _described(with_options, method)


def _blocking_stream(
    method: Callable[Concatenate[Client, P], Stream[T]],
) -> Callable[Concatenate[SyncClient, P], SyncStream[T]]:
    """``SyncClient.stream``: ``method`` (``Client.stream``, every overload) with its stream
    wrapped in a :class:`SyncStream` (the arguments are checked at once, here)."""

    def stream(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> SyncStream[T]:
        self._check_open()
        return SyncStream(method(self._client, *args, **kwargs), self._loop)

    return _described(stream, method)


def _blocking_batch(
    method: Callable[Concatenate[Client, P], AbstractAsyncContextManager[AsyncIterator[R]]],
) -> Callable[Concatenate[SyncClient, P], AbstractContextManager[Iterator[R]]]:
    """``SyncClient.batch``: ``method`` (``Client.batch``) as a blocking context manager
    whose value is an iterator of results as they complete: ``with client.batch(...) as
    results: for done in results: ...``. The requests run in the client's loop thread;
    leaving the block early cancels what still runs."""

    def batch(
        self: SyncClient, /, *args: P.args, **kwargs: P.kwargs
    ) -> AbstractContextManager[Iterator[R]]:
        self._check_open()
        return _BlockingBatch(method(self._client, *args, **kwargs), self._loop)

    return _described(batch, method)


def _constructor(method: Callable[P, Client]) -> staticmethod[P, SyncClient]:
    """A ``SyncClient`` constructor made of a ``Client`` one (``from_backend``, ``local``)."""

    def construct(*args: P.args, **kwargs: P.kwargs) -> SyncClient:
        return SyncClient._wrap(method(*args, **kwargs))

    return staticmethod(_described(construct, method))


F = TypeVar("F", bound=Callable[..., Any])


def _described(wrapper: F, method: Callable[..., Any]) -> F:
    """``wrapper`` named as ``method``, documented by it, its signature ``method``'s (for
    ``help()``, ``inspect.signature`` and the API reference)."""
    name = method.__name__
    wrapper.__name__ = name
    wrapper.__qualname__ = f"SyncClient.{name}"
    wrapper.__wrapped__ = method  # type: ignore[attr-defined]  # inspect.signature reads it
    wrapper.__doc__ = (
        f"As :meth:`sdk.Client.{name}`, blocking (its arguments, overloads included, are "
        f"the same: the signature is derived from it).\n\n{inspect.getdoc(method) or ''}"
    )
    return wrapper


class _BlockingBatch(AbstractContextManager[Iterator[R]]):
    """A batch entered and left in one task of the loop (its task group lives there), its
    results read one at a time by the thread."""

    def __init__(self, manager: AbstractAsyncContextManager[AsyncIterator[R]], loop: _Loop) -> None:
        self._context = _Context(manager, loop)
        self._loop = loop

    def __enter__(self) -> Iterator[R]:
        results = self._context.__enter__()
        return self._results(results)

    def _results(self, results: AsyncIterator[R]) -> Iterator[R]:
        while True:
            try:
                yield self._loop.call(results.__anext__)
            except StopAsyncIteration:
                return

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self._context.__exit__(exc_type, exc, tb)


class SyncClient:
    """A blocking :class:`~sdk.Client`: the same constructors and ``stream(...)`` parameters.

    ``with SyncClient(...) as client:`` (or :meth:`close` when done). ``client.stream(...)``
    returns a :class:`SyncStream`: ``with client.stream(...) as s: for ev in s: ...;
    s.result()``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        api: Api = DEFAULT_API,
        provider: Provider = DEFAULT_PROVIDER,
        **options: Unpack[ClientOptions],
    ) -> None:
        http_client: object = options.get("http_client")
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise TypeError(
                f"SyncClient(http_client=...) takes an httpx.AsyncClient (it runs in the "
                f"client's own event loop thread), not {type(http_client).__name__}; give its "
                "settings instead (timeout=, headers=, default_query=), or build an "
                "httpx.AsyncClient with the same proxies and TLS" + sync_client_hint(http_client)
            )
        self._attach(
            Client(
                base_url,
                api_key,
                model,
                max_retries=max_retries,
                api=api,
                provider=provider,
                **options,
            )
        )

    def _attach(self, client: Client) -> None:
        self._client = client
        self._parent: SyncClient | None = None
        self._loop = _Loop()
        # A client never closed still stops its loop thread when collected or at exit.
        self._finalizer = weakref.finalize(self, self._loop.stop)

    @classmethod
    def _wrap(cls, client: Client) -> SyncClient:
        sync = cls.__new__(cls)
        sync._attach(client)
        return sync

    # The surface that follows Client's: each wraps the async method it names, its
    # signature (overloads included) derived from that method's by the type checker, never
    # written again here (see _blocking_stream and the others above the class).
    with_options = _copying(Client.with_options)
    stream = _blocking_stream(Client.stream)
    batch = _blocking_batch(Client.batch)
    from_backend = _constructor(Client.from_backend)
    local = _constructor(Client.local)

    @classmethod
    def from_openai(
        cls,
        client: Any,
        *,
        model: str,
        strict: bool = True,
        max_retries: int = WRAPPED_MAX_RETRIES,
        api: Api = DEFAULT_API,
        server: Server | None = None,
    ) -> SyncClient:
        """As :meth:`sdk.Client.from_openai`. ``client`` is an ``openai.OpenAI``, whose settings
        (API key, organization, project, base URL, timeout, max retries, default headers and
        query) are copied into an ``openai.AsyncOpenAI`` that runs in this client's loop
        thread (its HTTP client, being synchronous, cannot be: proxies and TLS set on it are
        not carried over), or an ``openai.AsyncOpenAI`` used as it is."""
        client = async_vendor_client(client)
        return cls._wrap(
            Client.from_openai(
                client, model=model, strict=strict, max_retries=max_retries, api=api, server=server
            )
        )

    @classmethod
    def from_anthropic(
        cls, client: Any, *, model: str, max_retries: int = WRAPPED_MAX_RETRIES
    ) -> SyncClient:
        """As :meth:`sdk.Client.from_anthropic`. ``client`` is an ``anthropic.Anthropic``, whose
        settings (API key or auth token, base URL, timeout, max retries, default headers and
        query) are copied into an ``anthropic.AsyncAnthropic`` that runs in this client's loop
        thread (proxies and TLS set on its synchronous HTTP client are not carried over), or an
        ``anthropic.AsyncAnthropic`` used as it is."""
        return cls._wrap(
            Client.from_anthropic(async_vendor_client(client), model=model, max_retries=max_retries)
        )

    @classmethod
    def from_genai(
        cls, client: Any, *, model: str, max_retries: int = WRAPPED_MAX_RETRIES
    ) -> SyncClient:
        """As :meth:`sdk.Client.from_genai`: ``client`` (a ``google.genai.Client``) streams
        through its ``aio`` side, in this client's loop thread."""
        return cls._wrap(Client.from_genai(client, model=model, max_retries=max_retries))

    @property
    def backend(self) -> Backend:
        """The backend requests go to."""
        return self._client.backend

    def _check_open(self) -> None:
        if self._loop._stopped:
            raise StreamUsageError(
                "this SyncClient was closed; make a new one to send more requests"
            )
        _refuse_inside_a_loop()

    def close(self) -> None:
        """Leave any stream still entered (its generation stops), release the backend, then
        stop the loop thread. Closing twice does nothing; any other use after ``close()``
        raises :class:`~sdk.StreamUsageError`."""
        if not self._finalizer.alive:
            return
        try:
            for stream in list(self._loop._open):
                stream._abandon()
            self._loop.call(self._client.aclose)
        finally:
            self._finalizer()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


V = TypeVar("V")


class _FromStream(Generic[V]):
    """A member of :class:`SyncStream` that does not block: read from the async stream as it
    is (a property's value, a method bound to the async stream), one definition for each of
    them. ``read`` says which member (``lambda s: s.usage``); its type is the member's, checked
    by the type checker against :class:`~sdk.Stream`. Read-only, as a property is; on the class
    it is itself, documented as the async stream's member of its name."""

    def __init__(self, read: Callable[[Stream[Any]], V]) -> None:
        self._read = read

    def __set_name__(self, owner: type, name: str) -> None:
        self.__doc__ = inspect.getdoc(getattr(Stream, name))

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _FromStream[V]: ...
    @overload
    def __get__(self, obj: SyncStream[Any], owner: type | None = None) -> V: ...
    def __get__(self, obj: SyncStream[Any] | None, owner: type | None = None) -> V | _FromStream[V]:
        if obj is None:
            return self
        return self._read(obj._stream)

    def __set__(self, obj: SyncStream[Any], value: object) -> None:
        raise AttributeError("a SyncStream's members are read from its stream: read-only")


class SyncStream(Generic[T]):
    """A blocking :class:`~sdk.Stream`: a context manager and a one-shot iterator of events.

    Its properties (``snapshot``, ``usage``, ``attempts``, ``attempt``, ``error``) read the
    async stream's; :meth:`result` and :meth:`results` block until the stream ends.
    """

    def __init__(self, stream: Stream[T], loop: _Loop) -> None:
        self._stream = stream
        self._loop = loop
        self._context: _Context[Stream[T]] | None = None
        self._left = False

    # What does not block is the async stream's own, read through (see _FromStream).
    snapshot = _FromStream(lambda s: s.snapshot)
    """The partial value so far (see :attr:`sdk.Stream.snapshot`)."""
    json_schema = _FromStream(lambda s: s.json_schema)
    """The resolved JSON Schema sent (see :attr:`sdk.Stream.json_schema`)."""
    schema_name = _FromStream(lambda s: s.schema_name)
    """A name for the schema (see :attr:`sdk.Stream.schema_name`)."""
    usage = _FromStream(lambda s: s.usage)
    """Token usage over every attempt so far."""
    attempts = _FromStream(lambda s: s.attempts)
    """The attempts that ended."""
    attempt = _FromStream(lambda s: s.attempt)
    """The number of the attempt in progress (or the last one)."""
    called_tools = _FromStream(lambda s: s.called_tools)
    """Whether the reply called tools (see :attr:`sdk.Stream.called_tools`)."""
    error = _FromStream(lambda s: s.error)
    """The error the stream failed with, if it did."""
    assistant_message = _FromStream(lambda s: s.assistant_message)
    """The reply as the next Chat Completions turn's assistant message (see
    :meth:`sdk.Stream.assistant_message`)."""
    output_items = _FromStream(lambda s: s.output_items)
    """The reply as Responses API input items (see :meth:`sdk.Stream.output_items`)."""

    @property
    def partial(self) -> Partial[T]:
        """The value so far, read with typed selectors (see :attr:`sdk.Stream.partial`)."""
        # Written out: its type depends on T, which a descriptor on the class cannot see.
        return self._stream.partial

    def result(self) -> T:
        """The validated value (see :meth:`sdk.Stream.result`)."""
        return self._loop.call(self._stream.result)

    def results(self) -> list[T]:
        """The validated values, one per tool call (see :meth:`sdk.Stream.results`)."""
        return self._loop.call(self._stream.results)

    def fields(self) -> Iterator[FieldEvent]:
        """The stream's :class:`~sdk.FieldEvent` values only (see :meth:`sdk.Stream.fields`)."""
        for event in self:
            if isinstance(event, FieldEvent):
                yield event

    def __iter__(self) -> Iterator[Event]:
        aiterator = self._stream.__aiter__()
        while True:
            try:
                yield self._loop.call(aiterator.__anext__)
            except StopAsyncIteration:
                return

    def __enter__(self) -> SyncStream[T]:
        if self._context is not None:
            raise StreamUsageError("a stream can be entered once")
        self._context = _Context(self._stream, self._loop)
        self._context.__enter__()
        self._loop._open.add(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._context is not None
        self._loop._open.discard(self)
        if self._left:
            return None
        self._left = True
        return self._context.__exit__(exc_type, exc, tb)

    def _abandon(self) -> None:
        """Leave a stream entered and never left (its client is closing, or collected): its
        generation stops, and the loop thread is not kept waiting for the block's end."""
        self._loop._open.discard(self)
        if self._context is not None and not self._left:
            self._left = True
            try:
                self._context.__exit__(None, None, None)
            except Exception:  # the stream's own failure: nobody is left to raise it to
                logger.debug("a stream left at close failed", exc_info=True)
