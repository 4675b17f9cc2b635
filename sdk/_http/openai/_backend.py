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
from collections.abc import AsyncIterator, Callable
from typing import Any

from typing_extensions import Unpack

from sdk._backend import Delta, GenerationRequest
from sdk._http._http_backend import EndpointOptions, HttpBackend, HttpOptions
from sdk._http._read_loop import EventDecoder
from sdk._http._transport import Opened
from sdk._http.openai._azure import AzureSettings, TokenProvider, azure_settings
from sdk._http.openai._chat_decoder import chat_decoder
from sdk._http.openai._chat_request import chat_request
from sdk._http.openai._cures import openai_policy
from sdk._http.openai._flavours import (
    Api,
    Server,
    check_request,
    check_server,
    is_openai,
    shows_schema,
)
from sdk._http.openai._responses_decoder import responses_decoder
from sdk._http.openai._responses_request import responses_request
from sdk._server_policy import attach_policy

__all__ = ["OPENAI_BASE_URL", "OpenAIBackend", "ResponsesBackend", "ServerOptions"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when no base URL is given and ``$OPENAI_BASE_URL`` is not set."""


class ServerOptions(HttpOptions, total=False):
    """The options of :class:`OpenAIBackend` besides ``base_url``, ``api_key`` and ``model``
    (``Client(...)`` takes the same): the shared ones, and these."""

    organization: str | None
    project: str | None
    strict: bool
    server: Server | None
    api_version: str | None
    azure_endpoint: str | None
    azure_deployment: str | None
    azure_ad_token: str | None
    azure_ad_token_provider: TokenProvider | None


_AZURE = (
    "api_version",
    "azure_endpoint",
    "azure_deployment",
    "azure_ad_token",
    "azure_ad_token_provider",
)  # any of them given: the backend is Azure's


class _Arguments(EndpointOptions, ServerOptions, total=False):
    """All that :class:`OpenAIBackend` takes."""


class OpenAIBackend(HttpBackend):
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

    ``server``: which server this is (``"vllm"``, ``"llamacpp"``, ``"sglang"``, ``"tgi"``,
    ``"openai"``; ``None``: not said), so constraints other than JSON Schema are sent its way (see
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

    def __init__(self, **options: Unpack[_Arguments]) -> None:
        given = self._settings(options, ServerOptions.__optional_keys__)
        strict = options.get("strict", True)
        if not isinstance(strict, bool):
            raise TypeError(f"strict must be True or False, not {strict!r}")
        organization, project = options.get("organization"), options.get("project")
        for name, value in (("organization", organization), ("project", project)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        server = options.get("server")
        check_server(server, self.api)
        self.server = server
        self.strict = strict
        self._azure: AzureSettings | None = None
        if any(options.get(name) is not None for name in _AZURE):
            self._azure = azure_settings(
                base_url=given.base_url,
                api_key=given.api_key,
                api_version=options.get("api_version"),
                azure_endpoint=options.get("azure_endpoint"),
                azure_deployment=options.get("azure_deployment"),
                azure_ad_token=options.get("azure_ad_token"),
                azure_ad_token_provider=options.get("azure_ad_token_provider"),
            )
        sent = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "Cache-Control": "no-store",
        }
        key = given.api_key if given.api_key is not None else os.environ.get("OPENAI_API_KEY")
        query = given.default_query
        if self._azure is not None:
            url = self._azure.root  # each request's URL: AzureSettings.url
            sent.update(self._azure.static_headers)
            query = {**(query or {}), "api-version": self._azure.api_version}
        else:
            root = given.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
            url = given.endpoint(self.path, root)
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
        self._transport = given.transport(url, sent, query=query)

    @property
    def url(self) -> str:
        """Where requests go (relative to ``http_client``'s base URL when it has one)."""
        return self._transport.url

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one completion. Raises :class:`~sdk.TransportError` for HTTP and connection
        failures (``status``, ``retryable``, ``retry_after``), :class:`~sdk.BackendError` when
        the server sends several choices, :class:`~sdk.StreamUsageError` for ``n > 1``."""
        return self._send(request, chat_request, chat_decoder)

    def _send(
        self,
        request: GenerationRequest,
        build: Callable[..., tuple[dict[str, Any], bool]],
        decoder: Callable[[GenerationRequest, Server | None], EventDecoder],
    ) -> AsyncIterator[Delta]:
        """The deltas of ``request``, its body made by ``build`` (this API's request builder),
        its events read by ``decoder(request, server)``."""
        body, wrapped = build(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        deltas = self._deltas(request, body, decoder(request, self.server), unwrap=wrapped)
        # what the server does with the constraint (_cures.py)
        attach_policy(deltas, openai_policy(request, self.server, self.api))
        return deltas

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when this server cannot be sent
        ``request`` (:func:`sdk._http.openai._flavours.check_request`)."""
        check_request(request, server=self.server, api=self.api)

    def shows_schema(self, request: GenerationRequest) -> bool:
        """Whether this server shows ``request.schema`` to the model itself (OpenAI's structured
        outputs and a schema sent as a tool do; other servers' ``response_format`` is a
        grammar alone): :func:`sdk._http.openai._flavours.shows_schema`."""
        url = self.url
        if "://" not in url:  # relative to the caller's http_client's base URL
            url = str(getattr(self._transport.http_client, "base_url", ""))
        openai = self._azure is not None or is_openai(self.server, url)
        return shows_schema(request, server=self.server, api=self.api, openai=openai)

    async def _open(self, payload: bytes, request: GenerationRequest, url: str | None) -> Opened:
        """Send the request (:meth:`~sdk._http._transport.HttpTransport.open`); to Azure, at
        the URL of the request's deployment, with a token asked for this request."""
        azure = self._azure
        if azure is None:
            return await self._transport.open(payload, request, url=url)
        return await self._transport.open(
            payload,
            request,
            url=azure.url(self.api, request.model or self.model),
            headers=await azure.fresh_headers(),
        )


class ResponsesBackend(OpenAIBackend):
    """An :class:`OpenAIBackend` that streams ``POST {base_url}/responses``
    (``Client(..., api="responses")``); its options are the same."""

    path = "/responses"
    api: Api = "responses"

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one response; errors as for :meth:`sdk._http.openai.OpenAIBackend.generate`, and
        ``response.failed`` / ``error`` events as :class:`~sdk.TransportError`."""
        return self._send(request, responses_request, responses_decoder)
