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
from collections.abc import AsyncIterator

from typing_extensions import Unpack

from sdk._backend import Delta, GenerationRequest
from sdk._errors import APIStatusError
from sdk._http._http_backend import EndpointOptions, HttpBackend, HttpOptions
from sdk._http._request_checks import calls_forced
from sdk._http._transport import Opened
from sdk._http.anthropic._decoder import AnthropicDecoder
from sdk._http.anthropic._errors import anthropic_status_error
from sdk._http.anthropic._request import (
    anthropic_request,
    anthropic_shows_schema,
    check_anthropic_request,
)

__all__ = ["ANTHROPIC_BASE_URL", "ANTHROPIC_VERSION", "AnthropicBackend", "AnthropicOptions"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""Where requests go when no base URL is given and ``$ANTHROPIC_BASE_URL`` is not set."""

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent (the API version Anthropic's SDK sends)."""


class AnthropicOptions(HttpOptions, total=False):
    """The options of :class:`AnthropicBackend` besides ``base_url``, ``api_key`` and
    ``model`` (``Client(provider="anthropic", ...)`` takes the same): the shared ones, and
    ``eager_input_streaming``."""

    eager_input_streaming: bool | None
    """Each tool's ``eager_input_streaming`` (fine-grained tool streaming): ``True`` by
    default, so a tool's input streams as Claude writes it; ``False`` sends ``false``,
    ``None`` leaves the field out (:mod:`._request`)."""


class _Arguments(EndpointOptions, AnthropicOptions, total=False):
    """All that :class:`AnthropicBackend` takes."""


class AnthropicBackend(HttpBackend):
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
    :class:`~sdk._http.openai.OpenAIBackend`.
    """

    path = "/v1/messages"
    """The endpoint, below ``base_url``."""

    def __init__(self, **options: Unpack[_Arguments]) -> None:
        given = self._settings(options, ("eager_input_streaming",))
        eager = options.get("eager_input_streaming", True)
        if eager is not None and not isinstance(eager, bool):
            raise TypeError(f"eager_input_streaming must be a bool or None, not {eager!r}")
        self._eager: bool | None = eager
        root = given.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
        url = given.endpoint(self.path, root)
        sent = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        key = given.api_key if given.api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
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
        self._transport = given.transport(url, sent)

    @property
    def url(self) -> str:
        """Where requests go (relative to ``http_client``'s base URL when it has one)."""
        return self._transport.url

    def shows_schema(self, request: GenerationRequest) -> bool:
        """Whether Claude is shown ``request.schema``
        (:func:`~sdk._http.anthropic._request.anthropic_shows_schema`)."""
        return anthropic_shows_schema(request)

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when the Messages API cannot be sent
        ``request`` (:func:`~sdk._http.anthropic._request.check_anthropic_request`)."""
        check_anthropic_request(request)

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one message. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures and error events (``status``, ``retryable``, ``retry_after``,
        ``request_id``), :class:`~sdk.StreamUsageError` for messages the API cannot be sent."""
        body, wrapped = anthropic_request(
            request, model=request.model or self.model, eager=self._eager
        )
        return self._deltas(
            request, body, AnthropicDecoder(tools=calls_forced(request)), unwrap=wrapped
        )

    async def _open(self, payload: bytes, request: GenerationRequest, url: str | None) -> Opened:
        """Send the request (:meth:`~sdk._http._transport.HttpTransport.open`); a status error
        as Anthropic's SDK gives it (:func:`anthropic_status_error`)."""
        try:
            return await self._transport.open(payload, request, url=url)
        except APIStatusError as exc:
            raise anthropic_status_error(exc) from None
