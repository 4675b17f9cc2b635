"""A ``<think>…</think>`` block before the document, split off as it streams (sans-I/O).

Reasoning models served without a reasoning parser write their thoughts inline, before the
answer. In ``lenient`` mode the stream routes such a block to the reasoning text, never to the
parser. Only a block at the very start of the output counts (after whitespace); anything else
is the document's, as it came.
"""

from __future__ import annotations

__all__ = ["ThinkSplitter"]

_OPEN = "<think>"
_CLOSE = "</think>"


class ThinkSplitter:
    """Splits one output into ``(reasoning, content)`` pieces, chunk by chunk."""

    __slots__ = ("_buffer", "_state")

    def __init__(self) -> None:
        self._state = "start"  # then "inside" (a block), or "content" (everything after)
        self._buffer = ""

    @property
    def done(self) -> bool:
        """Past the block (or sure there is none): everything from now on is content."""
        return self._state == "content"

    def feed(self, text: str) -> tuple[str, str]:
        """The reasoning and the content in ``text`` (either may be empty)."""
        if self._state == "content":
            return "", text
        text = self._buffer + text
        self._buffer = ""
        if self._state == "start":
            stripped = text.lstrip()
            if _OPEN.startswith(stripped) and len(stripped) < len(_OPEN):
                self._buffer = text  # still a prefix of "<think>": wait
                return "", ""
            if not stripped.startswith(_OPEN):
                self._state = "content"
                return "", text
            self._state = "inside"
            text = stripped[len(_OPEN) :]
        end = text.find(_CLOSE)
        if end >= 0:
            self._state = "content"
            return text[:end], text[end + len(_CLOSE) :].lstrip()
        # Keep back what could be the start of "</think>", split across chunks.
        keep = next(
            (
                n
                for n in range(min(len(_CLOSE) - 1, len(text)), 0, -1)
                if _CLOSE.startswith(text[-n:])
            ),
            0,
        )
        self._buffer = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep], ""

    def end(self) -> tuple[str, str]:
        """The output ended: what was held back (an unclosed block stays reasoning)."""
        held, self._buffer = self._buffer, ""
        if self._state == "inside":
            return held, ""
        return "", held
