"""The read loop both HTTP backends share: an opened event-stream response in, deltas out.

A backend says how to open its response (httpx, or the ``openai`` SDK's raw response) and how
to release it; :func:`stream_deltas` reads the events, decodes them with an
:class:`EventDecoder` (Chat Completions chunks or Responses API events), and always ends the
response the same way (:func:`~sdk._http._sse.finish_response`), however the consumer leaves:
at ``[DONE]`` or a terminal event, on an error, or by closing the generator (the abort, which
drops the connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

import anyio
import httpx

from sdk._backend import Delta
from sdk._http._sse import ErrorTypes, aiter_events, finish_response
from sdk._http._unwrap import DeltaUnwrapper

__all__ = ["EventDecoder", "Opened", "stream_deltas"]


class EventDecoder(Protocol):
    """Events in, deltas out: Chat Completions chunks
    (:class:`~sdk._http._chunks.ChunkDecoder`) or Responses API events
    (:class:`~sdk._http._responses_events.ResponsesDecoder`)."""

    @property
    def done(self) -> bool:
        """True once the stream said it is over (``[DONE]``, a terminal event)."""
        ...

    def feed_event(self, event: str, data: str) -> list[Delta]: ...

    def end(self) -> list[Delta]: ...


Opened = tuple[httpx.Response, Callable[[], Awaitable[None]]]
"""An open response (headers read, status 2xx) and the coroutine function that releases it."""


async def stream_deltas(
    open_response: Callable[[], Awaitable[Opened]],
    decoder: EventDecoder,
    *,
    errors: ErrorTypes = (httpx.HTTPError,),
    unwrap: bool = False,
) -> AsyncIterator[Delta]:
    """Open the response, then yield the deltas of its events until ``[DONE]`` or its end.

    ``errors`` are the exception types of the HTTP library that read the body (httpx's, or
    httpx2's for the openai SDK 3); they become :class:`~sdk.TransportError`. ``unwrap``: the
    schema's root was sent wrapped (:mod:`sdk._http._strict`); the documents are unwrapped
    (:mod:`sdk._http._unwrap`) before they are yielded.
    """
    unwrapper = DeltaUnwrapper() if unwrap else None
    response, release = await open_response()
    try:
        events = aiter_events(response, errors=errors)
        try:
            async for event in events:
                deltas = decoder.feed_event(event.event, event.data)
                if unwrapper is not None:
                    deltas = [d for delta in deltas for d in unwrapper.feed(delta)]
                for delta in deltas:
                    yield delta
                if decoder.done:
                    break
            else:
                deltas = decoder.end()  # the body ended without [DONE]
                if unwrapper is not None:
                    deltas = [d for delta in deltas for d in unwrapper.feed(delta)]
                for delta in deltas:
                    yield delta
            if unwrapper is not None:
                for delta in unwrapper.end():  # a document's tail not yet flushed
                    yield delta
        finally:
            await finish_response(response, events, drain=decoder.done)
    finally:
        with anyio.CancelScope(shield=True):
            await release()
