"""Each provider's stop reasons in the stream's words: what every decoder's ``STOP_REASONS``
table is read with (sans-I/O).

A provider says why its generation ended in its own words (Anthropic's ``stop_reason``,
Gemini's ``finishReason``, Ollama's ``done_reason``, the Responses API's
``incomplete_details.reason``). Each decoder has one table, ``STOP_REASONS``, from every word
its provider documents to the finish reason the stream acts on (``sdk/_backend.py``: ``STOP``,
``LENGTH``, ``TOOL_CALLS``, ``CONTENT_FILTER``, ``MALFORMED``), or to :data:`AS_IS`: the word
passes through as it came (a document it leaves unfinished is a :class:`~sdk.TruncatedError`
whose ``reason`` is that word, and the model is not told to be shorter). A word the table does
not list passes through too. What the stream then does with each finish reason, and what the
model is told, is drawn per provider in ``docs/errors.md``.

The provider's own word is kept when the finish reason is another one: the finishing delta says
it in ``Delta.response`` (``stop_reason``, and ``stop_message`` when the provider explained
it), so an error can name what the provider said.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["AS_IS", "finish_reason_of", "stop_said"]

AS_IS: Final = ""
"""A table's value for a reason that passes through as the provider wrote it."""


def finish_reason_of(table: Mapping[str, str], reason: str) -> str:
    """``reason`` (the provider's word) in the stream's words: ``table``'s value, or ``reason``
    itself when the table says :data:`AS_IS` or does not list it."""
    return table.get(reason) or reason


def stop_said(
    reason: str | None, finish_reason: str | None, message: Any = None
) -> dict[str, str] | None:
    """What the finishing delta says about the provider's own stop reason (its
    ``Delta.response``): ``{"stop_reason": reason}`` when the finish reason is another word,
    with ``stop_message`` when the provider explained it; ``None`` when there is nothing to
    add."""
    said: dict[str, str] = {}
    if reason and reason != finish_reason:
        said["stop_reason"] = reason
    if isinstance(message, str) and message.strip():
        said["stop_message"] = message.strip()
    return said or None
