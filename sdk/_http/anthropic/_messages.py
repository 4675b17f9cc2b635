"""Chat-shaped messages -> the Messages API's ``system`` and ``messages`` (sans-I/O).

Callers pass the messages they pass to an OpenAI-compatible server (and the stream adds its
feedback in the same shape); :func:`anthropic_messages` writes them the way Anthropic's
Messages API reads them:

===========================================  ===============================================
Chat Completions                             Messages API
===========================================  ===============================================
``system`` / ``developer`` turns at the      the top-level ``system`` (text blocks, in order)
start
``{"type": "text"}`` part                    a ``text`` block (as it is)
``{"type": "image_url"}`` part: a            an ``image`` block: ``base64`` source (media
``data:`` URL / an http(s) URL               type from the URL) / ``url`` source
assistant ``tool_calls``                     ``tool_use`` blocks (``input``: the arguments
                                             read as JSON)
``tool`` turn (``tool_call_id``,             a ``tool_result`` block in a user turn
``content``)
consecutive turns of one role                one turn (the API wants user and assistant to
                                             alternate; tool results lead their user turn)
===========================================  ===============================================

Provider-native messages pass as they are: a content block of a type Chat does not have
(``image`` with a ``source``, ``document``, ``tool_use``, ``tool_result``, ``thinking``...) is
Anthropic's, and a ``text`` block is the same in both (its ``cache_control`` kept). What has
no equivalent is refused before anything is sent, with a :class:`~sdk.StreamUsageError` that
says which message and what: a system turn after the conversation began, an ``input_audio`` or
``file`` part, a ``function`` turn, a ``name`` on a turn, tool call arguments that are not a
JSON object, an image URL that is neither ``data:`` nor http(s).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdk._errors import StreamUsageError
from sdk._http._chat_messages import chat_calls, checked_messages, system_first

__all__ = ["anthropic_messages"]

_SYSTEM_ROLES = frozenset({"system", "developer"})
# Chat content parts Anthropic has nothing for.
_NO_EQUIVALENT = {
    "input_audio": "audio input (the Messages API takes no audio)",
    "file": "a file part (send a native 'document' block instead)",
}
_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "refusal"})


def anthropic_messages(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system, messages)`` for the Messages API: the system text blocks (empty when there
    is no system turn) and the turns, alternating, each a role and a list of content blocks.
    Raises :class:`~sdk.StreamUsageError` for what the API cannot be sent (see the module
    docstring)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for where, message, role in checked_messages(
        messages, _KEYS, "the Messages API has no place for (a turn is a role and its content)"
    ):
        if role in _SYSTEM_ROLES:
            system_first(bool(turns), where, role, "the Messages API takes one system prompt")
            system.extend(_text_blocks(message.get("content"), where))
            continue
        if role == "tool":
            blocks = [_tool_result(message, where)]
            role = "user"
        elif role in ("user", "assistant"):
            blocks = _blocks(message.get("content"), where)
            if role == "assistant":
                blocks.extend(_tool_uses(message.get("tool_calls"), where))
                refusal = message.get("refusal")
                if isinstance(refusal, str) and refusal and not blocks:
                    blocks.append({"type": "text", "text": refusal})
            elif message.get("tool_calls"):
                raise StreamUsageError(f"{where}: only an assistant turn has tool_calls")
        else:
            raise StreamUsageError(
                f"{where} has role {role!r}; the Messages API has 'user' and 'assistant' turns "
                "(and 'system', 'developer', 'tool' turns are translated)"
            )
        if not blocks:
            continue  # an empty turn says nothing (the API refuses empty content)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:  # tool results first in their turn, as the API requires
        turn["content"].sort(key=lambda block: block.get("type") != "tool_result")
    return system, turns


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise StreamUsageError(f"{where}.content must be a string or a list of parts")
    return [_block(part, f"{where}.content[{i}]") for i, part in enumerate(content)]


def _block(part: Any, where: str) -> dict[str, Any]:
    if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
        raise StreamUsageError(f"{where} is not a content part with a 'type': {part!r}")
    kind = part["type"]
    if kind in _NO_EQUIVALENT:
        raise StreamUsageError(f"{where} is {_NO_EQUIVALENT[kind]}")
    if kind == "image_url":
        return _image(part.get("image_url"), where)
    return dict(part)  # text (the same in both), or a native Anthropic block


def _image(image: Any, where: str) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        raise StreamUsageError(f"{where}.image_url has no url")
    if url.startswith("data:"):
        header, comma, data = url[5:].partition(",")
        media_type, _, encoding = header.partition(";")
        if not comma or encoding != "base64":
            raise StreamUsageError(
                f"{where}: a data URL must be base64 (data:image/png;base64,...), not {url[:40]!r}"
            )
        source = {"type": "base64", "media_type": media_type, "data": data}
    elif url.startswith(("http://", "https://")):
        source = {"type": "url", "url": url}
    else:
        raise StreamUsageError(f"{where}: an image URL must be data: or http(s), not {url[:40]!r}")
    return {"type": "image", "source": source}


def _text_blocks(content: Any, where: str) -> list[dict[str, Any]]:
    blocks = _blocks(content, where)
    for block in blocks:
        if block.get("type") != "text":
            raise StreamUsageError(f"{where}: a system prompt is text only, not {block['type']!r}")
    return blocks


def _tool_uses(calls: Any, where: str) -> list[dict[str, Any]]:
    return [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in chat_calls(
            calls, where, lambda v: f"a tool_use input is a JSON object, not {v!r}", needs_id=True
        )
    ]


def _tool_result(message: Mapping[str, Any], where: str) -> dict[str, Any]:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str):
        raise StreamUsageError(f"{where}: a tool turn needs the 'tool_call_id' it answers")
    content = message.get("content")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    if isinstance(content, str):
        block["content"] = content
    elif content is not None:
        block["content"] = _blocks(content, where)
    return block
