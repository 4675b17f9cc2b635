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
from sdk._http._chat_messages import chat_calls, checked_messages, system_first, text_and_images

__all__ = ["gemini_contents"]

_KEYS = frozenset({"role", "content", "parts", "tool_calls", "tool_call_id"})


def gemini_contents(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(systemInstruction, contents)`` for ``messages`` (``None``: no system turn)."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> its function's name
    for where, message, role in checked_messages(
        messages, _KEYS, "Gemini's contents have no place for"
    ):
        if "parts" in message:  # Gemini's own content
            if role not in ("user", "model"):
                raise StreamUsageError(f"{where}: a Gemini content's role is 'user' or 'model'")
            parts = [dict(p) for p in message["parts"]]
        elif role in ("system", "developer"):
            system_first(bool(contents), where, role, "Gemini takes one system instruction")
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
    parts = text_and_images(
        content,
        where,
        not_data=lambda url: (
            f"give the image's bytes as a base64 data: URL (or a native fileData part), not {url!r}"
        ),
        takes="Gemini's contents take text and images",
    )
    return [
        {"text": part}
        if isinstance(part, str)
        else {"inlineData": {"mimeType": part.mime, "data": part.data}}
        for part in parts
    ]


def _calls(calls: Any, where: str, names: dict[str, str]) -> list[dict[str, Any]]:
    checked = chat_calls(
        calls, where, lambda v: "a functionCall's args are a JSON object", names=names
    )
    return [
        {
            "functionCall": {
                "name": call.name,
                "args": dict(call.arguments),
                **({} if call.id is None else {"id": call.id}),
            }
        }
        for call in checked
    ]


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
