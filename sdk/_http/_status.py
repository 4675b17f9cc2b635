"""Which HTTP answers are worth a new request, and how long the server asked to wait: the
status rules (:func:`retryable_status`, :func:`retryable_response`, which also obeys the
``x-should-retry`` header as openai-python does) and the ``retry-after-ms`` /
``Retry-After`` headers (:func:`retry_after_from`). Whether a retry happens is the policy's
to say (:mod:`sdk._retry`)."""

from __future__ import annotations

import datetime
import email.utils
import time
from collections.abc import Mapping

__all__ = ["parse_retry_after", "retry_after_from", "retryable_response", "retryable_status"]


def retryable_status(status: int) -> bool:
    """Whether an HTTP status may go away on a new request: 408 (timeout), 409 (conflict), 429
    (rate limited) and 5xx do, as openai-python judges them; other statuses will not."""
    return status in (408, 409, 429) or status >= 500


def retryable_response(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a response with ``status`` and ``headers`` is worth a new request: the server's
    own ``x-should-retry: true`` / ``false`` when it sent one (as openai-python obeys it),
    else :func:`retryable_status`."""
    said = headers.get("x-should-retry")
    if said == "true":
        return True
    if said == "false":
        return False
    return retryable_status(status)


def retry_after_from(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from a response's headers: ``retry-after-ms`` (what OpenAI sends, in
    milliseconds) when present and readable, else ``Retry-After``."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            seconds = float(millis) / 1000
        except ValueError:
            seconds = float("nan")
        if 0 <= seconds < float("inf"):
            return seconds
    return parse_retry_after(headers.get("retry-after"))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait, from a ``Retry-After`` header: delta-seconds or an HTTP date.

    ``None`` when absent or unreadable; never negative (a date in the past gives ``0.0``).
    ``now`` (a Unix time) is for tests.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT; a date without a zone is read so too
            when = when.replace(tzinfo=datetime.UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN, inf
        return None
    return max(0.0, seconds)
