"""The HTTP side of a streamed completion: status errors, ``Retry-After``, the body's pieces, and
how a streamed response is ended.

The body is read as it arrives (:func:`body_pieces`: ``aiter_raw``, or ``aiter_bytes`` when the
server compressed it) by :func:`~sdk._http._deltas.stream_deltas`, which parses it with
:class:`~sdk._http._eventstream.EventStreamParser` and ends it with :func:`finish_response`.
This module maps what can go wrong on the wire to :class:`~sdk.TransportError`: a status to
its :class:`~sdk.APIStatusError` class (:func:`status_error`), a failed connection to
:class:`~sdk.APIConnectionError` (:func:`transport_error`). Whether and when they are retried
is :mod:`sdk._retry`'s to say.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any, cast

import anyio
import httpx

from sdk._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    TransportError,
    status_error_class,
)
from sdk._retry import retry_after_from, retryable_response

__all__ = [
    "body_pieces",
    "error_for_status",
    "finish_response",
    "status_error",
    "transport_error",
]

_BODY_LIMIT = 64 * 1024  # bytes of an error body worth keeping
_DRAIN_SECONDS = 1.0  # how long the end of a body may take to arrive after [DONE]

ErrorTypes = tuple[type[Exception], ...]


async def error_for_status(response: httpx.Response) -> APIStatusError:
    """The error for a response whose status is not 2xx (its body is read; 64 KiB are kept)."""
    chunks: list[bytes] = []
    size = 0
    try:
        # Read to the end (error bodies are small) rather than stop early: an iterator left
        # suspended inside httpx would be finalized by the garbage collector.
        async for chunk in response.aiter_bytes():
            if size < _BODY_LIMIT:
                chunks.append(chunk)
                size += len(chunk)
    except httpx.HTTPError:
        pass  # the status is what matters; a body cut short is still worth showing
    text = b"".join(chunks)[:_BODY_LIMIT].decode("utf-8", "replace")
    detail = text.strip().replace("\n", " ")[:300]
    status = response.status_code
    return status_error(
        f"HTTP {status} from {response.request.url}" + (f": {detail}" if detail else ""),
        status=status,
        headers=response.headers,
        body=parse_body(text),
        response=response,
    )


def parse_body(text: str) -> Any:
    """An error body as openai-python gives it: the JSON value when it is JSON (its ``error``
    object when it has one), else the text (``None`` when empty)."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value.get("error", value) if isinstance(value, Mapping) else value


def status_error(
    message: str,
    *,
    status: int,
    headers: Mapping[str, str],
    body: Any,
    response: Any,
) -> APIStatusError:
    """The :class:`~sdk.APIStatusError` of ``status``'s family (:func:`sdk._errors.
    status_error_class`), with the response's ``Retry-After``, ``x-request-id`` and whether
    it is worth retrying (:func:`sdk._retry.retryable_response`)."""
    cls = status_error_class(status)
    return cls(
        message,
        status=status,
        retryable=retryable_response(status, headers),
        retry_after=retry_after_from(headers),
        body=body,
        response=response,
        request_id=headers.get("x-request-id"),
    )


def transport_error(exc: BaseException, *, during: str) -> APIConnectionError:
    """An :class:`~sdk.APIConnectionError` for a failed connection (an
    :class:`~sdk.APITimeoutError` when it timed out): always retryable, no status."""
    timed_out = "Timeout" in type(exc).__name__
    cls = APITimeoutError if timed_out else APIConnectionError
    kind = "timed out" if timed_out else "failed"
    return cls(f"the connection {kind} {during}: {type(exc).__name__}: {exc}", retryable=True)


def body_pieces(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """The body of a ``text/event-stream`` response as it arrives, in pieces.

    ``response`` is an ``httpx.Response`` (or an ``httpx2.Response``). Raises
    :class:`~sdk.TransportError` when the response is not an event stream (a server that
    ignored ``stream: true``, a proxy's error page). The pieces are the undecoded bytes
    (``aiter_raw``) unless the body is compressed (then httpx's decoders are needed) or was read
    already (a response built from bytes, as a mock transport makes: only ``aiter_bytes`` serves
    it).
    """
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type.lower():
        raise TransportError(
            f"expected an event stream, got {response.headers.get('content-type')!r}",
            status=response.status_code,
            retryable=False,
        )
    coding = response.headers.get("content-encoding", "").strip().lower()
    raw = coding in ("", "identity") and not response.is_stream_consumed
    # httpx's iterators are async generators, typed as iterators.
    return cast(
        AsyncGenerator[bytes, None], response.aiter_raw() if raw else response.aiter_bytes()
    )


async def finish_response(
    response: httpx.Response,
    pieces: AsyncGenerator[bytes, None],
    *,
    drain: bool,
    errors: ErrorTypes = (httpx.HTTPError,),
) -> None:
    """End a streamed response whatever happened: normally, on an error, or when the consumer
    closed the generator early (the abort); ``pieces`` is its :func:`body_pieces`.

    After ``[DONE]`` (``drain``) the rest of the body (normally nothing but its end) is read,
    for at most a second, so the connection can go back to the pool. Then the response is
    closed: on an abort this drops the connection, which is how the server learns to stop
    decoding. Last, ``pieces`` is run to its end and closed: once the response is closed its
    reads end at once without touching the network, and every async generator inside httpx
    finishes now instead of being left to the garbage collector (which trio reports with a
    ``ResourceWarning`` for each; httpx's iterators do not close their inner ones). Shielded:
    the connection must be closed even in a cancelled task. ``errors`` (the HTTP library's
    exception types) are expected here and not raised.
    """
    with anyio.CancelScope(shield=True):
        if drain:
            with anyio.move_on_after(_DRAIN_SECONDS):
                await _exhaust(pieces, errors)
        await response.aclose()
        await _exhaust(pieces, errors)
        await pieces.aclose()


async def _exhaust(pieces: AsyncGenerator[bytes, None], errors: ErrorTypes) -> None:
    try:
        async for _ in pieces:
            pass
    except errors:
        pass  # a read on a closed response, or the connection's end: expected here
