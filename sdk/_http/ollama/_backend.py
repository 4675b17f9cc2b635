"""The Ollama backend: its native chat API (``POST /api/chat``) over httpx, streamed as JSON
lines.

It builds the body (:mod:`._request`), sends it through the shared
:class:`~sdk._http._transport.HttpTransport`, reads the lines with the shared read loop
(:func:`~sdk._http._read_loop.stream_deltas`, JSON-lines framing) and turns them into deltas
(:mod:`._lines`). Closing the iterator closes the connection, and Ollama stops generating. A
status that is not 2xx is its :class:`~sdk.APIStatusError` class, the body's ``error`` text as
the message (a model not pulled: ``NotFoundError``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from typing_extensions import Unpack

from sdk._backend import Delta, GenerationRequest
from sdk._http._framing import JsonLinesReader
from sdk._http._http_backend import EndpointOptions, HttpBackend, HttpOptions
from sdk._http.ollama._cures import ollama_policy
from sdk._http.ollama._decoder import OllamaDecoder
from sdk._http.ollama._request import check_ollama_request, forced_call, ollama_body
from sdk._server_policy import attach_policy

__all__ = ["OLLAMA_HOST", "OllamaBackend", "OllamaOptions", "ollama_host"]

OLLAMA_HOST = "http://127.0.0.1:11434"
"""Where requests go when no base URL is given and ``$OLLAMA_HOST`` is not set."""


def ollama_host(host: str | None) -> str:
    """``$OLLAMA_HOST`` read as the ``ollama`` package reads it: a scheme (``http`` when
    absent), a host (``127.0.0.1`` when absent) and a port (11434 when absent and no scheme
    was given; 80 / 443 with one), a path kept, a trailing slash dropped."""
    if not host:
        return OLLAMA_HOST
    scheme, _, rest = host.partition("://")
    if not rest:
        scheme, rest = "http", host
    default_port = {"http": 80, "https": 443}[scheme] if "://" in host else 11434
    hostport, slash, path = rest.partition("/")
    if hostport.startswith("["):  # an IPv6 address
        address, _, tail = hostport[1:].partition("]")
        address = f"[{address}]"
        port = tail[1:] if tail.startswith(":") else ""
    else:
        address, _, port = hostport.partition(":")
    address = address or "127.0.0.1"
    path = (slash + path).rstrip("/")
    return f"{scheme}://{address}:{port or default_port}{path}"


class OllamaOptions(HttpOptions, total=False):
    """The options of :class:`OllamaBackend` besides ``base_url``, ``api_key``, ``model``: the
    shared ones."""


class _Arguments(EndpointOptions, OllamaOptions, total=False):
    """All that :class:`OllamaBackend` takes."""


class OllamaBackend(HttpBackend):
    """A :class:`~sdk._backend.Backend` for Ollama's native chat API.

    ``base_url`` is the server (``http://127.0.0.1:11434``; ``/api/chat`` is added); it
    defaults to ``$OLLAMA_HOST`` read as the ``ollama`` package reads it (:func:`ollama_host`).
    ``api_key`` (default ``$OLLAMA_API_KEY``, for Ollama's cloud or a proxy) is sent as a bearer
    token; a local server needs none. ``model`` (here or per request) is the model's name, as
    ``ollama pull`` took it. ``http_client``, ``timeout``, ``headers`` / ``default_headers``,
    ``default_query`` are as for :class:`~sdk._http.openai.OpenAIBackend`.
    """

    path = "/api/chat"
    """The endpoint, below ``base_url``."""

    def __init__(self, **options: Unpack[_Arguments]) -> None:
        given = self._settings(options, ())
        root = given.base_url or ollama_host(os.environ.get("OLLAMA_HOST"))
        url = given.endpoint(self.path, root)
        sent = {"Content-Type": "application/json", "Accept": "application/x-ndjson"}
        key = given.api_key if given.api_key is not None else os.environ.get("OLLAMA_API_KEY")
        if key:
            sent["Authorization"] = f"Bearer {key}"
        self._transport = given.transport(url, sent)

    @property
    def url(self) -> str:
        """Where requests go (relative to ``http_client``'s base URL when it has one)."""
        return self._transport.url

    def shows_schema(self, request: GenerationRequest) -> bool:
        """False: Ollama's ``format`` is a grammar, not shown to the model (Ollama's
        documentation advises passing the schema in the prompt too), and a forced call is sent
        as ``format``; so ``show_schema=None`` adds it to the conversation."""
        return False

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when ``/api/chat`` cannot be sent
        ``request`` (:func:`~sdk._http.ollama._request.check_ollama_request`)."""
        check_ollama_request(request)

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one chat. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures and error lines, :class:`~sdk.StreamUsageError` for messages Ollama cannot be
        sent."""
        body = ollama_body(request, model=request.model or self.model)
        decoder = OllamaDecoder(tools=bool(body.get("tools")), call=forced_call(request))
        deltas = self._deltas(request, body, decoder, framing=JsonLinesReader)
        attach_policy(deltas, ollama_policy(body))  # what Ollama does with format (_cures.py)
        return deltas
