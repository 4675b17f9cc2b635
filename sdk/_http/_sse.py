"""The HTTP side of a streamed completion: status errors, ``Retry-After``, the body's pieces, and
how a streamed response is ended.

The body is read as it arrives (:func:`body_pieces`: ``aiter_raw``, or ``aiter_bytes`` when the
server compressed it) by :func:`~sdk._http._deltas.stream_deltas`, which parses it with
:class:`~sdk._http._eventstream.EventStreamParser` and ends it with :func:`finish_response`.
This module maps what can go wrong on the wire to :class:`~sdk.TransportError`.
"""

from __future__ import annotations

import datetime
import email.utils
import time
from collections.abc import AsyncGenerator, Mapping
from typing import cast

import anyio
import httpx

from sdk._errors import TransportError, retryable_status

__all__ = [
    "body_pieces",
    "error_for_status",
    "finish_response",
    "parse_retry_after",
    "retry_after_from",
    "transport_error",
]

_BODY_LIMIT = 64 * 1024  # bytes of an error body worth keeping
_DRAIN_SECONDS = 1.0  # how long the end of a body may take to arrive after [DONE]

ErrorTypes = tuple[type[Exception], ...]


def retry_after_from(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from a response's headers: ``retry-after-ms`` (what OpenAI sends, in
    milliseconds) when present and readable, else ``Retry-After``."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            seconds = float(millis) / 1000
        except ValueError:
            seconds = float("nan")
        if 0 <= seconds < float("inf"):
            return seconds
    return parse_retry_after(headers.get("retry-after"))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait, from a ``Retry-After`` header: delta-seconds or an HTTP date.

    ``None`` when absent or unreadable; never negative (a date in the past gives ``0.0``).
    ``now`` (a Unix time) is for tests.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT; a date without a zone is read so too
            when = when.replace(tzinfo=datetime.UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN, inf
        return None
    return max(0.0, seconds)


async def error_for_status(response: httpx.Response) -> TransportError:
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
    body = b"".join(chunks)[:_BODY_LIMIT].decode("utf-8", "replace")
    status = response.status_code
    detail = body.strip().replace("\n", " ")[:300]
    return TransportError(
        f"HTTP {status} from {response.request.url}" + (f": {detail}" if detail else ""),
        status=status,
        retryable=retryable_status(status),
        retry_after=retry_after_from(response.headers),
        body=body,
    )


def transport_error(exc: BaseException, *, during: str) -> TransportError:
    """A :class:`~sdk.TransportError` for a failed connection (always retryable, no status)."""
    kind = "timed out" if "Timeout" in type(exc).__name__ else "failed"
    return TransportError(
        f"the connection {kind} {during}: {type(exc).__name__}: {exc}",
        status=None,
        retryable=True,
    )


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
