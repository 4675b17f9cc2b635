"""``SyncClient``: the :class:`~sdk.Client` for code without an event loop.

Scripts, notebooks and WSGI apps call it like any blocking library; underneath, one
implementation: the async :class:`~sdk.Client`, run on an event loop in a thread of its own
(anyio's blocking portal), started on first use and stopped by :meth:`SyncClient.close`.

Every call waits for its result; a call interrupted while it waits (Ctrl-C, a signal) cancels
what it was waiting for in the loop before it raises, so nothing keeps running behind the
caller's back. Leaving a ``with client.stream(...)`` block closes the generation whatever
happened inside it (a ``break``, an exception, an interrupt). ``on_field`` callbacks run in the
loop's thread, as they do in the async client.
"""

from __future__ import annotations

import concurrent.futures
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

from anyio.from_thread import BlockingPortal, start_blocking_portal
from pydantic import TypeAdapter
from typing_extensions import Unpack

from sdk._backend import Backend, Message, Usage
from sdk._client import Client
from sdk._constraints import StructuralTag, TextConstraint, Tool
from sdk._errors import StreamUsageError
from sdk._events import StreamEvent
from sdk._http._flavours import Api, Server
from sdk._http._openai import ServerOptions
from sdk._options import RequestOptions
from sdk._retry import AttemptInfo
from sdk._segments import TaggedText
from sdk._stream import Stream

__all__ = ["SyncClient", "SyncStream"]

T = TypeVar("T")
R = TypeVar("R")

_CANCEL_WAIT = 10.0  # seconds an interrupted call waits for its task to end in the loop


class _Loop:
    """The event loop thread of one client, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._manager: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None

    def portal(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                manager = start_blocking_portal(name="fieldstream")
                self._portal = manager.__enter__()
                self._manager = manager
            return self._portal

    def call(self, func: Callable[[], Awaitable[R]]) -> R:
        """Run ``func()`` in the loop and wait for it; an interrupted wait cancels it."""
        future = self.portal().start_task_soon(func)
        try:
            return future.result()
        except BaseException:
            if not future.done():  # the wait was interrupted, not the task: cancel the task
                future.cancel()
                concurrent.futures.wait([future], timeout=_CANCEL_WAIT)
            raise

    def stop(self) -> None:
        with self._lock:
            manager, self._manager, self._portal = self._manager, None, None
        if manager is not None:
            manager.__exit__(None, None, None)


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
        max_retries: int = 2,
        api: Api = "chat",
        **options: Unpack[ServerOptions],
    ) -> None:
        self._attach(Client(base_url, api_key, model, max_retries=max_retries, api=api, **options))

    def _attach(self, client: Client) -> None:
        self._client = client
        self._loop = _Loop()
        # A client never closed still stops its loop thread when collected or at exit.
        self._finalizer = weakref.finalize(self, self._loop.stop)

    @classmethod
    def _wrap(cls, client: Client) -> SyncClient:
        sync = cls.__new__(cls)
        sync._attach(client)
        return sync

    @classmethod
    def from_backend(cls, backend: Backend, *, max_retries: int = 2) -> SyncClient:
        """As :meth:`sdk.Client.from_backend`."""
        return cls._wrap(Client.from_backend(backend, max_retries=max_retries))

    @classmethod
    def from_openai(
        cls,
        client: Any,
        *,
        model: str,
        strict: bool = True,
        max_retries: int = 0,
        api: Api = "chat",
        server: Server | None = None,
    ) -> SyncClient:
        """As :meth:`sdk.Client.from_openai`; ``client`` is an ``openai.AsyncOpenAI`` (it runs
        in this client's loop thread)."""
        return cls._wrap(
            Client.from_openai(
                client, model=model, strict=strict, max_retries=max_retries, api=api, server=server
            )
        )

    @classmethod
    def local(cls, model: str | None = None, device: str | None = None, **opts: Any) -> SyncClient:
        """As :meth:`sdk.Client.local`: the local engine."""
        return cls._wrap(Client.local(model=model, device=device, **opts))

    @property
    def backend(self) -> Backend:
        """The backend requests go to."""
        return self._client.backend

    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: TextConstraint,
        **options: Unpack[RequestOptions],
    ) -> SyncStream[str]: ...
    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: StructuralTag,
        **options: Unpack[RequestOptions],
    ) -> SyncStream[TaggedText]: ...
    @overload
    def stream(
        self, *, messages: Sequence[Message], schema: type[T], **options: Unpack[RequestOptions]
    ) -> SyncStream[T]: ...
    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: TypeAdapter[T],
        **options: Unpack[RequestOptions],
    ) -> SyncStream[T]: ...
    @overload
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: Any = None,
        tools: Sequence[Tool] | Mapping[str, Any] | None = None,
        **options: Unpack[RequestOptions],
    ) -> SyncStream[Any]: ...
    def stream(
        self,
        *,
        messages: Sequence[Message],
        schema: Any = None,
        tools: Sequence[Tool] | Mapping[str, Any] | None = None,
        **options: Unpack[RequestOptions],
    ) -> SyncStream[Any]:
        """As :meth:`sdk.Client.stream` (the arguments are checked at once, here)."""
        stream: Stream[Any] = self._client.stream(
            messages=messages, schema=schema, tools=tools, **options
        )
        return SyncStream(stream, self._loop)

    def close(self) -> None:
        """Release the backend, then stop the loop thread."""
        try:
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


class SyncStream(Generic[T]):
    """A blocking :class:`~sdk.Stream`: a context manager and a one-shot iterator of events.

    Its properties (``snapshot``, ``usage``, ``attempts``, ``attempt``, ``error``) read the
    async stream's; :meth:`result` and :meth:`results` block until the stream ends.
    """

    def __init__(self, stream: Stream[T], loop: _Loop) -> None:
        self._stream = stream
        self._loop = loop
        self._context: AbstractContextManager[Stream[T]] | None = None

    @property
    def snapshot(self) -> Any:
        """The partial value so far (see :attr:`sdk.Stream.snapshot`)."""
        return self._stream.snapshot

    @property
    def usage(self) -> Usage:
        """Token usage over every attempt so far."""
        return self._stream.usage

    @property
    def attempts(self) -> list[AttemptInfo]:
        """The attempts that ended."""
        return self._stream.attempts

    @property
    def attempt(self) -> int:
        """The number of the attempt in progress (or the last one)."""
        return self._stream.attempt

    @property
    def called_tools(self) -> bool:
        """Whether the reply called tools (see :attr:`sdk.Stream.called_tools`)."""
        return self._stream.called_tools

    @property
    def error(self) -> BaseException | None:
        """The error the stream failed with, if it did."""
        return self._stream.error

    def result(self) -> T:
        """The validated value (see :meth:`sdk.Stream.result`)."""
        return self._loop.call(self._stream.result)

    def results(self) -> list[T]:
        """The validated values, one per tool call (see :meth:`sdk.Stream.results`)."""
        return self._loop.call(self._stream.results)

    def __iter__(self) -> Iterator[StreamEvent]:
        aiterator = self._stream.__aiter__()
        while True:
            try:
                yield self._loop.call(aiterator.__anext__)
            except StopAsyncIteration:
                return

    def __enter__(self) -> SyncStream[T]:
        if self._context is not None:
            raise StreamUsageError("a stream can be entered once")
        self._context = self._loop.portal().wrap_async_context_manager(self._stream)
        self._context.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._context is not None
        return self._context.__exit__(exc_type, exc, tb)
