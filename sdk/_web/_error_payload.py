"""What a web page is told about an error: all of it, or what a visitor may see.

An error about the model's output (:class:`~sdk.SchemaViolation`, :class:`~sdk.OutputSyntaxError`,
:class:`~sdk.TruncatedError`, :class:`~sdk.RefusedError`, :class:`~sdk.ContentFilteredError`,
and :class:`~sdk.RetriesExhausted` of those) says nothing the page did not already show: its
message goes to the page as it is. Every other error is the server's business: a status error's
message holds the upstream's body and the internal URL (an upstream that echoes the API key
puts the key there), a callback's or a backend's holds whatever the server's code raised. Those
reach a page as a generic message, the status and a request id, unless the caller asks for the
details; :func:`sdk.sse_events` writes the details to the server's log under the same id.
"""

from __future__ import annotations

import uuid
from typing import Any

from sdk._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    BackendError,
    CallbackError,
    ContentFilteredError,
    OutputSyntaxError,
    RefusedError,
    RetriesExhausted,
    SchemaViolation,
    TransportError,
    TruncatedError,
)

# What the model wrote, or did not: the page has seen the output these errors are about.
_ABOUT_THE_OUTPUT = (
    OutputSyntaxError,
    SchemaViolation,
    TruncatedError,
    RefusedError,
    ContentFilteredError,
)


def is_public(error: BaseException) -> bool:
    """Whether ``error``'s message may go to a visitor as it is (it is about the output)."""
    if isinstance(error, RetriesExhausted):
        return all(is_public(e) for e in error.errors)
    return isinstance(error, _ABOUT_THE_OUTPUT)


def public_message(error: BaseException) -> str:
    """``error``'s message when it is about the output, else a generic one that says what kind
    of failure it was and nothing the server said."""
    if is_public(error):
        return str(error)
    if isinstance(error, RetriesExhausted):
        last = f"; last error: {public_message(error.errors[-1])}" if error.errors else ""
        return f"all {len(error.errors)} attempts failed{last}"
    if isinstance(error, APIStatusError):
        family = "failed" if error.status >= 500 else "refused the request"
        return f"the model server {family} (HTTP {error.status})"
    if isinstance(error, APITimeoutError):
        return "the model server did not answer in time"
    if isinstance(error, APIConnectionError):
        return "the connection to the model server failed"
    if isinstance(error, TransportError):
        status = f" (HTTP {error.status})" if error.status is not None else ""
        return f"the model server failed{status}"
    if isinstance(error, BackendError):
        return "the model backend failed"
    if isinstance(error, CallbackError):
        return "a field callback on the server failed"
    return "the stream failed"


def new_request_id() -> str:
    """An id for a failure the upstream gave none for, to find its details in the log."""
    return "fs-" + uuid.uuid4().hex[:16]


def error_data(
    error: BaseException, *, details: bool = True, request_id: str | None = None
) -> dict[str, Any]:
    """An error as JSON for a page: ``type`` and ``message``; ``pointer``, ``keyword`` and
    ``offset`` for a violation; ``status`` for a transport error; ``request_id`` for an
    error that is not about the output (``request_id`` when given, else the upstream's
    ``x-request-id``, else ``None``). With ``details=False`` such an error's message is
    :func:`public_message`'s."""
    public = is_public(error)
    message = str(error) if details or public else public_message(error)
    data: dict[str, Any] = {"type": type(error).__name__, "message": message}
    if isinstance(error, SchemaViolation):  # its message without the pointer and offset
        data.update(message=error.message, pointer=error.pointer, keyword=error.keyword)
        data.update(offset=error.offset)
    if isinstance(error, TransportError):
        data.update(status=error.status)
    if not public:
        data.update(request_id=request_id or getattr(error, "request_id", None))
    return data
