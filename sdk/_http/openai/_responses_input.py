"""Chat messages -> the Responses API's ``input`` items (sans-I/O).

A conversation is written in Chat Completions' shape (the shape every entry point takes, and
the one the retry feedback is written in); ``POST /responses`` reads other shapes. Each
message becomes what the ``openai`` package's ``ResponseInputParam`` types describe:

==========================================  ==================================================
Chat Completions                            Responses API
==========================================  ==================================================
``{"role": "system" | "developer" |         the same message (``EasyInputMessageParam``),
"user", "content": "text"}``                string content kept
content part ``{"type": "text"}``           ``{"type": "input_text", "text"}``
``{"type": "image_url", "image_url":        ``{"type": "input_image", "image_url": url,
{"url", "detail"}}``                        "detail"}`` (``detail`` ``"auto"`` when not said)
``{"type": "file", "file": {"file_data",    ``{"type": "input_file", "file_data", "file_id",
"file_id", "filename"}}``                   "filename"}``
assistant ``content`` (text, text parts)    ``{"role": "assistant", "content": "text"}``
assistant ``tool_calls[i]``                 ``{"type": "function_call", "call_id": id,
                                            "name", "arguments"}``, one item per call
``{"role": "tool", "tool_call_id",          ``{"type": "function_call_output", "call_id",
"content"}``                                "output"}`` (text, or parts as above)
==========================================  ==================================================

An item already in the Responses API's shape (it has a ``type``: ``"message"``,
``"function_call"``, ``"function_call_output"``, ``"reasoning"``...; or a message whose parts
are ``input_text`` / ``input_image`` / ``input_file``) is sent as it is. What has no
equivalent there is refused before any request, with a :class:`~sdk.StreamUsageError` that
names the message and the part: an ``input_audio`` part (the Responses API's message content
takes text, images and files), an assistant ``refusal`` part or ``audio``, a message ``name``,
the deprecated ``role: "function"`` and ``function_call``, a tool call that is not a function.
Keys whose value is empty (``None``, ``[]``, ``""``, as ``message.model_dump()`` writes them)
are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from sdk._errors import StreamUsageError

__all__ = ["responses_input"]

_INPUT_PARTS = frozenset({"input_text", "input_image", "input_file"})
_MESSAGE_ROLES = frozenset({"system", "developer", "user"})
_HINT = "; say api='chat' to send it as it is, or write the Responses API's own item"


def responses_input(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``input`` list of ``POST /responses`` for ``messages`` (see the module docstring).
    Raises :class:`~sdk.StreamUsageError` for what the Responses API cannot be sent."""
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise StreamUsageError(f"{where} is not a message object: {message!r}")
        if "type" in message:  # a Responses API item already
            items.append(dict(message))
            continue
        role = message.get("role")
        if role in _MESSAGE_ROLES:
            _only(message, {"role", "content"}, where)
            items.append({"role": role, "content": _content(message.get("content"), where)})
        elif role == "assistant":
            items.extend(_assistant(message, where))
        elif role == "tool":
            _only(message, {"role", "content", "tool_call_id"}, where)
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise StreamUsageError(f"{where}: a tool message needs its tool_call_id")
            output = message.get("content")
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": output if isinstance(output, str) else _parts(output, where),
                }
            )
        else:
            raise StreamUsageError(
                f"{where}: role {role!r} has no equivalent in the Responses API"
                " (it takes system, developer, user, assistant and tool messages)" + _HINT
            )
    return items


def _only(message: Mapping[str, Any], keys: set[str], where: str) -> None:
    # Keys without a value (openai's message.model_dump() writes refusal=None, audio=None,
    # annotations=[]...) say nothing and are left out.
    extra = sorted(k for k, v in message.items() if k not in keys and v not in (None, [], ""))
    if extra:
        raise StreamUsageError(
            f"{where}: {', '.join(map(repr, extra))} of a {message.get('role')} message has no "
            "equivalent in the Responses API" + _HINT
        )


def _content(content: Any, where: str) -> Any:
    """A message's content: text as it is, a list of parts translated."""
    if isinstance(content, str):
        return content
    return _parts(content, where)


def _parts(parts: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(parts, list):
        raise StreamUsageError(f"{where}.content must be text or a list of parts, not {parts!r}")
    return [_part(part, f"{where}.content[{i}]") for i, part in enumerate(parts)]


def _part(part: Any, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind in _INPUT_PARTS:
        return dict(part)
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "input_text", "text": part["text"]}
    if kind == "image_url":
        image = part.get("image_url")
        image = {"url": image} if isinstance(image, str) else image
        if not isinstance(image, Mapping) or not isinstance(image.get("url"), str):
            raise StreamUsageError(f"{where}: an image_url part needs image_url.url")
        return {
            "type": "input_image",
            "image_url": image["url"],
            "detail": image.get("detail", "auto"),
        }
    if kind == "file":
        file = part.get("file")
        if not isinstance(file, Mapping) or not file:
            raise StreamUsageError(f"{where}: a file part needs file.file_data or file.file_id")
        return {"type": "input_file", **{k: v for k, v in file.items() if v is not None}}
    if kind == "input_audio":
        raise StreamUsageError(
            f"{where}: an input_audio part has no equivalent in the Responses API (a message's "
            "content there takes input_text, input_image and input_file)" + _HINT
        )
    raise StreamUsageError(
        f"{where}: a part of type {kind!r} has no equivalent in the Responses API"
    )


def _assistant(message: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    _only(message, {"role", "content", "tool_calls"}, where)
    items: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if not (isinstance(part, Mapping) and part.get("type") in ("text", "output_text")):
                raise StreamUsageError(
                    f"{where}.content[{i}]: an assistant part other than text has no "
                    "equivalent in the Responses API's input" + _HINT
                )
            texts.append(str(part.get("text", "")))
        content = "".join(texts)
    if isinstance(content, str) and content:
        items.append({"role": "assistant", "content": content})
    elif content not in (None, ""):
        raise StreamUsageError(f"{where}.content must be text or a list of text parts")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise StreamUsageError(f"{where}.tool_calls must be a list")
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if (
            not isinstance(call, Mapping)
            or call.get("type", "function") != "function"
            or not isinstance(function, Mapping)
        ):
            raise StreamUsageError(
                f"{where}.tool_calls[{i}]: only function calls have an equivalent in the "
                "Responses API's input (a function_call item)"
            )
        call_id, name = call.get("id"), function.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise StreamUsageError(f"{where}.tool_calls[{i}] needs its id and function.name")
        arguments = function.get("arguments", "")
        items.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else _json(arguments),
            }
        )
    return items


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
