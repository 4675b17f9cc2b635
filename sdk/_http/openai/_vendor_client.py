"""The backends over the caller's own ``openai.AsyncOpenAI`` client (``Client.from_openai``):
Chat Completions (:class:`OpenAISDKBackend`) and the Responses API (:class:`ResponsesSDKBackend`).

The request goes through ``client.chat.completions.create(stream=True, ...)``, so everything the
caller set up on that client is used as it is: API key or Azure credentials, base URL, default
headers and query, proxies and TLS of its HTTP client, timeouts, and its own retries of a
request that fails before the stream begins (``max_retries``). The body is the one
:func:`sdk._http.openai._chat_request.chat_body` builds for the httpx backend, sent through
``extra_body``, so both paths put the same JSON on the wire.

Its errors stay what they are to the caller's code: an ``openai.RateLimitError`` is raised as
an error that is both an :class:`~sdk.RateLimitError` (so a :class:`~sdk.TransportError`) and
the ``openai.RateLimitError`` itself (same attributes), so ``except openai.RateLimitError``
and ``except sdk.TransportError`` both catch it; likewise for every status class and for
``openai.APIConnectionError`` / ``openai.APITimeoutError``. A stream that breaks midway (the
SDK cannot retry that) is the client's ``max_retries``' to retry, an output that breaks the
schema the stream's :class:`~sdk.Retry` policy's. The response is read as a raw event stream
(``with_streaming_response``) by the same code as the httpx backend; closing the iterator
closes that HTTP response at once.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from sdk._backend import Delta, GenerationRequest
from sdk._http._errors import both
from sdk._http._read_loop import EventDecoder, stream_deltas
from sdk._http._transport import encode_body, estimate_tokens
from sdk._http._vendor_sdk import (
    blocking_settings,
    connection_error,
    http_errors,
    import_sdk,
    per_request,
    raw_response,
    sdk_status_error,
)
from sdk._http.openai._chat_decoder import chat_decoder
from sdk._http.openai._chat_request import chat_request
from sdk._http.openai._cures import openai_policy
from sdk._http.openai._errors import error_from_payload
from sdk._http.openai._flavours import (
    Api,
    Server,
    check_api,
    check_request,
    check_server,
    is_openai,
    shows_schema,
)
from sdk._http.openai._responses_decoder import responses_decoder
from sdk._http.openai._responses_request import responses_request
from sdk._server_policy import attach_policy

__all__ = [
    "OpenAISDKBackend",
    "ResponsesSDKBackend",
    "async_client",
    "openai_sdk_backend",
    "sync_client_hint",
]


class OpenAISDKBackend:
    """A :class:`~sdk._backend.Backend` that streams through an ``openai.AsyncOpenAI`` client.

    ``client`` is not closed by :meth:`aclose`: it belongs to the caller.
    """

    api: Api = "chat"

    def __init__(
        self, client: Any, *, model: str, strict: bool = True, server: Server | None = None
    ) -> None:
        check_server(server, self.api)
        self.server = server
        openai = import_sdk("openai", "from_openai", "openai")
        if not isinstance(client, openai.AsyncOpenAI):
            raise TypeError(
                f"Client.from_openai() takes an openai.AsyncOpenAI (or AsyncAzureOpenAI) "
                f"client, not {type(client).__name__}"
                + (
                    "; for an openai.OpenAI, use SyncClient.from_openai"
                    if isinstance(client, openai.OpenAI)
                    else ""
                )
            )
        self._openai = openai
        self._errors = http_errors(openai.APIError)  # httpx, or httpx2 from openai 3
        self._client = client
        self.model = model
        self.strict = strict

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one completion; errors as for :meth:`sdk._http.openai.OpenAIBackend.generate`."""
        return self._send(
            request, chat_request, "messages", lambda c: c.chat.completions, chat_decoder
        )

    def _send(
        self,
        request: GenerationRequest,
        build: Callable[..., tuple[dict[str, Any], bool]],
        items: str,
        resource: Callable[[Any], Any],
        decoder: Callable[[GenerationRequest, Server | None], EventDecoder],
    ) -> AsyncIterator[Delta]:
        """The deltas of ``request``: its body made by ``build`` (this API's request builder),
        ``model`` and the body's ``items`` field named to ``resource(client)``'s
        ``with_streaming_response.create`` and the rest sent as ``extra_body``; the raw response
        read by ``decoder(request, server)``."""
        body, wrapped = build(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        estimate = estimate_tokens(encode_body(body))
        named = {"model": body.pop("model"), items: body.pop(items)}
        del body["stream"]
        read = decoder(request, self.server)
        deltas = stream_deltas(
            raw_response(
                lambda: resource(self._client).with_streaming_response.create(
                    **named, stream=True, extra_body=body, **per_request(request)
                ),
                self._call,
            ),
            read,
            errors=self._errors,
            unwrap=wrapped,
            prompt_estimate=estimate,
        )
        # what the server does with the constraint, as on the httpx backends (_cures.py)
        attach_policy(deltas, openai_policy(request, self.server, self.api))
        return deltas

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when the server cannot be sent
        ``request`` (:func:`sdk._http.openai._flavours.check_request`)."""
        check_request(request, server=self.server, api=self.api)

    def shows_schema(self, request: GenerationRequest) -> bool:
        """Whether the client's server shows ``request.schema`` to the model itself (as for
        :meth:`sdk._http.openai.OpenAIBackend.shows_schema`; an ``AsyncAzureOpenAI`` is
        OpenAI's)."""
        azure = isinstance(self._client, self._openai.AsyncAzureOpenAI)
        url = str(getattr(self._client, "base_url", ""))
        openai = (azure and self.server is None) or is_openai(self.server, url)
        return shows_schema(request, server=self.server, api=self.api, openai=openai)

    async def _call(self, awaitable: Any) -> Any:
        """Await an SDK call; its errors raised as ours and theirs at once (:func:`both`)."""
        openai = self._openai
        try:
            return await awaitable
        except openai.APIStatusError as exc:
            raise both(sdk_status_error(exc, body=exc.body), exc) from exc
        except openai.APIConnectionError as exc:
            timed_out = isinstance(exc, openai.APITimeoutError)
            raise both(connection_error(exc, timed_out), exc) from exc
        except openai.APIError as exc:  # an error object inside the stream
            payload = exc.body if exc.body is not None else exc.message
            raise error_from_payload(payload, default=exc.message) from exc

    async def aclose(self) -> None:
        """Nothing to release: the openai client belongs to the caller."""


class ResponsesSDKBackend(OpenAISDKBackend):
    """An :class:`OpenAISDKBackend` that streams through the ``openai`` client's
    ``responses`` resource (``Client.from_openai(..., api="responses")``)."""

    api: Api = "responses"

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one response; errors as for :class:`ResponsesBackend`."""
        return self._send(
            request, responses_request, "input", lambda c: c.responses, responses_decoder
        )


def async_client(client: Any) -> Any:
    """``client`` as an ``openai.AsyncOpenAI`` when it is an ``openai.OpenAI`` (its API key,
    organization, project, base URL, timeout, max retries, default headers and query copied
    into a new one), as an ``openai.AsyncAzureOpenAI`` when it is an ``openai.AzureOpenAI``
    (:func:`_async_azure`); anything else as it is (``Client.from_openai`` checks it)."""
    openai = sys.modules.get("openai")  # an openai.OpenAI has imported it
    if openai is None:
        return client
    if isinstance(client, openai.AzureOpenAI):
        return _async_azure(openai, client)
    if not isinstance(client, openai.OpenAI):
        return client
    return openai.AsyncOpenAI(
        api_key=client.api_key,
        organization=client.organization,
        project=client.project,
        base_url=client.base_url,
        **blocking_settings(client),
    )


def _async_azure(openai: Any, client: Any) -> Any:
    """An ``openai.AsyncAzureOpenAI`` with ``client``'s settings (an ``openai.AzureOpenAI``):
    endpoint and deployment (or base URL), API version, and its one credential (key, Entra ID
    token, or token provider, which an async client may call as it is)."""
    from openai.lib.azure import API_KEY_SENTINEL

    credential: dict[str, Any] = {}
    if getattr(client, "_azure_ad_token", None) is not None:
        credential["azure_ad_token"] = client._azure_ad_token
    elif getattr(client, "_azure_ad_token_provider", None) is not None:
        credential["azure_ad_token_provider"] = client._azure_ad_token_provider
    elif client.api_key and client.api_key != API_KEY_SENTINEL:
        credential["api_key"] = client.api_key
    endpoint = getattr(client, "_azure_endpoint", None)
    where: dict[str, Any] = (
        {"azure_endpoint": str(endpoint), "azure_deployment": client._azure_deployment}
        if endpoint is not None
        else {"base_url": str(client.base_url)}
    )
    query = {k: v for k, v in (getattr(client, "_custom_query", {}) or {}).items()}
    query.pop("api-version", None)  # the api_version below sets it
    settings = {**blocking_settings(client), "default_query": query or None}
    return openai.AsyncAzureOpenAI(
        api_version=client._api_version,
        organization=client.organization,
        project=client.project,
        **settings,
        **where,
        **credential,
    )


def sync_client_hint(value: object) -> str:
    """What to say to a caller who gave an openai SDK client where an ``httpx.AsyncClient``
    belongs (``SyncClient(http_client=openai.OpenAI())``): nothing for anything else."""
    if type(value).__module__.startswith("openai"):
        return "; for an openai.OpenAI client, use SyncClient.from_openai"
    return ""


def openai_sdk_backend(
    client: Any, *, model: str, strict: bool, api: Api, server: Server | None
) -> OpenAISDKBackend:
    """The backend of ``Client.from_openai``: over ``client``, for ``api``."""
    check_api(api)
    kind = ResponsesSDKBackend if api == ResponsesSDKBackend.api else OpenAISDKBackend
    return kind(client, model=model, strict=strict, server=server)
