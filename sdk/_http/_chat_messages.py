"""What every provider's translation of Chat-shaped messages checks the same way: that a message
is a mapping with no key the provider has no place for, that a call's ``arguments`` are a JSON
object, that a system turn comes first, and the walks over an assistant turn's ``tool_calls``
(:func:`chat_calls`) and over a content list of text and base64 images
(:func:`text_and_images`). Each
provider's ``_messages`` module does the rest in its own shapes."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sdk._errors import StreamUsageError

__all__ = [
    "ChatCall",
    "DataImage",
    "call_arguments",
    "chat_calls",
    "checked_message",
    "checked_messages",
    "system_first",
    "text_and_images",
]


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


def checked_messages(
    messages: Sequence[object], keys: Collection[str], no_place: str
) -> Iterator[tuple[str, Mapping[str, Any], Any]]:
    """Each of ``messages`` checked (:func:`checked_message`), with where it is
    (``messages[i]``) and its ``role``."""
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        checked = checked_message(message, where, keys, no_place)
        yield where, checked, checked.get("role")


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


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One Chat tool call of an assistant turn, checked."""

    id: str | None
    """The call's ``id``, when it is a string."""
    name: Any
    """``function.name`` (a string, unless the provider does not need one: see ``needs_id``)."""
    arguments: Mapping[str, Any]
    """``function.arguments``, as a mapping (:func:`call_arguments`)."""


def chat_calls(
    calls: Any,
    where: str,
    not_an_object: Callable[[object], str],
    *,
    needs_id: bool = False,
    names: dict[str, Any] | None = None,
) -> list[ChatCall]:
    """The calls of ``messages[i].tool_calls`` (``where`` is ``messages[i]``; nothing when it is
    empty), each checked: it has a ``function`` with a ``name`` (``needs_id``: a ``function`` and
    an ``id`` instead, for a provider whose results answer calls by id), and its ``arguments``
    are a JSON object (``not_an_object(value)`` says what else they were). Else a
    :class:`~sdk.StreamUsageError` naming the call. ``names``, when given, learns each call's
    function name by its id (for the tool turns that answer it)."""
    if not calls:
        return []
    if not isinstance(calls, list):
        raise StreamUsageError(f"{where}.tool_calls must be a list")
    out = []
    for i, call in enumerate(calls):
        here = f"{where}.tool_calls[{i}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if needs_id:
            if not isinstance(function, Mapping) or not isinstance(call.get("id"), str):
                raise StreamUsageError(f"{here} needs an 'id' and a 'function' (name, arguments)")
        elif not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise StreamUsageError(f"{here} needs a 'function' with a 'name'")
        value = call_arguments(function, here, not_an_object)
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        if names is not None and call_id is not None:
            names[call_id] = function.get("name")
        out.append(ChatCall(call_id, function.get("name"), value))
    return out


def system_first(began: bool, where: str, role: object, takes: str) -> None:
    """Refuse a system turn (``role``, at ``where``) once the conversation ``began``: the
    provider ``takes`` ("Gemini takes one system instruction") before every turn."""
    if began:
        raise StreamUsageError(
            f"{where} is a {role} turn after the conversation began: {takes}, before every "
            "turn (move it to the start)"
        )


@dataclass(frozen=True, slots=True)
class DataImage:
    """An image given as a base64 ``data:`` URL."""

    mime: str
    """Its media type (``image/png``)."""
    data: str
    """Its bytes, in base64."""


def text_and_images(
    content: object, where: str, *, not_data: Callable[[str], str], takes: str
) -> list[str | DataImage]:
    """The parts of ``messages[i].content`` (``where``), a list of Chat content parts: each
    text part's text, each ``image_url`` part's image (a base64 ``data:`` URL, else
    ``not_data(url)`` says what to give instead). Any other part is a
    :class:`~sdk.StreamUsageError`: the provider ``takes`` ("Ollama's messages take text and
    images") only these."""
    if not isinstance(content, list):
        raise StreamUsageError(f"{where}.content must be a string or a list of parts")
    out: list[str | DataImage] = []
    for i, part in enumerate(content):
        here = f"{where}.content[{i}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
                raise StreamUsageError(f"{here}: {not_data(str(url)[:40])}")
            mime, _, data = url[5:].partition(";base64,")
            out.append(DataImage(mime, data))
        else:
            raise StreamUsageError(f"{here}: {takes}, not {kind!r}")
    return out
