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

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from sdk._backend import Delta, GenerationRequest
from sdk._errors import (
    APIConnectionError,
    APITimeoutError,
    MissingDependencyError,
    TransportError,
)
from sdk._http._errors import both, status_error
from sdk._http._read_loop import EventDecoder, stream_deltas
from sdk._http._transport import Opened, encode_body, estimate_tokens
from sdk._http.openai._chat_decoder import chat_decoder
from sdk._http.openai._chat_request import chat_request
from sdk._http.openai._errors import error_from_payload
from sdk._http.openai._flavours import Api, Server, check_request, check_server
from sdk._http.openai._responses_decoder import responses_decoder
from sdk._http.openai._responses_request import responses_request

__all__ = ["OpenAISDKBackend", "ResponsesSDKBackend", "per_request"]


def per_request(request: GenerationRequest) -> dict[str, Any]:
    """The openai SDK's per-request options for what ``request`` overrides: ``timeout``,
    ``extra_headers``, ``extra_query`` (nothing when it overrides nothing)."""
    options: dict[str, Any] = {}
    if request.timeout is not None:
        options["timeout"] = request.timeout
    if request.extra_headers:
        options["extra_headers"] = dict(request.extra_headers)
    if request.extra_query:
        options["extra_query"] = dict(request.extra_query)
    return options


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
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - only without the openai package
            raise MissingDependencyError(
                "Client.from_openai needs the openai package: pip install openai"
            ) from exc
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
        # The SDK's HTTP library: httpx for openai 1.x, httpx2 from openai 3.
        errors: list[type[Exception]] = [httpx.HTTPError, openai.APIError]
        try:
            import httpx2
        except ImportError:  # pragma: no cover - openai 1.x
            pass
        else:
            errors.append(httpx2.HTTPError)
        self._errors = tuple(errors)
        self._client = client
        self.model = model
        self.strict = strict

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one completion; errors as for :meth:`sdk._http.openai.OpenAIBackend.generate`."""
        body, wrapped = chat_request(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        estimate = estimate_tokens(encode_body(body))
        model, messages = body.pop("model"), body.pop("messages")
        del body["stream"]
        decoder = chat_decoder(request, self.server)
        return self._stream(
            lambda: self._client.chat.completions.with_streaming_response.create(
                model=model, messages=messages, stream=True, extra_body=body, **per_request(request)
            ),
            decoder,
            unwrap=wrapped,
            prompt_estimate=estimate,
        )

    def _stream(
        self,
        create: Callable[[], Any],
        decoder: EventDecoder,
        *,
        unwrap: bool,
        prompt_estimate: int | None = None,
    ) -> AsyncIterator[Delta]:
        """The deltas of the response ``create()`` opens (an SDK streaming-response manager);
        ``unwrap``: the schema's root was sent wrapped."""

        async def open_response() -> Opened:
            # The raw streaming response, not the SDK's chunk iterator: the events then go
            # through the same code as the httpx backend, and nothing of the SDK's own
            # iterators is left half-consumed (it stops reading at [DONE] without closing its
            # generators).
            manager = create()
            api_response = await self._call(manager.__aenter__())

            async def release() -> None:
                await manager.__aexit__(None, None, None)

            return api_response.http_response, release

        return stream_deltas(
            open_response,
            decoder,
            errors=self._errors,
            unwrap=unwrap,
            prompt_estimate=prompt_estimate,
        )

    def check_request(self, request: GenerationRequest) -> None:
        """Raise :class:`~sdk.UnsupportedConstraint` when the server cannot be sent
        ``request`` (:func:`sdk._http.openai._flavours.check_request`)."""
        check_request(request, server=self.server, api=self.api)

    async def _call(self, awaitable: Any) -> Any:
        """Await an SDK call; its errors raised as ours and theirs at once (:func:`both`)."""
        openai = self._openai
        try:
            return await awaitable
        except openai.APIStatusError as exc:
            status = exc.status_code
            error: TransportError = status_error(
                f"HTTP {status}: {exc.message}",
                status=status,
                headers=exc.response.headers,
                body=exc.body,
                response=exc.response,
            )
            raise both(error, exc) from exc
        except openai.APIConnectionError as exc:
            timed_out = isinstance(exc, openai.APITimeoutError)
            cls = APITimeoutError if timed_out else APIConnectionError
            error = cls(f"the connection {'timed out' if timed_out else 'failed'}: {exc}")
            raise both(error, exc) from exc
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
        body, wrapped = responses_request(
            request, model=request.model or self.model, strict=self.strict, server=self.server
        )
        estimate = estimate_tokens(encode_body(body))
        model, items = body.pop("model"), body.pop("input")
        del body["stream"]
        return self._stream(
            lambda: self._client.responses.with_streaming_response.create(
                model=model, input=items, stream=True, extra_body=body, **per_request(request)
            ),
            responses_decoder(request, self.server),
            unwrap=wrapped,
            prompt_estimate=estimate,
        )
