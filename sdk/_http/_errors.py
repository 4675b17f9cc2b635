"""What goes wrong on the wire, as fieldstream's errors (shared by every provider).

A response whose status is not 2xx becomes the :class:`~sdk.APIStatusError` of its family
(:func:`error_for_status`, :func:`status_error`: the class from :func:`sdk._errors.
status_error_class`, ``Retry-After`` and ``x-request-id`` read from the headers, the body as
openai-python gives it, :func:`parse_body`); a failed connection becomes an
:class:`~sdk.APIConnectionError` (:func:`transport_error`). Whether and when they are retried is
:mod:`sdk._retry`'s to say. A provider's own error objects (sent inside its stream) are mapped
in its folder (``openai/_errors.py``). :func:`both` makes an error that is ours and a vendor
SDK's exception at once, for the backends that go through the caller's SDK client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from sdk._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    TransportError,
    status_error_class,
)
from sdk._http._status import retry_after_from, retryable_response

__all__ = ["both", "error_for_status", "parse_body", "status_error", "transport_error"]

_BODY_LIMIT = 64 * 1024  # bytes of an error body worth keeping


async def error_for_status(response: httpx.Response) -> APIStatusError:
    """The error for a response whose status is not 2xx (its body is read; 64 KiB are kept).
    Its message is ``HTTP <status>: <the error's message>`` (the body's text when it has no
    message); the URL is left out (``error.request.url`` has it)."""
    chunks: list[bytes] = []
    size = 0
    try:
        # Read to the end (error bodies are small) rather than stop early: an iterator left
        # suspended inside httpx would be finalized by the garbage collector.
        async for chunk in response.aiter_bytes():
            if size < _BODY_LIMIT:
                chunks.append(chunk)
                size += len(chunk)
    except httpx.HTTPError:
        pass  # the status is what matters; a body cut short is still worth showing
    text = b"".join(chunks)[:_BODY_LIMIT].decode("utf-8", "replace")
    body = parse_body(text)
    said = body.get("message") if isinstance(body, Mapping) else None
    detail = said if isinstance(said, str) and said else text.strip().replace("\n", " ")[:300]
    status = response.status_code
    return status_error(
        f"HTTP {status}" + (f": {detail}" if detail else ""),
        status=status,
        headers=response.headers,
        body=body,
        response=response,
    )


def parse_body(text: str) -> Any:
    """An error body as openai-python gives it: the JSON value when it is JSON (its ``error``
    object when it has one), else the text (``None`` when empty)."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value.get("error", value) if isinstance(value, Mapping) else value


def status_error(
    message: str,
    *,
    status: int,
    headers: Mapping[str, str],
    body: Any,
    response: Any,
) -> APIStatusError:
    """The :class:`~sdk.APIStatusError` of ``status``'s family (:func:`sdk._errors.
    status_error_class`), with the response's ``Retry-After``, ``x-request-id`` and whether
    it is worth retrying (:func:`sdk._http._status.retryable_response`)."""
    cls = status_error_class(status)
    return cls(
        message,
        status=status,
        retryable=retryable_response(status, headers),
        retry_after=retry_after_from(headers),
        body=body,
        response=response,
        request_id=headers.get("x-request-id"),
    )


def transport_error(exc: BaseException, *, during: str) -> APIConnectionError:
    """An :class:`~sdk.APIConnectionError` for a failed connection (an
    :class:`~sdk.APITimeoutError` when it timed out): always retryable, no status."""
    timed_out = "Timeout" in type(exc).__name__
    cls = APITimeoutError if timed_out else APIConnectionError
    kind = "timed out" if timed_out else "failed"
    try:
        request = getattr(exc, "request", None)  # httpx's raises when it has none
    except RuntimeError:
        request = None
    return cls(
        f"the connection {kind} {during}: {type(exc).__name__}: {exc}",
        retryable=True,
        request=request,
    )


_BOTH: dict[tuple[type[BaseException], type[BaseException]], type[TransportError]] = {}


def both(ours: TransportError, theirs: BaseException) -> TransportError:
    """An error that is ``ours`` and ``theirs`` at once: an instance of a class derived from
    both classes (made once per pair), with ``theirs``' attributes (``request``, ``code``,
    ``param``, ``type``...) and ``ours`` (which agree with them where the names meet:
    ``message``, ``body``, ``response``, ``status_code``, ``request_id``)."""
    key = (type(ours), type(theirs))
    cls = _BOTH.get(key)
    if cls is None:
        cls = type(
            type(ours).__name__,
            key,
            {
                "__module__": type(ours).__module__,
                "__doc__": f"{type(ours).__doc__}\n\nAlso a {type(theirs).__module__}."
                f"{type(theirs).__qualname__} (raised through Client.from_openai).",
            },
        )
        _BOTH[key] = cls
    error = cls.__new__(cls, *ours.args)
    error.__dict__.update(vars(theirs))
    error.__dict__.update(vars(ours))
    if error._request is None:  # theirs knows the request even without a response
        error._request = getattr(theirs, "request", None)
    return error
