"""What every provider's translation of Chat-shaped messages checks the same way: that a message
is a mapping with no key the provider has a place for, and that a call's ``arguments`` are a JSON
object. Each provider's ``_messages`` module does the rest in its own shapes."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from sdk._errors import StreamUsageError

__all__ = ["call_arguments", "checked_message"]


def checked_message(
    message: object, where: str, keys: Collection[str], no_place: str
) -> Mapping[str, Any]:
    """``message`` (``messages[i]`` at ``where``) as a mapping whose keys are all in ``keys``;
    else a :class:`~sdk.StreamUsageError` naming what ``no_place`` (e.g. "Ollama's messages
    have no place for") cannot hold."""
    if not isinstance(message, Mapping):
        raise StreamUsageError(f"{where} is not a mapping: {message!r}")
    unknown = sorted(k for k in message if k not in keys)
    if unknown:
        raise StreamUsageError(f"{where} has {', '.join(map(repr, unknown))}, which {no_place}")
    return message


def call_arguments(
    function: Mapping[str, Any], here: str, not_an_object: Callable[[object], str]
) -> Mapping[str, Any]:
    """A Chat tool call's ``function.arguments`` (JSON text, or an object some callers give) as
    a mapping; a :class:`~sdk.StreamUsageError` at ``here`` when it is not JSON, or
    ``not_an_object(value)`` when it is JSON but not an object."""
    arguments = function.get("arguments") or "{}"
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError as exc:
        raise StreamUsageError(f"{here}: the arguments are not JSON ({exc})") from exc
    if not isinstance(value, Mapping):
        raise StreamUsageError(f"{here}: {not_an_object(value)}")
    return value
