"""A stream message's JSON read, or the stream refused (sans-I/O): what every provider's decoder
does first with a message's data. A message that is not JSON, or not a JSON object, is a
:class:`~sdk.TransportError` (not retryable: the server sends what it sends) that quotes it."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

from sdk._errors import TransportError

__all__ = ["json_object", "loads"]


def loads(data: str, what: str) -> Any:
    """``data`` read by ``json.loads`` (``what``, e.g. "an event's data", names it in the error
    when it is not JSON)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise TransportError(
            f"malformed stream: {what} is not JSON: {data[:200]!r}",
            retryable=False,
            body=data[:2000],
        ) from exc


def json_object(data: str, unit: str, what: str, *, fast: bool = True) -> dict[str, Any]:
    """``data`` as a JSON object; ``unit`` ("a record") names it when it is some other JSON
    value, ``what`` ("a record", "an event's data") when it is not JSON. ``fast``: read by
    pydantic-core's reader (several times faster), by ``json.loads`` for what that refuses
    (a lone surrogate escape); else by ``json.loads`` alone."""
    if fast:
        try:
            value = from_json(data, cache_strings="keys")
        except (ValueError, TypeError):
            value = loads(data, what)
    else:
        value = loads(data, what)
    if type(value) is not dict:
        raise TransportError(
            f"malformed stream: {unit} is not a JSON object: {data[:200]!r}",
            retryable=False,
            body=data[:2000],
        )
    return value
