"""What the backends over a vendor's own SDK client share (openai-python and Anthropic's SDK are
made alike): the SDK imported (or what to install), the per-request options in the SDK's words,
the HTTP errors to expect of it, the raw streamed response it opens (read by the same code as
the httpx backends), its status and connection errors as ours, and the settings of its blocking
client copied into an async one."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from sdk._backend import GenerationRequest
from sdk._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    MissingDependencyError,
    TransportError,
)
from sdk._http._errors import status_error
from sdk._http._transport import ErrorTypes, Opened

__all__ = [
    "blocking_settings",
    "connection_error",
    "http_errors",
    "import_sdk",
    "per_request",
    "raw_response",
    "sdk_status_error",
]


def import_sdk(module: str, constructor: str, package: str) -> Any:
    """The vendor SDK's ``module``, imported for ``Client.<constructor>``; without it a
    :class:`~sdk.MissingDependencyError` that says which ``package`` to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"Client.{constructor} needs the {package} package: pip install {package}"
        ) from exc


def per_request(request: GenerationRequest) -> dict[str, Any]:
    """The SDK's per-request options for what ``request`` overrides: ``timeout``,
    ``extra_headers``, ``extra_query`` (nothing when it overrides nothing)."""
    options: dict[str, Any] = {}
    if request.timeout is not None:
        options["timeout"] = request.timeout
    if request.extra_headers:
        options["extra_headers"] = dict(request.extra_headers)
    if request.extra_query:
        options["extra_query"] = dict(request.extra_query)
    return options


def http_errors(api_error: type[Exception]) -> ErrorTypes:
    """What reading the SDK's response may raise and the read loop expects: ``api_error`` (the
    SDK's base class) and the HTTP library's errors, httpx's, and httpx2's where installed
    (the HTTP library of the SDKs' later majors)."""
    errors: list[type[Exception]] = [httpx.HTTPError, api_error]
    try:
        import httpx2
    except ImportError:  # pragma: no cover - an SDK over httpx
        pass
    else:
        errors.append(httpx2.HTTPError)
    return tuple(errors)


def raw_response(
    create: Callable[[], Any], call: Callable[[Awaitable[Any]], Awaitable[Any]]
) -> Callable[[], Awaitable[Opened]]:
    """The opener of the raw streamed response of ``create()`` (an SDK's
    ``with_streaming_response.create(...)`` manager), entered through ``call`` (which raises its
    errors as ours): the events then go through the same code as the httpx backend's, and
    nothing of the SDK's own iterators is left half-consumed (they stop reading at the end
    without closing their generators)."""

    async def open_response() -> Opened:
        manager = create()
        api_response = await call(manager.__aenter__())

        async def release() -> None:
            await manager.__aexit__(None, None, None)

        return api_response.http_response, release

    return open_response


def sdk_status_error(exc: Any, *, body: Any) -> APIStatusError:
    """An SDK's ``APIStatusError`` as its :class:`~sdk.APIStatusError` class (``body``: the
    error body as the provider's errors read it)."""
    status = exc.status_code
    return status_error(
        f"HTTP {status}: {exc.message}",
        status=status,
        headers=exc.response.headers,
        body=body,
        response=exc.response,
    )


def connection_error(exc: Exception, timed_out: bool) -> TransportError:
    """An SDK's connection error (``timed_out``: its timeout subclass) as ours."""
    cls = APITimeoutError if timed_out else APIConnectionError
    return cls(f"the connection {'timed out' if timed_out else 'failed'}: {exc}")


def blocking_settings(client: Any) -> dict[str, Any]:
    """What a blocking SDK client's async twin is made with besides its credentials and
    where it sends: its timeout, max retries, default headers and query."""
    return {
        "timeout": client.timeout,
        "max_retries": client.max_retries,
        "default_headers": dict(getattr(client, "_custom_headers", {}) or {}) or None,
        "default_query": dict(getattr(client, "_custom_query", {}) or {}) or None,
    }
