"""Chat-shaped messages -> Gemini's ``contents`` and ``systemInstruction`` (sans-I/O).

=========================================  ===================================================
Chat Completions                           Gemini
=========================================  ===================================================
``system`` / ``developer`` turns at the    ``systemInstruction`` (their text parts)
start
``user`` turn                              a ``user`` content: ``text`` parts, an image's
                                           ``data:`` URL as ``inlineData``
``assistant`` turn                         a ``model`` content: ``text`` parts, each tool call
                                           a ``functionCall`` part (``args``: the arguments)
``tool`` turn (``tool_call_id``)           a ``user`` content with a ``functionResponse`` part
                                           (the call's name; ``response``: the content when it
                                           is a JSON object, else ``{"result": <content>}``)
consecutive turns of one role              one content
=========================================  ===================================================

Gemini's own contents (a turn with ``parts`` instead of ``content``; role ``user`` or
``model``) pass as they are. What has no equivalent is refused before anything is sent
(:class:`~sdk.StreamUsageError` naming the message): a system turn after the conversation
began, an image by http(s) URL (give its bytes as a ``data:`` URL, or a native ``fileData``
part), audio and file parts, a ``name`` on a turn, tool call arguments that are not a JSON
object, a tool turn answering a call no earlier turn made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sdk._errors import StreamUsageError
from sdk._http._chat_messages import call_arguments, checked_message

__all__ = ["gemini_contents"]

_KEYS = frozenset({"role", "content", "parts", "tool_calls", "tool_call_id"})


def gemini_contents(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(systemInstruction, contents)`` for ``messages`` (``None``: no system turn)."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> its function's name
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        message = checked_message(message, where, _KEYS, "Gemini's contents have no place for")
        role = message.get("role")
        if "parts" in message:  # Gemini's own content
            if role not in ("user", "model"):
                raise StreamUsageError(f"{where}: a Gemini content's role is 'user' or 'model'")
            parts = [dict(p) for p in message["parts"]]
        elif role in ("system", "developer"):
            if contents:
                raise StreamUsageError(
                    f"{where} is a {role} turn after the conversation began: Gemini takes one "
                    "system instruction, before every turn (move it to the start)"
                )
            system.extend(_parts(message.get("content"), where))
            continue
        elif role == "user":
            parts = _parts(message.get("content"), where)
        elif role == "assistant":
            role = "model"
            parts = _parts(message.get("content"), where)
            parts.extend(_calls(message.get("tool_calls"), where, names))
        elif role == "tool":
            role = "user"
            parts = [_response(message, where, names)]
        else:
            raise StreamUsageError(
                f"{where} has role {role!r}; Gemini has 'user' and 'model' turns (and "
                "'system', 'developer', 'assistant', 'tool' turns are translated)"
            )
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return ({"role": "user", "parts": system} if system else None), contents


def _parts(content: Any, where: str) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if not isinstance(content, list):
        raise StreamUsageError(f"{where}.content must be a string or a list of parts")
    out: list[dict[str, Any]] = []
    for i, part in enumerate(content):
        here = f"{where}.content[{i}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append({"text": part["text"]})
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
                raise StreamUsageError(
                    f"{here}: give the image's bytes as a base64 data: URL (or a native "
                    f"fileData part), not {str(url)[:40]!r}"
                )
            mime, _, data = url[5:].partition(";base64,")
            out.append({"inlineData": {"mimeType": mime, "data": data}})
        else:
            raise StreamUsageError(f"{here}: Gemini's contents take text and images, not {kind!r}")
    return out


def _calls(calls: Any, where: str, names: dict[str, str]) -> list[dict[str, Any]]:
    if not calls:
        return []
    if not isinstance(calls, list):
        raise StreamUsageError(f"{where}.tool_calls must be a list")
    out = []
    for i, call in enumerate(calls):
        here = f"{where}.tool_calls[{i}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise StreamUsageError(f"{here} needs a 'function' with a 'name'")
        value = call_arguments(function, here, lambda v: "a functionCall's args are a JSON object")
        part: dict[str, Any] = {"name": function["name"], "args": dict(value)}
        if isinstance(call.get("id"), str):
            names[call["id"]] = function["name"]
            part["id"] = call["id"]
        out.append({"functionCall": part})
    return out


def _response(message: Mapping[str, Any], where: str, names: Mapping[str, str]) -> dict[str, Any]:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or call_id not in names:
        raise StreamUsageError(
            f"{where}: a tool turn must answer a call an earlier assistant turn made (its "
            f"tool_call_id); {call_id!r} is none"
        )
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    response: Any = None
    if isinstance(content, str):
        try:
            response = json.loads(content)
        except ValueError:
            response = None
    if not isinstance(response, dict):
        response = {"result": content}
    return {"functionResponse": {"id": call_id, "name": names[call_id], "response": response}}
