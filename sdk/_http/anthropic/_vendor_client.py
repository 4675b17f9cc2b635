"""The backend over the caller's own ``anthropic.AsyncAnthropic`` client
(``Client.from_anthropic``).

The request goes through ``client.messages.with_streaming_response.create(stream=True, ...)``,
so everything the caller set up on that client is used as it is: credentials (an API key, an
auth token, a profile), base URL, default headers, proxies and TLS of its HTTP client,
timeouts, and its own retries of a request that fails before the stream begins
(``max_retries``). The body is the one :func:`~sdk._http.anthropic._request.anthropic_request`
builds for the httpx backend (its fields beyond ``model``, ``max_tokens`` and ``messages`` go
through ``extra_body``), so both paths put the same JSON on the wire; the raw event stream is
read by the same code as the httpx backend.

Its errors stay what they are to the caller's code: an ``anthropic.OverloadedError`` is raised
as an error that is both an :class:`~sdk.InternalServerError` (status 529, retryable) and the
``anthropic.OverloadedError`` itself, so ``except anthropic.APIStatusError`` and ``except
sdk.TransportError`` both catch it; likewise for every status class and for
``anthropic.APIConnectionError`` / ``anthropic.APITimeoutError``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

from sdk._backend import Delta, GenerationRequest
from sdk._http import _vendor_sdk as vendor
from sdk._http._errors import both
from sdk._http._read_loop import stream_deltas
from sdk._http._request_checks import calls_forced
from sdk._http._transport import encode_body, estimate_tokens
from sdk._http.anthropic._cures import anthropic_policy
from sdk._http.anthropic._decoder import AnthropicDecoder
from sdk._http.anthropic._errors import anthropic_status_error
from sdk._http.anthropic._request import (
    anthropic_request,
    anthropic_shows_schema,
    check_anthropic_request,
)
from sdk._server_policy import attach_policy

__all__ = ["AnthropicSDKBackend", "async_client"]


class AnthropicSDKBackend:
    """A :class:`~sdk._backend.Backend` that streams through an ``anthropic.AsyncAnthropic``
    client. ``client`` is not closed by :meth:`aclose`: it belongs to the caller."""

    def __init__(self, client: Any, *, model: str) -> None:
        anthropic = vendor.import_sdk("anthropic", "from_anthropic", "anthropic")
        if not isinstance(client, anthropic.AsyncAnthropic):
            raise TypeError(
                "Client.from_anthropic() takes an anthropic.AsyncAnthropic client, not "
                f"{type(client).__name__}"
            )
        if not isinstance(model, str):
            raise TypeError(f"model must be a str, not {type(model).__name__}")
        self._anthropic = anthropic
        self._errors = vendor.http_errors(anthropic.APIError)
        self._client = client
        self.model = model

    def shows_schema(self, request: GenerationRequest) -> bool:
        """As :meth:`~sdk._http.anthropic.AnthropicBackend.shows_schema`."""
        return anthropic_shows_schema(request)

    def check_request(self, request: GenerationRequest) -> None:
        """As :meth:`~sdk._http.anthropic.AnthropicBackend.check_request`."""
        check_anthropic_request(request)

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one message; errors as for the httpx backend, each also the anthropic
        package's own exception."""
        body, wrapped = anthropic_request(request, model=request.model or self.model)
        estimate = estimate_tokens(encode_body(body))
        policy = anthropic_policy(body, request)  # what the API masks (_cures.py)
        named = {key: body.pop(key) for key in ("model", "max_tokens", "messages")}
        del body["stream"]
        deltas = stream_deltas(
            vendor.raw_response(
                lambda: self._client.messages.with_streaming_response.create(
                    **named, stream=True, extra_body=body, **vendor.per_request(request)
                ),
                self._call,
            ),
            AnthropicDecoder(tools=calls_forced(request)),
            errors=self._errors,
            unwrap=wrapped,
            prompt_estimate=estimate,
        )
        attach_policy(deltas, policy)
        return deltas

    async def _call(self, awaitable: Any) -> Any:
        """Await an SDK call; its errors raised as ours and theirs at once."""
        anthropic = self._anthropic
        try:
            return await awaitable
        except anthropic.APIStatusError as exc:
            body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else exc.body
            raise both(
                anthropic_status_error(vendor.sdk_status_error(exc, body=body)), exc
            ) from exc
        except anthropic.APIConnectionError as exc:
            timed_out = isinstance(exc, anthropic.APITimeoutError)
            raise both(vendor.connection_error(exc, timed_out), exc) from exc

    async def aclose(self) -> None:
        """Nothing to release: the anthropic client belongs to the caller."""


def async_client(client: Any) -> Any:
    """``client`` as an ``anthropic.AsyncAnthropic`` when it is an ``anthropic.Anthropic``: its
    settings (API key or auth token, base URL, timeout, max retries, default headers and query)
    copied into a new one; anything else as it is (``Client.from_anthropic`` checks it)."""
    anthropic = sys.modules.get("anthropic")  # an anthropic.Anthropic has imported it
    if anthropic is None or not isinstance(client, anthropic.Anthropic):
        return client
    return anthropic.AsyncAnthropic(
        api_key=client.api_key,
        auth_token=client.auth_token,
        base_url=str(client.base_url),
        **vendor.blocking_settings(client),
    )
