"""Showing the schema to the model: the one system text the API and the command line send.

A grammar (the server's, or the local engine's mask) guarantees the output's shape, but the
model writes the content, and it writes better content when it has read what each field is
for: the field names, the types, the ``description`` of each field. Where the schema reaches
the model only as a grammar, nothing in its context says any of that. So, for a stream whose
``show_schema`` is ``True`` (or ``None``, the default, on a backend whose server does not show
the schema to the model itself: :func:`sdk._backend.server_shows_schema`), the client adds
:func:`schema_instruction` to the conversation (:func:`with_schema`):

- appended, after a blank line, to the caller's system message when the conversation begins
  with one (``role`` ``"system"`` or ``"developer"``; a string content gets the text, a list
  of content parts one more text part), so that the caller's instructions stay first and the
  conversation keeps a single system message (many chat templates read only the first);
- else, as a new system message before the conversation: :data:`DEFAULT_SYSTEM` followed by
  the instruction (the text the command line has always sent).

The schema is the canonical one (Draft 2020-12, what the stream checks), as compact JSON, every
``description`` and ``title`` kept. The feedback of a retry comes after the conversation, so it
never repeats the schema; the prompt's tokens count the text (the server's report, or the local
engine's own count).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sdk._backend import Message

__all__ = [
    "DEFAULT_SYSTEM",
    "SCHEMA_INSTRUCTION",
    "schema_instruction",
    "system_text",
    "with_schema",
]

DEFAULT_SYSTEM: Final = "You are a helpful assistant."
"""What a system message made for the schema begins with, when the caller wrote none."""

SCHEMA_INSTRUCTION: Final = (
    "Reply with one JSON document, and nothing else, that follows this JSON Schema:\n{schema}"
)
"""The instruction, ``{schema}`` the schema as compact JSON."""

_SYSTEM_ROLES: Final = ("system", "developer")


def schema_instruction(json_schema: Any) -> str:
    """:data:`SCHEMA_INSTRUCTION` for ``json_schema`` (compact JSON, descriptions kept)."""
    return SCHEMA_INSTRUCTION.format(schema=json.dumps(json_schema, separators=(",", ":")))


def system_text(json_schema: Any, system: str | None = None) -> str:
    """The system message's text: the caller's ``system`` then the instruction, after a blank
    line; without one (``None`` or empty), :data:`DEFAULT_SYSTEM` then the instruction."""
    instruction = schema_instruction(json_schema)
    if not system:
        return f"{DEFAULT_SYSTEM} {instruction}"
    return f"{system}\n\n{instruction}"


def with_schema(messages: Sequence[Message], json_schema: Any) -> tuple[Message, ...]:
    """``messages`` with the schema shown (see the module docstring); the caller's messages
    are copied, never changed."""
    out = list(messages)
    first = out[0] if out else None
    if isinstance(first, Mapping) and first.get("role") in _SYSTEM_ROLES:
        content = first.get("content")
        if isinstance(content, str):
            out[0] = {**first, "content": system_text(json_schema, content)}
            return tuple(out)
        if isinstance(content, list):
            part = {"type": "text", "text": schema_instruction(json_schema)}
            out[0] = {**first, "content": [*content, part]}
            return tuple(out)
    out.insert(0, {"role": "system", "content": system_text(json_schema)})
    return tuple(out)
