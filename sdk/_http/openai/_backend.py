"""The OpenAI-compatible backends over httpx: Chat Completions (:class:`OpenAIBackend`) and the
Responses API (:class:`ResponsesBackend`), streamed as server-sent events.

Works with any server that speaks ``POST {base_url}/chat/completions`` (or ``/responses``) with
``stream: true``: OpenAI, vLLM, SGLang, llama.cpp's server, Ollama. The server applies the
schema (its grammar masks the tokens); this backend only moves bytes: it builds the body
(:mod:`sdk._http.openai._chat_request`, :mod:`sdk._http.openai._responses_request`), sends it
(:class:`~sdk._http._transport.HttpTransport`), and the shared read loop
(:mod:`sdk._http._read_loop`) turns the events into deltas with this provider's decoders
(:mod:`sdk._http.openai._chat_decoder`, :mod:`sdk._http.openai._responses_decoder`).

Closing the iterator :meth:`OpenAIBackend.generate` returns closes the HTTP response at once:
the connection is dropped, so the server sees the client go and stops decoding. Nothing is
read after that. There are no retries here: :mod:`sdk._retry` decides them, and the stream
sends the request again.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import TypedDict

import httpx

from sdk._backend import Delta, GenerationRequest
from sdk._http._read_loop import stream_deltas
from sdk._http._transport import (
    HttpTransport,
    Opened,
    check_http_options,
    encode_body,
    endpoint_url,
    estimate_tokens,
)
from sdk._http.openai._azure import AzureSettings, TokenProvider, azure_settings
from sdk._http.openai._chat_decoder import chat_decoder
from sdk._http.openai._chat_request import chat_request
from sdk._http.openai._flavours import Api, Server, check_request, check_server
from sdk._http.openai._responses_decoder import responses_decoder
from sdk._http.openai._responses_request import responses_request
from sdk._merge import merge_headers

__all__ = ["OPENAI_BASE_URL", "OpenAIBackend", "ResponsesBackend", "ServerOptions"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when no base URL is given and ``$OPENAI_BASE_URL`` is not set."""


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
    api_version: str | None
    azure_endpoint: str | None
    azure_deployment: str | None
    azure_ad_token: str | None
    azure_ad_token_provider: TokenProvider | None


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
    can be open at once (:class:`~sdk._http._transport.HttpTransport`). A ``timeout`` given
    together with ``http_client`` applies to this backend's requests only.

    ``strict``: ask for strict structured outputs where the schema allows it (see
    :mod:`sdk._http.openai._strict`). ``headers`` (or ``default_headers``, openai-python's name) are
    added to every request, ``default_query`` to every request's URL. ``organization`` and
    ``project`` (default ``$OPENAI_ORG_ID`` and ``$OPENAI_PROJECT_ID``) are sent as the
    ``OpenAI-Organization`` / ``OpenAI-Project`` headers, as openai-python sends them.

    Without an API key (no ``api_key``, no ``$OPENAI_API_KEY``) a request to OpenAI's own
    URL would only come back 401: that is refused here, with a ``ValueError`` that says how
    to give one. Other servers (a local one) need no key.

    ``server``: which server this is (``"vllm"``, ``"llamacpp"``, ``"openai"``; ``None``: not
    said), so constraints other than JSON Schema are sent its way (see
    :mod:`sdk._http.openai._flavours`); :meth:`check_request` refuses, before any request, what it
    cannot be sent.

    Azure OpenAI, as openai-python's ``AzureOpenAI`` takes it: ``azure_endpoint`` (else
    ``$AZURE_OPENAI_ENDPOINT``), ``azure_deployment`` (else each request's ``model``),
    ``api_version`` (else ``$OPENAI_API_VERSION``), and one of ``api_key`` (sent as
    ``api-key``; else ``$AZURE_OPENAI_API_KEY``), ``azure_ad_token`` (else
    ``$AZURE_OPENAI_AD_TOKEN``) or ``azure_ad_token_provider`` (called for every request).
    Giving any of ``api_version``, ``azure_endpoint``, ``azure_deployment``,
    ``azure_ad_token``, ``azure_ad_token_provider`` makes this backend Azure's (see
    :mod:`sdk._http.openai._azure`).

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
        api_version: str | None = None,
        azure_endpoint: str | None = None,
        azure_deployment: str | None = None,
        azure_ad_token: str | None = None,
        azure_ad_token_provider: TokenProvider | None = None,
    ) -> None:
        check_http_options(
            base_url, api_key, model, http_client, timeout, headers, default_headers, default_query
        )
        if not isinstance(strict, bool):
            raise TypeError(f"strict must be True or False, not {strict!r}")
        for name, value in (("organization", organization), ("project", project)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        check_server(server, self.api)
        self.server = server
        self.model = model
        self.strict = strict
        azure = (api_version, azure_endpoint, azure_deployment, azure_ad_token)
        self._azure: AzureSettings | None = None
        if any(v is not None for v in azure) or azure_ad_token_provider is not None:
            self._azure = azure_settings(
                base_url=base_url,
                api_key=api_key,
                api_version=api_version,
                azure_endpoint=azure_endpoint,
                azure_deployment=azure_deployment,
                azure_ad_token=azure_ad_token,
                azure_ad_token_provider=azure_ad_token_provider,
            )
        sent = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "Cache-Control": "no-store",
        }
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if self._azure is not None:
            url = self._azure.root  # each request's URL: AzureSettings.url
            sent.update(self._azure.static_headers)
            default_query = {**(default_query or {}), "api-version": self._azure.api_version}
        else:
            root = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
            url = endpoint_url(self.path, base_url, http_client, root)
        if self._azure is None and key:
            sent["Authorization"] = f"Bearer {key}"
        elif self._azure is None and url.startswith(OPENAI_BASE_URL):
            raise ValueError(
                "Missing credentials: OpenAI's API needs a key; pass api_key=... or set the "
                "OPENAI_API_KEY environment variable (or give the base_url of another server)"
            )
        organization = organization or os.environ.get("OPENAI_ORG_ID")
        project = project or os.environ.get("OPENAI_PROJECT_ID")
        if organization:
            sent["OpenAI-Organization"] = organization
        if project:
            sent["OpenAI-Project"] = project
        sent = merge_headers(sent, default_headers, headers)
        self._transport = HttpTransport(
            url, headers=sent, query=default_query, http_client=http_client, timeout=timeout
        )

    @property
    def url(self) -> str:
        """Where requests go (relative to ``http_client``'s base URL when it has one)."""
        return self._transport.url

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The httpx client requests go through."""
        return self._transport.http_client

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one completion. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures (``status``, ``retryable``, ``retry_after``), :class:`~sdk.BackendError` when
        the server sends several choices, :class:`~sdk.StreamUsageError` for ``n > 1``."""
        body, wrapped = chat_request(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        decoder = chat_decoder(request, self.server)
        payload = encode_body(body)
        return stream_deltas(
            lambda: self._open(payload, request),
            decoder,
            unwrap=wrapped,
            prompt_estimate=estimate_tokens(payload),
        )

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when this server cannot be sent
        ``request`` (:func:`sdk._http.openai._flavours.check_request`)."""
        check_request(request, server=self.server, api=self.api)

    async def _open(self, payload: bytes, request: GenerationRequest) -> Opened:
        """Send the request (:meth:`~sdk._http._transport.HttpTransport.open`); to Azure, at
        the URL of the request's deployment, with a token asked for this request."""
        azure = self._azure
        if azure is None:
            return await self._transport.open(payload, request)
        url = azure.url(self.api, request.model or self.model)
        return await self._transport.open(
            payload, request, url=url, headers=await azure.fresh_headers()
        )

    async def aclose(self) -> None:
        """Close the httpx client if this backend made it."""
        await self._transport.aclose()


class ResponsesBackend(OpenAIBackend):
    """An :class:`OpenAIBackend` that streams ``POST {base_url}/responses``
    (``Client(..., api="responses")``); its options are the same."""

    path = "/responses"
    api: Api = "responses"

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one response; errors as for :meth:`sdk._http.OpenAIBackend.generate`, and
        ``response.failed`` / ``error`` events as :class:`~sdk.TransportError`."""
        body, wrapped = responses_request(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        decoder = responses_decoder(request, self.server)
        payload = encode_body(body)
        return stream_deltas(
            lambda: self._open(payload, request),
            decoder,
            unwrap=wrapped,
            prompt_estimate=estimate_tokens(payload),
        )
