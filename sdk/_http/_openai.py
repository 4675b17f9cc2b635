"""The OpenAI-compatible backend: Chat Completions over httpx, streamed as server-sent events.

Works with any server that speaks ``POST {base_url}/chat/completions`` with ``stream: true``:
OpenAI, vLLM, SGLang, llama.cpp's server, Ollama. The server applies the schema (its grammar
masks the tokens); this backend only moves bytes: it builds the body
(:mod:`sdk._http._request`), reads the event stream (:mod:`sdk._http._sse`) and turns chunks into
deltas (:mod:`sdk._http._chunks`).

Closing the iterator :meth:`OpenAIBackend.generate` returns closes the HTTP response at once:
the connection is dropped, so the server sees the client go and stops decoding. Nothing is
read after that. There are no retries here: :mod:`sdk._retry` decides them, and the stream
sends the request again.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TypedDict

import anyio
import httpx

from sdk import _constants as _defaults
from sdk._backend import Delta, GenerationRequest
from sdk._http._chunks import ChunkDecoder
from sdk._http._deltas import Opened, stream_deltas
from sdk._http._flavours import Api, Server, calls_forced, check_request, check_server
from sdk._http._request import chat_request
from sdk._http._sse import error_for_status, transport_error
from sdk._http._tool_ids import ToolIdDecoder
from sdk._logs import log_request, log_response
from sdk._merge import merge_headers, merge_query
from sdk._version import user_agent

__all__ = ["DEFAULT_TIMEOUT", "LIMITS", "OPENAI_BASE_URL", "OpenAIBackend", "ServerOptions"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when no base URL is given and ``$OPENAI_BASE_URL`` is not set."""

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
"""The pool of the backend's own httpx client (why these numbers: :mod:`sdk._constants`)."""


