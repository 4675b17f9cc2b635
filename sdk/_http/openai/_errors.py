"""OpenAI's error objects, sent inside a stream, as fieldstream's errors (sans-I/O).

A status before the stream is the shared :mod:`sdk._http._errors`' to map; this module reads
what OpenAI-compatible servers send once the stream has begun: a Chat Completions chunk that is
an error object, or an ``event: error`` (:func:`error_from_payload`), and the Responses API's
``response.failed`` and ``error`` events (:func:`responses_error`). Whether each is worth a new
attempt is read from its code or status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._errors import TransportError, status_error_class
from sdk._http._status import retryable_status

__all__ = ["TRANSIENT_CODES", "error_from_payload", "responses_error"]

TRANSIENT_CODES = frozenset({"server_error", "rate_limit_exceeded", "vector_store_timeout"})
"""Error codes of the Responses API that a new attempt may get past."""


def error_from_payload(payload: Any, *, default: str) -> TransportError:
    """A :class:`~sdk.TransportError` for an error the server sent inside the stream.

    ``payload`` is ``{"error": {"message", "type", "code"}}``, ``{"error": "text"}``, the inner
    error object itself, or plain text. A numeric ``code`` is read as an HTTP status (llama.cpp
    and vLLM send one); 429 and 5xx are retryable, other 4xx and ``invalid_request_error`` are
    not; an error without either (a server failing mid-generation) is retryable. ``body`` is
    the error object itself (its text when it is text), as for a status error.
    """
    error = payload.get("error", payload) if isinstance(payload, Mapping) else payload
    message: str = default
    status: int | None = None
    kind: str | None = None
    if isinstance(error, Mapping):
        if isinstance(error.get("message"), str) and error["message"]:
            message = error["message"]
        code = error.get("code", error.get("status"))
        if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
            status = int(code)
        if isinstance(error.get("type"), str):
            kind = error["type"]
    elif isinstance(error, str) and error:
        message = error
    if status is not None:
        retryable = retryable_status(status)
    else:
        retryable = kind != "invalid_request_error"
    # The error object itself, as for a status error (and as openai-python gives both).
    body = dict(error) if isinstance(error, Mapping) else str(error)[:2000]
    if status is not None and status >= 400:  # a status in the stream: its family's class
        return status_error_class(status)(message, status=status, retryable=retryable, body=body)
    return TransportError(message, status=status, retryable=retryable, body=body)


def responses_error(
    error: Any, *, default: str, payload: Mapping[str, Any] | None = None
) -> TransportError:
    """A :class:`~sdk.TransportError` for an error object of the Responses API (``{"code",
    "message"}``, with ``type`` and ``param`` on an ``error`` event). ``body`` is the error
    object (an event that is itself the error: its fields, less the event's ``type`` and
    ``sequence_number``); ``payload``, the event, when there is no error object."""
    message, code = default, None
    if isinstance(error, Mapping):
        if isinstance(error.get("message"), str) and error["message"]:
            message = error["message"]
        code = error.get("code")
    status = None
    if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
        status = int(code)
        retryable = retryable_status(status)
    elif isinstance(code, str) and code:
        retryable = code in TRANSIENT_CODES
    else:
        retryable = True  # a server that failed mid-generation, saying no more
    if code is not None and status is None:
        message = f"{message} ({code})"
    # The error object itself, as for a status error (openai-python's ``body``); the event it
    # came in when it had no error object.
    body: Any = payload
    if isinstance(error, Mapping):
        body = {k: v for k, v in error.items() if k not in ("type", "sequence_number")}
        if error is not payload and "type" in error:
            body["type"] = error["type"]  # a nested error's own type, not the event's
    if status is not None and status >= 400:  # a status in the stream: its family's class
        return status_error_class(status)(message, status=status, retryable=retryable, body=body)
    return TransportError(message, status=status, retryable=retryable, body=body)
