"""Batch jobs: many structured streams through one client, a bounded number at a time.

:meth:`sdk.Client.batch` takes requests (an iterable or async iterable of
:class:`BatchRequest`, or mappings ``{"id": ..., "prompt": ...}`` / ``{"id": ...,
"messages": [...]}``), runs at most ``concurrency`` of them at once, and hands back a
:class:`BatchResult` for each as it completes (not in input order). A request that fails — bad
input, a schema violation after every retry, a server error — is a result with its ``error``,
never an exception that ends the batch. Requests are read lazily, as room frees up, so a file of
a hundred thousand lines is never held in memory.

Use it as an async context manager; leaving the block cancels what is still running (the
generations stop) and reads no further requests::

    async with client.batch(requests, schema=Person, concurrency=16) as results:
        async for done in results:
            print(done.id, done.value if done.error is None else done.error)
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from sdk._backend import Message, Usage
from sdk._constants import DEFAULT_BATCH_CONCURRENCY
from sdk._options import split_options

if TYPE_CHECKING:
    from sdk._options import RequestOptions
    from sdk._stream._stream import Stream

__all__ = ["BatchInputError", "BatchRequest", "BatchResult", "run_batch"]

T = TypeVar("T")


class BatchInputError(ValueError):
    """A batch request that cannot be run as given (no id, no prompt or messages, a duplicate
    id): reported as that request's result, never raised out of the batch."""


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One request of a batch."""

    id: str | int
    """The caller's identifier (a string or an integer), echoed as it came in its result."""
    messages: Sequence[Message]
    """The conversation for this request."""


@dataclass(frozen=True, slots=True)
class BatchResult(Generic[T]):
    """The outcome of one request: ``value`` or ``error``."""

    id: str | int | None
    """The request's id, as it came (``None`` only for input that had no usable one)."""
    value: T | None = None
    """The validated result (when ``error`` is ``None``)."""
    error: BaseException | None = None
    """Why it failed: a :class:`~sdk.StreamError`, or :class:`BatchInputError`."""
    attempts: int = 0
    """Attempts made (0 when the request was never sent)."""
    usage: Usage = field(default_factory=Usage)
    """Token usage over its attempts."""
    seconds: float = 0.0
    """Wall-clock seconds from its start to its end."""

    @property
    def ok(self) -> bool:
        """Whether it succeeded."""
        return self.error is None


def as_request(item: Any, *, system: str | None = None) -> BatchRequest:
    """``item`` as a :class:`BatchRequest`: one already, or a mapping with ``id`` and either
    ``prompt`` (a user message, after ``system`` when given) or ``messages``. Raises
    :class:`BatchInputError` saying what is missing. The id is kept as it came (``7`` stays an
    integer, ``"7"`` a string: two different ids)."""
    if isinstance(item, BatchRequest):
        return item
    if not isinstance(item, Mapping):
        raise BatchInputError(f"a request must be an object with an id, not {item!r}")
    raw_id = item.get("id")
    if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or raw_id == "":
        raise BatchInputError('a request needs an "id" (a string or an integer)')
    rid: str | int = raw_id
    messages = item.get("messages")
    prompt = item.get("prompt")
    if (messages is None) == (prompt is None):
        raise BatchInputError(f'request {rid!r} needs "prompt" or "messages" (one of them)')
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise BatchInputError(f'request {rid!r}: "prompt" must be a non-empty string')
        messages = [{"role": "user", "content": prompt}]
        if system:
            messages.insert(0, {"role": "system", "content": system})
    if not isinstance(messages, list) or not all(
        isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in messages
    ):
        raise BatchInputError(
            f'request {rid!r}: "messages" must be a list of chat messages with a "role"'
        )
    return BatchRequest(rid, messages)


@asynccontextmanager
async def run_batch(
    open_stream: Callable[..., Stream[Any]],
    requests: Iterable[Any] | AsyncIterable[Any],
    *,
    schema: Any,
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    system: str | None = None,
    options: RequestOptions,
) -> AsyncIterator[AsyncIterator[BatchResult[Any]]]:
    """What :meth:`sdk.Client.batch` returns (see the module docstring). ``open_stream`` is
    the client's ``stream`` method (passed, not the client, so that this module does not
    import the one that imports it)."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, not {concurrency!r}")
    if not isinstance(requests, (Iterable, AsyncIterable)) or isinstance(requests, (str, bytes)):
        raise TypeError("requests must be an iterable (or async iterable) of requests")
    # Checked now, once, as every request will be (the schema or constraint, the options,
    # what the backend can send): a mistake there is the caller's, not every request's. A
    # stream sends nothing until it is entered.
    split_options(options, where="Client.batch", request=True)
    open_stream(messages=[{"role": "user", "content": ""}], schema=schema, **options)
    send, receive = anyio.create_memory_object_stream[BatchResult[Any]](math.inf)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed, open_stream, requests, schema, concurrency, system, options, send)
        try:
            async with receive:
                yield receive
        finally:
            tg.cancel_scope.cancel()


async def _feed(
    open_stream: Callable[..., Stream[Any]],
    requests: Iterable[Any] | AsyncIterable[Any],
    schema: Any,
    concurrency: int,
    system: str | None,
    options: RequestOptions,
    send: MemoryObjectSendStream[BatchResult[Any]],
) -> None:
    """Start one task per request, at most ``concurrency`` at a time; close ``send`` when the
    last has reported."""
    limiter = anyio.Semaphore(concurrency)
    seen: set[str | int] = set()
    async with send, anyio.create_task_group() as tg:
        async for item in _aiter(requests):
            request: BatchRequest | None = None
            try:
                request = as_request(item, system=system)
                if request.id in seen:
                    raise BatchInputError(f"request id {request.id!r} is repeated")
            except BatchInputError as exc:
                await send.send(BatchResult(_id_of(item, request), error=exc))
                continue
            seen.add(request.id)
            await limiter.acquire()  # read the next request only when there is room
            tg.start_soon(_one, open_stream, request, schema, options, limiter, send.clone())


async def _one(
    open_stream: Callable[..., Stream[Any]],
    request: BatchRequest,
    schema: Any,
    options: RequestOptions,
    limiter: anyio.Semaphore,
    send: MemoryObjectSendStream[BatchResult[Any]],
) -> None:
    started = time.monotonic()
    async with send:
        try:
            stream = open_stream(messages=request.messages, schema=schema, **options)
        except Exception as exc:  # this request's messages, say: its result, not the batch's
            try:
                await send.send(BatchResult(request.id, error=exc))
            finally:
                limiter.release()
            return
        value: Any = None
        error: BaseException | None = None
        try:
            async with stream:
                try:
                    value = await stream.result()
                except Exception as exc:  # the request's failure, not the batch's
                    error = exc
            # Handed over before the next request may start (an interruption there must not
            # overtake a result already made).
            await send.send(
                BatchResult(
                    request.id,
                    value=value,
                    error=error,
                    attempts=len(stream.attempts),
                    usage=stream.usage,
                    seconds=time.monotonic() - started,
                )
            )
        finally:
            limiter.release()


def _id_of(item: Any, request: BatchRequest | None) -> str | int | None:
    """The id to report a bad request under: its own, when it has a usable one."""
    if request is not None:
        return request.id
    rid = item.get("id") if isinstance(item, Mapping) else None
    if isinstance(rid, (str, int)) and not isinstance(rid, bool) and rid != "":
        return rid
    return None


async def _aiter(items: Iterable[Any] | AsyncIterable[Any]) -> AsyncIterator[Any]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
            await anyio.lowlevel.checkpoint()  # a long list must not starve the workers
