"""The read loop every HTTP backend shares: an opened streamed response in, deltas out.

A backend says how to open its response (httpx, or a vendor SDK's raw response) and how
to release it; :func:`stream_deltas` reads the body, cuts it into messages with its framing
(:mod:`sdk._http._framing`: server-sent events by default, or JSON lines), decodes them with the
provider's :class:`EventDecoder` (for OpenAI: Chat Completions chunks or Responses API events),
and always ends the response the same way (:func:`~sdk._http._transport.finish_response`),
however the consumer leaves:
at ``[DONE]`` or a terminal event, on an error, or by closing the iterator (the abort, which
drops the connection).

One async generator goes from the body's pieces to deltas, and the text of a text-only delta
stays a ``str`` (:class:`~sdk._backend.TextChunks`): a token costs one generator step between
the HTTP library and the stream, and no object of its own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Protocol

import anyio
import httpx

from sdk._backend import Chunk, Delta, TextChunks
from sdk._constants import DEFAULT_MAX_EVENT_SIZE
from sdk._errors import TransportError
from sdk._http._errors import transport_error
from sdk._http._framing import EventStreamError, EventStreamParser, Framing
from sdk._http._transport import ErrorTypes, Opened, body_pieces, finish_response
from sdk._http._unwrap import DeltaUnwrapper

__all__ = ["EventDecoder", "Opened", "stream_deltas"]


class EventDecoder(Protocol):
    """A provider's messages in, deltas out (for OpenAI: Chat Completions chunks,
    :class:`~sdk._http.openai._chat_decoder.ChunkDecoder`, or Responses API events,
    :class:`~sdk._http.openai._responses_decoder.ResponsesDecoder`)."""

    @property
    def done(self) -> bool:
        """True once the stream said it is over (``[DONE]``, a terminal event)."""
        ...

    def decode(self, event: str, data: str) -> str | list[Delta]:
        """The deltas of one event (``event`` is ``""`` when absent); a text-only delta may
        be given as its text."""
        ...

    def end(self) -> list[Delta]: ...


def stream_deltas(
    open_response: Callable[[], Awaitable[Opened]],
    decoder: EventDecoder,
    *,
    errors: ErrorTypes = (httpx.HTTPError,),
    unwrap: bool = False,
    max_size: int = DEFAULT_MAX_EVENT_SIZE,
    framing: Callable[..., Framing] = EventStreamParser,
    prompt_estimate: int | None = None,
) -> TextChunks:
    """Open the response, then give the deltas of its events until ``[DONE]`` or its end.

    ``errors`` are the exception types of the HTTP library that read the body (httpx's, or
    httpx2's for the openai SDK 3); they become :class:`~sdk.TransportError`, as do a body
    that is not an event stream and a line or an event's data over ``max_size`` bytes (16 MiB
    by default). ``unwrap``: the schema's root was sent wrapped (for OpenAI,
    :mod:`sdk._http.openai._strict`); the documents are unwrapped (:mod:`sdk._http._unwrap`)
    before they are given. ``framing`` makes the body's framing, called with ``max_size=``
    (:class:`~sdk._http._framing.EventStreamParser` by default;
    :class:`~sdk._http._framing.JsonLinesReader` for JSON lines). ``prompt_estimate``: the
    request's prompt tokens as the backend estimates them
    (:func:`~sdk._http._transport.estimate_tokens`), for an attempt that ends unreported.
    """
    unwrapper = DeltaUnwrapper() if unwrap else None
    parser = framing(max_size=max_size)
    return TextChunks(
        _chunks(open_response, decoder, errors, unwrapper, parser),
        prompt_estimate=prompt_estimate,
    )


async def _chunks(
    open_response: Callable[[], Awaitable[Opened]],
    decoder: EventDecoder,
    errors: ErrorTypes,
    unwrapper: DeltaUnwrapper | None,
    parser: Framing,
) -> AsyncGenerator[Chunk, None]:
    response, release = await open_response()
    # The request (its body, the strict schema in it) was sent: nothing here keeps it alive.
    del open_response
    pieces: AsyncGenerator[bytes, None] | None = None
    try:
        pieces = body_pieces(response, parser.content_types)
        # Bound once: the loop below runs once per piece, and its inner loop once per event.
        decode = decoder.decode
        next_piece = pieces.__anext__
        feed = parser.feed_data
        plain = unwrapper is None
        while not decoder.done:
            try:
                piece = await next_piece()
            except StopAsyncIteration:
                for event in parser.end():  # a last line without its end (JSON lines)
                    data = event if isinstance(event, str) else event.data
                    kind = "" if isinstance(event, str) else event.event
                    for delta in _unwrapped(unwrapper, decode(kind, data)):
                        yield delta
                if decoder.done:
                    break
                for delta in _unwrapped(unwrapper, decoder.end()):  # ended without [DONE]
                    yield delta
                break
            except errors as exc:
                raise _of(transport_error(exc, during="mid-stream"), response) from exc
            try:
                events = feed(piece)
            except EventStreamError as exc:  # over the limit: stop reading at once
                raise TransportError(f"malformed event stream: {exc}", retryable=False) from exc
            for event in events:
                if isinstance(event, str):
                    out = decode("", event)
                else:
                    out = decode(event.event, event.data)
                if plain and isinstance(out, str):
                    yield out
                else:
                    for delta in _unwrapped(unwrapper, out):
                        yield delta
                if decoder.done:
                    break  # events after [DONE] are not read
        if unwrapper is not None:
            for delta in unwrapper.end():  # a document's tail not yet flushed
                yield delta
    except TransportError as exc:  # an error inside the stream: this response's
        raise _of(exc, response)  # noqa: B904 - the same error, completed
    finally:
        try:
            if pieces is not None:
                await finish_response(response, pieces, drain=decoder.done, errors=errors)
        finally:
            with anyio.CancelScope(shield=True):
                await release()


def _of(error: TransportError, response: httpx.Response) -> TransportError:
    """``error``, with the response's ``x-request-id`` and the response (and so its request)
    when it does not have them yet: a failure midway is the response's, as a status is."""
    if error.request_id is None:
        error.request_id = response.headers.get("x-request-id")
    if error.response is None:
        error.response = response
    return error


def _unwrapped(unwrapper: DeltaUnwrapper | None, out: str | list[Delta]) -> list[Delta]:
    if isinstance(out, str):
        out = [Delta(text=out)]
    return out if unwrapper is None else [d for delta in out for d in unwrapper.feed(delta)]
