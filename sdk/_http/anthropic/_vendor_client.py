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

from collections.abc import AsyncIterator
from typing import Any

import httpx

from sdk._backend import Delta, GenerationRequest
from sdk._errors import APIConnectionError, APITimeoutError, MissingDependencyError, TransportError
from sdk._http._errors import both, status_error
from sdk._http._read_loop import stream_deltas
from sdk._http._transport import Opened, encode_body, estimate_tokens
from sdk._http.anthropic._decoder import AnthropicDecoder
from sdk._http.anthropic._errors import anthropic_status_error
from sdk._http.anthropic._request import anthropic_request, check_anthropic_request

__all__ = ["AnthropicSDKBackend"]


class AnthropicSDKBackend:
    """A :class:`~sdk._backend.Backend` that streams through an ``anthropic.AsyncAnthropic``
    client. ``client`` is not closed by :meth:`aclose`: it belongs to the caller."""

    def __init__(self, client: Any, *, model: str) -> None:
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - only without the anthropic package
            raise MissingDependencyError(
                "Client.from_anthropic needs the anthropic package: pip install anthropic"
            ) from exc
        if not isinstance(client, anthropic.AsyncAnthropic):
            raise TypeError(
                "Client.from_anthropic() takes an anthropic.AsyncAnthropic client, not "
                f"{type(client).__name__}"
            )
        if not isinstance(model, str):
            raise TypeError(f"model must be a str, not {type(model).__name__}")
        self._anthropic = anthropic
        errors: list[type[Exception]] = [httpx.HTTPError, anthropic.APIError]
        try:
            import httpx2
        except ImportError:  # pragma: no cover - anthropic over httpx
            pass
        else:
            errors.append(httpx2.HTTPError)
        self._errors = tuple(errors)
        self._client = client
        self.model = model

    def check_request(self, request: GenerationRequest) -> None:
        """As :meth:`~sdk._http.anthropic.AnthropicBackend.check_request`."""
        check_anthropic_request(request)

    def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        """Stream one message; errors as for the httpx backend, each also the anthropic
        package's own exception."""
        body, wrapped = anthropic_request(request, model=request.model or self.model)
        estimate = estimate_tokens(encode_body(body))
        named = {key: body.pop(key) for key in ("model", "max_tokens", "messages")}
        del body["stream"]
        options: dict[str, Any] = {}
        if request.timeout is not None:
            options["timeout"] = request.timeout
        if request.extra_headers:
            options["extra_headers"] = dict(request.extra_headers)
        if request.extra_query:
            options["extra_query"] = dict(request.extra_query)
        forced = request.mode == "tool" and request.tool_choice not in ("auto", "none")

        async def open_response() -> Opened:
            manager = self._client.messages.with_streaming_response.create(
                **named, stream=True, extra_body=body, **options
            )
            api_response = await self._call(manager.__aenter__())

            async def release() -> None:
                await manager.__aexit__(None, None, None)

            return api_response.http_response, release

        return stream_deltas(
            open_response,
            AnthropicDecoder(tools=forced),
            errors=self._errors,
            unwrap=wrapped,
            prompt_estimate=estimate,
        )

    async def _call(self, awaitable: Any) -> Any:
        """Await an SDK call; its errors raised as ours and theirs at once."""
        anthropic = self._anthropic
        try:
            return await awaitable
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            error: TransportError = anthropic_status_error(
                status_error(
                    f"HTTP {status}: {exc.message}",
                    status=status,
                    headers=exc.response.headers,
                    body=exc.body.get("error", exc.body)
                    if isinstance(exc.body, dict)
                    else exc.body,
                    response=exc.response,
                )
            )
            raise both(error, exc) from exc
        except anthropic.APIConnectionError as exc:
            timed_out = isinstance(exc, anthropic.APITimeoutError)
            cls = APITimeoutError if timed_out else APIConnectionError
            error = cls(f"the connection {'timed out' if timed_out else 'failed'}: {exc}")
            raise both(error, exc) from exc

    async def aclose(self) -> None:
        """Nothing to release: the anthropic client belongs to the caller."""
