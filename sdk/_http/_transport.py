"""Moving bytes, for every provider: sending a request over httpx, reading the body as it
arrives, and ending a streamed response.

:class:`HttpTransport` holds what a provider's httpx backend sends every request with (its URL,
headers, query, timeout, the httpx client) and opens one streamed response
(:meth:`HttpTransport.open`), mapping a non-2xx status and a failed connection to our errors
(:mod:`sdk._http._errors`). :func:`body_pieces` gives the body as it arrives (after checking its
content type: ``text/event-stream``, or NDJSON for a provider that streams lines), and
:func:`finish_response` ends it however the reader left. The read loop
(:mod:`sdk._http._read_loop`) drives both. Whether and when failures are retried is
:mod:`sdk._retry`'s to say: nothing here retries, except the one resend of a request a pooled
connection dropped before the server read it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import cast

import anyio
import httpx

from sdk import _constants as _defaults
from sdk._backend import GenerationRequest
from sdk._errors import TransportError
from sdk._http._errors import error_for_status, transport_error
from sdk._logs import log_request, log_response
from sdk._merge import merge_headers, merge_query
from sdk._version import user_agent

__all__ = [
    "DEFAULT_TIMEOUT",
    "EVENT_STREAM",
    "LIMITS",
    "ErrorTypes",
    "HttpTransport",
    "Opened",
    "body_pieces",
    "encode_body",
    "estimate_tokens",
    "finish_response",
]

DEFAULT_TIMEOUT = httpx.Timeout(
    _defaults.DEFAULT_TIMEOUT, connect=_defaults.DEFAULT_CONNECT_TIMEOUT
)
"""10 s to connect; 60 s for any one read (the gap between two chunks), write or pool wait
(the numbers live in :mod:`sdk._constants`)."""

LIMITS = httpx.Limits(
    max_connections=_defaults.DEFAULT_MAX_CONNECTIONS,
    max_keepalive_connections=_defaults.DEFAULT_MAX_KEEPALIVE_CONNECTIONS,
    keepalive_expiry=_defaults.DEFAULT_KEEPALIVE_EXPIRY,
)
"""The pool of a backend's own httpx client (why these numbers: :mod:`sdk._constants`)."""

_DRAIN_SECONDS = 1.0  # how long the end of a body may take to arrive after [DONE]

ErrorTypes = tuple[type[Exception], ...]

Opened = tuple[httpx.Response, Callable[[], Awaitable[None]]]
"""An open response (headers read, status 2xx) and the coroutine function that releases it."""

EVENT_STREAM = ("text/event-stream",)
"""The content type of a server-sent event stream."""
# What an error says was expected, by the framing's first content type.
_KIND = {"text/event-stream": "an event stream", "application/x-ndjson": "a stream of JSON lines"}


