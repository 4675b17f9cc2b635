"""Anthropic's errors as fieldstream's classes: an ``error`` event sent inside the stream, and a
status error's body and ``request-id`` header, as Anthropic's SDK gives them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._errors import APIStatusError, TransportError, status_error_class
from sdk._http._status import retryable_status

__all__ = ["ERROR_STATUS", "anthropic_error", "anthropic_status_error"]

ERROR_STATUS: Mapping[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status of each of Anthropic's error ``type``\\ s (its errors page), for an error
sent inside the stream."""


def anthropic_error(payload: Any, *, default: str) -> TransportError:
    """The error for ``{"type": "error", "error": {"type", "message"}}`` (an error event, or
    an error response's body): the :class:`~sdk.APIStatusError` class of the type's status
    (:data:`ERROR_STATUS`), retryable as that status is; an unknown type is a retryable
    :class:`~sdk.TransportError` (a server failing mid-generation)."""
    error = payload.get("error", payload) if isinstance(payload, Mapping) else payload
    message = default
    kind = None
    if isinstance(error, Mapping):
        if isinstance(error.get("message"), str) and error["message"]:
            message = error["message"]
        kind = error.get("type")
    body = payload if isinstance(payload, Mapping) else str(payload)[:2000]
    request_id = payload.get("request_id") if isinstance(payload, Mapping) else None
    status = ERROR_STATUS.get(kind) if isinstance(kind, str) else None
    if status is None:
        return TransportError(f"{kind or 'error'}: {message}", retryable=True, body=body)
    cls: type[APIStatusError] = status_error_class(status)
    return cls(
        f"{kind}: {message}",
        status=status,
        retryable=retryable_status(status),
        body=body,
        request_id=request_id if isinstance(request_id, str) else None,
    )


def anthropic_status_error(error: APIStatusError) -> APIStatusError:
    """``error`` (made from a response's status) with what Anthropic's SDK gives: the
    ``request-id`` header as ``request_id``, and ``"{type}: {message}"`` of the body's error
    object as the message."""
    response = error.response
    if error.request_id is None and response is not None:
        error.request_id = response.headers.get("request-id")
    body = error.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        kind = body.get("type")
        said = f"{kind}: {body['message']}" if isinstance(kind, str) else body["message"]
        error.message = f"HTTP {error.status}: {said}"
        error.args = (error.message,)
    return error
