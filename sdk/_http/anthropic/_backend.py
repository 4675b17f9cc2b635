"""The Anthropic backend: the Messages API (``POST /v1/messages``) over httpx, streamed as
server-sent events.

It builds the body (:mod:`._request`), sends it through the shared
:class:`~sdk._http._transport.HttpTransport`, reads the event stream with the read loop every
HTTP backend shares (:func:`~sdk._http._read_loop.stream_deltas`) and turns Anthropic's events
into deltas (:mod:`._events`). Closing the iterator :meth:`AnthropicBackend.generate` returns
closes the HTTP response at once: the connection is dropped, which is how the API learns to
stop generating. There are no retries here: :mod:`sdk._retry` decides them (a 529
``overloaded_error`` is a 5xx, retried; ``retry-after`` is honoured), and the stream sends the
request again.

Errors are those of Anthropic's SDK, as fieldstream's classes: a status is its
:class:`~sdk.APIStatusError` family, with the body's ``error`` object, the message
``"{type}: {message}"`` and the ``request-id`` header as ``request_id``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import TypedDict

import httpx

from sdk._backend import Delta, GenerationRequest
from sdk._errors import APIStatusError
from sdk._http._read_loop import stream_deltas
from sdk._http._transport import (
    HttpTransport,
    Opened,
    check_http_options,
    encode_body,
    endpoint_url,
    estimate_tokens,
)
from sdk._http.anthropic._decoder import AnthropicDecoder
from sdk._http.anthropic._errors import anthropic_status_error
from sdk._http.anthropic._request import anthropic_request, check_anthropic_request
from sdk._merge import merge_headers

__all__ = ["ANTHROPIC_BASE_URL", "ANTHROPIC_VERSION", "AnthropicBackend", "AnthropicOptions"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""Where requests go when no base URL is given and ``$ANTHROPIC_BASE_URL`` is not set."""

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent (the API version Anthropic's SDK sends)."""


class AnthropicOptions(TypedDict, total=False):
    """The options of :class:`AnthropicBackend` besides ``base_url``, ``api_key`` and
    ``model`` (``Client(provider="anthropic", ...)`` takes the same)."""

    http_client: httpx.AsyncClient | None
    timeout: httpx.Timeout | float | None
    headers: Mapping[str, str] | None
    default_headers: Mapping[str, str] | None
    default_query: Mapping[str, str] | None


class AnthropicBackend:
    """A :class:`~sdk._backend.Backend` for Anthropic's Messages API.

    ``base_url`` is the API root (``https://api.anthropic.com``; ``/v1/messages`` is added); as
    in Anthropic's SDK it defaults to ``$ANTHROPIC_BASE_URL``, else Anthropic's. ``api_key``
    defaults to ``$ANTHROPIC_API_KEY`` and is sent as ``x-api-key``; without one,
    ``$ANTHROPIC_AUTH_TOKEN`` is sent as a bearer token. Without either, a request to
    Anthropic's own URL is refused here with a ``ValueError`` that says how to give one (a
    proxy or a local server may need none). ``anthropic-version`` is :data:`ANTHROPIC_VERSION`
    unless ``headers`` say otherwise (``anthropic-beta`` goes in ``headers`` too).

    ``model`` is required by the API (here or per request). ``http_client``, ``timeout``,
    ``headers`` / ``default_headers`` and ``default_query`` are as for
    :class:`~sdk._http.OpenAIBackend`.
    """

    path = "/v1/messages"
    """The endpoint, below ``base_url``."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = None,
        headers: Mapping[str, str] | None = None,
        default_headers: Mapping[str, str] | None = None,
        default_query: Mapping[str, str] | None = None,
    ) -> None:
        check_http_options(
            base_url, api_key, model, http_client, timeout, headers, default_headers, default_query
        )
        self.model = model
        root = base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
        url = endpoint_url(self.path, base_url, http_client, root)
        sent = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        token = None if key else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if key:
            sent["x-api-key"] = key
        elif token:
            sent["Authorization"] = f"Bearer {token}"
        elif url.startswith(ANTHROPIC_BASE_URL):
            raise ValueError(
                "Missing credentials: Anthropic's API needs a key; pass api_key=... or set the "
                "ANTHROPIC_API_KEY environment variable (or give the base_url of another server)"
            )
        sent = merge_headers(sent, default_headers, headers)
        self._transport = HttpTransport(
            url, headers=sent, query=default_query, http_client=http_client, timeout=timeout
        )

    @property
    def url(self) -> str:
        """Where requests go (relative to ``http_client``'s base URL when it has one)."""
        return self._transport.url

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers every request is sent with (credentials included)."""
        return self._transport.headers

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The httpx client requests go through."""
        return self._transport.http_client

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when the Messages API cannot be sent
        ``request`` (:func:`~sdk._http.anthropic._request.check_anthropic_request`)."""
        check_anthropic_request(request)

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one message. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures and error events (``status``, ``retryable``, ``retry_after``,
        ``request_id``), :class:`~sdk.StreamUsageError` for messages the API cannot be sent."""
        body, wrapped = anthropic_request(request, model=request.model or self.model)
        forced = request.mode == "tool" and request.tool_choice not in ("auto", "none")
        decoder = AnthropicDecoder(tools=forced)
        payload = encode_body(body)
        return stream_deltas(
            lambda: self._open(payload, request),
            decoder,
            unwrap=wrapped,
            prompt_estimate=estimate_tokens(payload),
        )

    async def _open(self, payload: bytes, request: GenerationRequest) -> Opened:
        """Send the request (:meth:`~sdk._http._transport.HttpTransport.open`); a status error
        as Anthropic's SDK gives it (:func:`anthropic_status_error`)."""
        try:
            return await self._transport.open(payload, request)
        except APIStatusError as exc:
            raise anthropic_status_error(exc) from None

    async def aclose(self) -> None:
        """Close the httpx client if this backend made it."""
        await self._transport.aclose()
