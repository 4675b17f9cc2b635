"""The read loop both HTTP backends share: an opened event-stream response in, deltas out.

A backend says how to open its response (httpx, or the ``openai`` SDK's raw response) and how
to release it; :func:`stream_deltas` reads the body, parses its events
(:class:`~sdk._http._eventstream.EventStreamParser`), decodes them with an
:class:`EventDecoder` (Chat Completions chunks or Responses API events), and always ends the
response the same way (:func:`~sdk._http._sse.finish_response`), however the consumer leaves:
at ``[DONE]`` or a terminal event, on an error, or by closing the iterator (the abort, which
drops the connection).

One async generator goes from the body's pieces to deltas, and the text of a text-only delta
stays a ``str`` (:class:`~sdk._source.TextChunks`): a token costs one generator step between
the HTTP library and the stream, and no object of its own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Protocol

import anyio
import httpx

from sdk._backend import Delta
from sdk._errors import TransportError
from sdk._http._eventstream import DEFAULT_MAX_SIZE, EventStreamError, EventStreamParser
from sdk._http._sse import ErrorTypes, body_pieces, finish_response, transport_error
from sdk._http._unwrap import DeltaUnwrapper
from sdk._source import Chunk, TextChunks

__all__ = ["EventDecoder", "Opened", "stream_deltas"]


class EventDecoder(Protocol):
    """Events in, deltas out: Chat Completions chunks
    (:class:`~sdk._http._chunks.ChunkDecoder`) or Responses API events
    (:class:`~sdk._http._responses_events.ResponsesDecoder`)."""

    @property
    def done(self) -> bool:
        """True once the stream said it is over (``[DONE]``, a terminal event)."""
        ...

    def decode(self, event: str, data: str) -> str | list[Delta]:
        """The deltas of one event (``event`` is ``""`` when absent); a text-only delta may
        be given as its text."""
        ...

    def end(self) -> list[Delta]: ...


Opened = tuple[httpx.Response, Callable[[], Awaitable[None]]]
"""An open response (headers read, status 2xx) and the coroutine function that releases it."""


def stream_deltas(
    open_response: Callable[[], Awaitable[Opened]],
    decoder: EventDecoder,
    *,
    errors: ErrorTypes = (httpx.HTTPError,),
    unwrap: bool = False,
    max_size: int = DEFAULT_MAX_SIZE,
) -> TextChunks:
    """Open the response, then give the deltas of its events until ``[DONE]`` or its end.

    ``errors`` are the exception types of the HTTP library that read the body (httpx's, or
    httpx2's for the openai SDK 3); they become :class:`~sdk.TransportError`, as do a body
    that is not an event stream and a line or an event's data over ``max_size`` bytes (16 MiB
    by default). ``unwrap``: the schema's root was sent wrapped (:mod:`sdk._http._strict`); the
    documents are unwrapped (:mod:`sdk._http._unwrap`) before they are given.
    """
    unwrapper = DeltaUnwrapper() if unwrap else None
    return TextChunks(_chunks(open_response, decoder, errors, unwrapper, max_size))


async def _chunks(
    open_response: Callable[[], Awaitable[Opened]],
    decoder: EventDecoder,
    errors: ErrorTypes,
    unwrapper: DeltaUnwrapper | None,
    max_size: int,
) -> AsyncGenerator[Chunk, None]:
    response, release = await open_response()
    # The request (its body, the strict schema in it) was sent: nothing here keeps it alive.
    del open_response
    pieces: AsyncGenerator[bytes, None] | None = None
    try:
        pieces = body_pieces(response)
        parser = EventStreamParser(max_size=max_size)
        decode = decoder.decode
        while not decoder.done:
            try:
                piece = await pieces.__anext__()
            except StopAsyncIteration:
                for delta in _unwrapped(unwrapper, decoder.end()):  # ended without [DONE]
                    yield delta
                break
            except errors as exc:
                raise transport_error(exc, during="mid-stream") from exc
            try:
                events = parser.feed_data(piece)
            except EventStreamError as exc:  # over the limit: stop reading at once
                raise TransportError(f"malformed event stream: {exc}", retryable=False) from exc
            for event in events:
                if isinstance(event, str):
                    out = decode("", event)
                else:
                    out = decode(event.event, event.data)
                if isinstance(out, str) and unwrapper is None:
                    yield out
                else:
                    for delta in _unwrapped(unwrapper, out):
                        yield delta
                if decoder.done:
                    break  # events after [DONE] are not read
        if unwrapper is not None:
            for delta in unwrapper.end():  # a document's tail not yet flushed
                yield delta
    finally:
        try:
            if pieces is not None:
                await finish_response(response, pieces, drain=decoder.done, errors=errors)
        finally:
            with anyio.CancelScope(shield=True):
                await release()


def _unwrapped(unwrapper: DeltaUnwrapper | None, out: str | list[Delta]) -> list[Delta]:
    if isinstance(out, str):
        out = [Delta(text=out)]
    return out if unwrapper is None else [d for delta in out for d in unwrapper.feed(delta)]
