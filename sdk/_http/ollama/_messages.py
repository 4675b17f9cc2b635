"""Chat-shaped messages -> Ollama's ``/api/chat`` messages (sans-I/O).

=========================================  ===================================================
Chat Completions                           Ollama
=========================================  ===================================================
a ``system`` / ``developer`` turn          a ``system`` message
text parts                                 ``content`` (the parts' texts joined)
``image_url`` part with a ``data:`` URL    its base64 data in ``images``
assistant ``tool_calls``                   ``tool_calls`` (``function.arguments`` an object)
``tool`` turn (``tool_call_id``)           a ``tool`` message with ``tool_name`` (the name of
                                           the call it answers)
=========================================  ===================================================

Ollama's own messages (``content`` a string, ``images``, ``thinking``, ``tool_name``,
``tool_calls`` with object arguments) pass as they are. What has no equivalent is refused before
anything is sent (:class:`~sdk.StreamUsageError` naming the message): an image by http(s) URL
(Ollama takes the bytes), audio and file parts, a ``name`` on a turn, tool call arguments that
are not a JSON object, a tool turn answering a call no earlier turn made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdk._errors import StreamUsageError
from sdk._http._chat_messages import chat_calls, checked_messages, text_and_images

__all__ = ["ollama_messages"]

_ROLES = frozenset({"system", "user", "assistant", "tool"})
_KEYS = frozenset(
    {"role", "content", "images", "thinking", "tool_calls", "tool_call_id", "tool_name"}
)


def ollama_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages of an ``/api/chat`` body (see the module docstring)."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> its function's name
    for where, message, given in checked_messages(
        messages, _KEYS, "Ollama's messages have no place for"
    ):
        role = "system" if given == "developer" else given
        if role not in _ROLES:
            raise StreamUsageError(f"{where} has role {role!r}; Ollama has {sorted(_ROLES)}")
        turn: dict[str, Any] = {"role": role}
        text, images = _content(message.get("content"), where)
        turn["content"] = text
        if images or message.get("images"):
            turn["images"] = [*(message.get("images") or []), *images]
        if isinstance(message.get("thinking"), str):
            turn["thinking"] = message["thinking"]
        if message.get("tool_calls"):
            turn["tool_calls"] = _calls(message["tool_calls"], where, names)
        if role == "tool":
            turn["tool_name"] = _tool_name(message, where, names)
        out.append(turn)
    return out


def _content(content: Any, where: str) -> tuple[str, list[str]]:
    if content is None or isinstance(content, str):
        return content or "", []
    parts = text_and_images(
        content,
        where,
        not_data=lambda url: (
            f"Ollama takes an image's bytes, so give it as a base64 data: URL (not {url!r})"
        ),
        takes="Ollama's messages take text and images",
    )
    texts = [part for part in parts if isinstance(part, str)]
    images = [part.data for part in parts if not isinstance(part, str)]
    return "".join(texts), images


def _calls(calls: Any, where: str, names: dict[str, str]) -> list[dict[str, Any]]:
    checked = chat_calls(
        calls, where, lambda v: f"Ollama's arguments are a JSON object, not {v!r}", names=names
    )
    return [{"function": {"name": c.name, "arguments": dict(c.arguments)}} for c in checked]


def _tool_name(message: Mapping[str, Any], where: str, names: Mapping[str, str]) -> str:
    if isinstance(message.get("tool_name"), str):
        return str(message["tool_name"])
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or call_id not in names:
        raise StreamUsageError(
            f"{where}: a tool turn must answer a call an earlier assistant turn made (its "
            f"tool_call_id, or Ollama's tool_name); {call_id!r} is none"
        )
    return names[call_id]