def encode_body(body: Mapping[str, object]) -> bytes:
    """A request body as it is sent: compact JSON in UTF-8, as httpx's ``json=`` writes it
    (``ValueError`` for NaN or an infinity, ``TypeError`` for a value JSON cannot hold). A
    stream keeps these bytes, not the body, until it ends (a stale connection is sent the
    request again): a few hundred bytes where the body's objects took kilobytes."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class ServerOptions(TypedDict, total=False):
    """The options of :class:`OpenAIBackend` besides ``base_url``, ``api_key`` and ``model``
    (``Client(...)`` takes the same)."""

    http_client: httpx.AsyncClient | None
    timeout: httpx.Timeout | float | None
    headers: Mapping[str, str] | None
    default_headers: Mapping[str, str] | None
    default_query: Mapping[str, str] | None
    organization: str | None
    project: str | None
    strict: bool
    server: Server | None


class OpenAIBackend:
    """A :class:`~sdk._backend.Backend` for an OpenAI-compatible Chat Completions server.

    ``base_url`` is the API root (``http://127.0.0.1:8080/v1``; ``/chat/completions`` is added).
    As in openai-python, it defaults to ``$OPENAI_BASE_URL``, else OpenAI's
    (``https://api.openai.com/v1``); an ``http_client`` with a ``base_url`` of its own is used
    as it is. ``api_key`` defaults to ``$OPENAI_API_KEY``; without one no ``Authorization``
    header is sent (local servers need none). ``model`` may be ``None`` for a server that
    serves one model.

    ``http_client``: an ``httpx.AsyncClient`` of your own (proxies, TLS, a mock transport); it is
    used as it is, its timeouts included, and not closed by :meth:`aclose`. Without one the
    backend makes its own with ``timeout`` (default :data:`DEFAULT_TIMEOUT`) and a pool of up
    to 1,000 connections, 20 of them kept idle (:data:`LIMITS`), so that hundreds of streams
    can be open at once. A ``timeout``
    given together with ``http_client`` applies to this backend's requests only.

    ``strict``: ask for strict structured outputs where the schema allows it (see
    :mod:`sdk._http._strict`). ``headers`` (or ``default_headers``, openai-python's name) are
    added to every request, ``default_query`` to every request's URL. ``organization`` and
    ``project`` (default ``$OPENAI_ORG_ID`` and ``$OPENAI_PROJECT_ID``) are sent as the
    ``OpenAI-Organization`` / ``OpenAI-Project`` headers, as openai-python sends them.

    Without an API key (no ``api_key``, no ``$OPENAI_API_KEY``) a request to OpenAI's own
    URL would only come back 401: that is refused here, with a ``ValueError`` that says how
    to give one. Other servers (a local one) need no key.

    ``server``: which server this is (``"vllm"``, ``"llamacpp"``, ``"openai"``; ``None``: not
    said), so constraints other than JSON Schema are sent its way (see
    :mod:`sdk._http._flavours`); :meth:`check_request` refuses, before any request, what it
    cannot be sent.

    Every argument is checked here: a wrong kind raises ``TypeError`` naming it.
    """

    path = "/chat/completions"
    """The endpoint, below ``base_url``."""
    api: Api = "chat"

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
        organization: str | None = None,
        project: str | None = None,
        strict: bool = True,
        server: Server | None = None,
    ) -> None:
        _check_arguments(base_url, api_key, model, http_client, timeout, headers, strict)
        for name, value in (("organization", organization), ("project", project)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        for name, mapping in (
            ("default_headers", default_headers),
            ("default_query", default_query),
        ):
            if mapping is not None and not isinstance(mapping, Mapping):
                raise TypeError(f"{name} must be a mapping of names to values, not {mapping!r}")
        check_server(server, self.api)
        self.server = server
        self.model = model
        self.strict = strict
        if base_url is None and http_client is not None and str(http_client.base_url):
            self._url = self.path.lstrip("/")  # relative to the client's own base_url
        else:
            root = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
            self._url = root.rstrip("/") + self.path
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "Cache-Control": "no-store",
        }
        if _wants_our_user_agent(http_client):  # unless the caller's client says who it is
            self._headers["User-Agent"] = user_agent()
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        elif self._url.startswith(OPENAI_BASE_URL):
            raise ValueError(
                "Missing credentials: OpenAI's API needs a key; pass api_key=... or set the "
                "OPENAI_API_KEY environment variable (or give the base_url of another server)"
            )
        organization = organization or os.environ.get("OPENAI_ORG_ID")
        project = project or os.environ.get("OPENAI_PROJECT_ID")
        if organization:
            self._headers["OpenAI-Organization"] = organization
        if project:
            self._headers["OpenAI-Project"] = project
        self._headers = merge_headers(self._headers, default_headers, headers)
        self._query = dict(default_query or {})
        self._owns_client = http_client is None
        self._timeout = timeout
        if http_client is None:
            http_client = httpx.AsyncClient(
                timeout=DEFAULT_TIMEOUT if timeout is None else timeout, limits=LIMITS
            )
        self._http = http_client

    @property
    def url(self) -> str:
        """Where requests go (relative to ``http_client``'s base URL when it has one)."""
        return self._url

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The httpx client requests go through."""
        return self._http

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one completion. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures (``status``, ``retryable``, ``retry_after``), :class:`~sdk.BackendError` when
        the server sends several choices, :class:`~sdk.StreamUsageError` for ``n > 1``."""
        body, wrapped = chat_request(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        decoder = (
            ToolIdDecoder(tools=calls_forced(request)) if request.mode == "tool" else ChunkDecoder()
        )
        payload = encode_body(body)
        return stream_deltas(lambda: self._open(payload, request), decoder, unwrap=wrapped)

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when this server cannot be sent
        ``request`` (:func:`sdk._http._flavours.check_request`)."""
        check_request(request, server=self.server, api=self.api)

    async def _open(self, payload: bytes, request: GenerationRequest) -> Opened:
        """Send the request; the response (headers read, status 2xx) and its release.

        A pooled keep-alive connection the server closed while idle fails with "Server
        disconnected without sending a response": nothing was processed, so the request is sent
        once more at once, on a fresh connection. Other failures raise
        :class:`~sdk.TransportError`.
        """
        chosen = request.timeout if request.timeout is not None else self._timeout
        timeout = httpx.USE_CLIENT_DEFAULT if chosen is None else chosen
        headers = merge_headers(self._headers, request.extra_headers)
        query = merge_query(self._query, request.extra_query)
        log_request(self._http, self._url, content=payload, headers=headers, params=query or None)
        for resend in (True, False):
            manager = self._http.stream(
                "POST",
                self._url,
                content=payload,
                headers=headers,
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
        """Close the httpx client if this backend made it."""
        if self._owns_client:
            await self._http.aclose()


def _wants_our_user_agent(http_client: httpx.AsyncClient | None) -> bool:
    """Whether requests should carry fieldstream's ``User-Agent``: yes, unless the caller's
    ``http_client`` was given a ``User-Agent`` of its own (not httpx's default)."""
    given = None if http_client is None else http_client.headers.get("User-Agent")
    return given is None or given.startswith("python-httpx/")


def _check_arguments(
    base_url: object,
    api_key: object,
    model: object,
    http_client: object,
    timeout: object,
    headers: object,
    strict: object,
) -> None:
    for name, value in (("base_url", base_url), ("api_key", api_key), ("model", model)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if isinstance(base_url, str) and not base_url.startswith(("http://", "https://")):
        raise ValueError(
            f"base_url must be an http(s) URL such as http://host:8000/v1, not {base_url!r}"
        )
    if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
        raise TypeError(
            f"http_client must be an httpx.AsyncClient, not {type(http_client).__name__}"
            " (for an openai client, use Client.from_openai)"
        )
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float, httpx.Timeout))
    ):
        raise TypeError(f"timeout must be seconds or an httpx.Timeout, not {timeout!r}")
    if headers is not None and not isinstance(headers, Mapping):
        raise TypeError(f"headers must be a mapping of names to values, not {headers!r}")
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, not {strict!r}")
