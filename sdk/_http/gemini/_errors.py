"""Google's error objects (``{"error": {"code", "message", "status"}}``) as fieldstream's
classes: a record inside the stream that carries one, with its ``code`` read as the HTTP status
(its :class:`~sdk.APIStatusError` family; 429 and 5xx retryable)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._errors import TransportError, status_error_class
from sdk._http._status import retryable_status

__all__ = ["gemini_error"]


def gemini_error(payload: Mapping[str, Any]) -> TransportError:
    """The error for a record ``{"error": {...}}`` sent inside the stream."""
    error = payload.get("error")
    message = "the server sent an error"
    status = None
    kind = None
    if isinstance(error, Mapping):
        if isinstance(error.get("message"), str):
            message = error["message"]
        code = error.get("code")
        if isinstance(code, int) and not isinstance(code, bool):
            status = code
        if isinstance(error.get("status"), str):
            kind = error["status"]
    elif isinstance(error, str):
        message = error
    said = f"{kind}: {message}" if kind else message
    if status is None or status < 400:
        return TransportError(said, retryable=True, body=dict(payload))
    return status_error_class(status)(
        said, status=status, retryable=retryable_status(status), body=dict(payload)
    )
