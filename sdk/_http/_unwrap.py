"""Unwrapping, sans-I/O: ``{"value": <document>}`` in, ``<document>`` out, as it streams.

A strict server needs an object at the root, so a schema whose root is not one is sent wrapped
(for OpenAI, :mod:`sdk._http.openai._strict`; any provider whose server needs an object root
may wrap the same way). The server then writes ``{"value": ...}``; :class:`Unwrapper` takes
the wrapper off the text as it streams, so that the tracker, the events, the snapshot, the
result and the errors all speak of the caller's schema, and offsets count in the document the
caller asked for.

It matches the opening ``{ "value" :`` (whitespace allowed between), passes the rest through,
and holds back a trailing ``}`` (with whitespace) until more text shows it was not the last
one: the document is never an object with nothing after it, so the last ``}`` is the wrapper's.
If the output does not start with the wrapper (a server that ignored the schema), everything is
passed through as it came, and the tracker judges it.
"""

from __future__ import annotations

import dataclasses
import re

from sdk._backend import Delta

__all__ = ["WRAPPER_KEY", "DeltaUnwrapper", "Unwrapper"]

WRAPPER_KEY = "value"
"""The one property of the object a non-object root is wrapped in."""

_OPENING = re.compile(r'\s*\{\s*"' + WRAPPER_KEY + r'"\s*:\s*')


def _prefix_pattern() -> re.Pattern[str]:
    """Matches every prefix of the opening (``{``, ``"value"``, ``:``, whitespace between)."""
    pieces = ["\\{", "\\s*"] + [re.escape(c) for c in f'"{WRAPPER_KEY}"'] + ["\\s*", ":"]
    pattern = ""
    for piece in reversed(pieces):
        pattern = f"(?:{piece}{pattern})?"
    return re.compile(r"\s*" + pattern + r"\Z")


_PREFIXES = _prefix_pattern()
_TAIL = re.compile(r"\s*(?:\}\s*)?\Z")


class Unwrapper:
    """Unwraps one document (one message, or one tool call's arguments)."""

    __slots__ = ("_buffer", "_held", "_state")

    def __init__(self) -> None:
        # "opening", then "space" and "body" (unwrapping), or "through" (not wrapped)
        self._state = "opening"
        self._buffer = ""  # the opening so far
        self._held = ""  # a trailing "}" and whitespace, not passed on yet

    def feed(self, text: str) -> str:
        """The document's text in ``text`` (what can be passed on so far)."""
        if self._state == "through":
            return text
        if self._state == "opening":
            self._buffer += text
            match = _OPENING.match(self._buffer)
            if match is None:
                if _PREFIXES.match(self._buffer):
                    return ""  # still a prefix of the opening
                self._state = "through"
                text, self._buffer = self._buffer, ""
                return text
            self._state = "space"
            text, self._buffer = self._buffer[match.end() :], ""
        if self._state == "space":  # whitespace after the colon is the wrapper's
            text = text.lstrip()
            if not text:
                return ""
            self._state = "body"
        text = self._held + text
        cut = _TAIL.search(text)
        assert cut is not None  # the pattern matches the empty tail
        self._held = text[cut.start() :]
        return text[: cut.start()]

    def end(self) -> str:
        """The output ended: what is left of the document (the wrapper's ``}`` dropped)."""
        if self._state == "opening":
            left, self._buffer = self._buffer, ""
            return left if left.strip() else ""
        held, self._held = self._held, ""
        if "}" in held:
            return ""  # the wrapper's closing brace (and whitespace): not the document's
        return held


class DeltaUnwrapper:
    """Unwraps the deltas of one generation: one :class:`Unwrapper` per document (the message,
    or each tool call), flushed before the delta that ends the generation."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[int | None, Unwrapper] = {}

    def feed(self, delta: Delta) -> list[Delta]:
        """The deltas to pass on for ``delta``."""
        if not delta.text:
            return [delta] if delta.finish_reason is None else [*self.end(), delta]
        unwrapper = self._open.get(delta.tool_call)
        if unwrapper is None:
            unwrapper = self._open[delta.tool_call] = Unwrapper()
        text = unwrapper.feed(delta.text)
        out = []
        if (
            text
            or delta.tool_name is not None
            or delta.refusal
            or delta.usage is not None
            or delta.logprobs
            or delta.response
        ):
            out.append(dataclasses.replace(delta, text=text, finish_reason=None))
        if delta.finish_reason is not None:
            out.extend(self.end())
            out.append(Delta(finish_reason=delta.finish_reason))
        return out

    def end(self) -> list[Delta]:
        """The output ended: the documents' last text."""
        out = []
        for key, unwrapper in self._open.items():
            text = unwrapper.end()
            if text:
                out.append(Delta(text, tool_call=key))
        self._open.clear()
        return out