def encode_body(body: Mapping[str, object]) -> bytes:
    """A request body as it is sent: compact JSON in UTF-8, as httpx's ``json=`` writes it
    (``ValueError`` for NaN or an infinity, ``TypeError`` for a value JSON cannot hold). A
    stream keeps these bytes, not the body, until it ends (a stale connection is sent the
    request again): a few hundred bytes where the body's objects took kilobytes."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def estimate_tokens(payload: bytes) -> int:
    """About how many prompt tokens a request body of ``payload`` holds: a token is about four
    bytes of English text or JSON. Counted, marked estimated, for an attempt that ended before
    its server reported its usage (the server read the prompt and bills it)."""
    return max(1, (len(payload) + 3) // 4)


class HttpTransport:
    """What one httpx backend sends every request with, and the sending itself.

    ``url`` is absolute, or relative to ``http_client``'s own base URL. ``http_client``: the
    caller's ``httpx.AsyncClient``, used as it is and not closed by :meth:`aclose`; without one
    a client is made with ``timeout`` (default :data:`DEFAULT_TIMEOUT`) and :data:`LIMITS`, and
    closed by :meth:`aclose`. A ``timeout`` given together with ``http_client`` applies to this
    transport's requests only.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        query: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> None:
        self.url = url
        # fieldstream's User-Agent, unless the caller's client says who it is; a provider's or
        # the caller's headers may replace it.
        ours = {"User-Agent": user_agent()} if _wants_our_user_agent(http_client) else {}
        self.headers = merge_headers(ours, headers)
        self.query = dict(query or {})
        self.timeout = timeout
        self.owns_client = http_client is None
        if http_client is None:
            http_client = httpx.AsyncClient(
                timeout=DEFAULT_TIMEOUT if timeout is None else timeout, limits=LIMITS
            )
        self.http_client = http_client

    async def open(
        self,
        payload: bytes,
        request: GenerationRequest,
        *,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Opened:
        """Send ``payload`` (with ``request``'s own timeout, headers and query) to ``url``
        (default: :attr:`url`), with ``headers`` over the transport's (a credential fetched for
        this request); the response (headers read, status 2xx) and its release.

        A pooled keep-alive connection the server closed while idle fails with "Server
        disconnected without sending a response": nothing was processed, so the request is sent
        once more at once, on a fresh connection. A status that is not 2xx raises its
        :class:`~sdk.APIStatusError`; other failures :class:`~sdk.TransportError`.
        """
        chosen = request.timeout if request.timeout is not None else self.timeout
        timeout = httpx.USE_CLIENT_DEFAULT if chosen is None else chosen
        sent = merge_headers(self.headers, headers, request.extra_headers)
        query = merge_query(self.query, request.extra_query)
        log_request(self.http_client, url or self.url, content=payload, headers=sent, params=query)
        for resend in (True, False):
            manager = self.http_client.stream(
                "POST",
                url or self.url,
                content=payload,
                headers=sent,
                params=query or None,
                timeout=timeout,
            )
            try:
                response = await manager.__aenter__()
            except httpx.RemoteProtocolError as exc:
                if resend and "without sending a response" in str(exc):
                    continue
                raise transport_error(exc, during="before the stream began") from exc
            except httpx.HTTPError as exc:
                raise transport_error(exc, during="before the stream began") from exc
            log_response(response)

            async def release(
                manager: AbstractAsyncContextManager[httpx.Response] = manager,
            ) -> None:
                await manager.__aexit__(None, None, None)

            if not response.is_success:
                try:
                    raise await error_for_status(response)
                finally:
                    with anyio.CancelScope(shield=True):
                        await release()
            return response, release
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Close the httpx client if this transport made it."""
        if self.owns_client:
            await self.http_client.aclose()


def _wants_our_user_agent(http_client: httpx.AsyncClient | None) -> bool:
    """Whether requests should carry fieldstream's ``User-Agent``: yes, unless the caller's
    ``http_client`` was given a ``User-Agent`` of its own (not httpx's default)."""
    given = None if http_client is None else http_client.headers.get("User-Agent")
    return given is None or given.startswith("python-httpx/")


def body_pieces(
    response: httpx.Response, content_types: tuple[str, ...] = EVENT_STREAM
) -> AsyncGenerator[bytes, None]:
    """The body of a streamed response as it arrives, in pieces.

    ``response`` is an ``httpx.Response`` (or an ``httpx2.Response``). Raises
    :class:`~sdk.TransportError` when its content type is none of ``content_types`` (default:
    an event stream): a server that ignored ``stream: true``, a proxy's error page. The pieces
    are the undecoded bytes (``aiter_raw``) unless the body is compressed (then httpx's
    decoders are needed) or was read already (a response built from bytes, as a mock transport
    makes: only ``aiter_bytes`` serves it).
    """
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if not any(kind in content_type.lower() for kind in content_types):
        raise TransportError(
            f"expected {_KIND.get(content_types[0], ' or '.join(content_types))}, got "
            f"{response.headers.get('content-type')!r}",
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
