"""What the command reports as a run goes, and the JSON Lines form of it (no terminal).

A :class:`Report` is told each thing that happens: a status line (the model loads), a field
that became final, an attempt that failed, a periodic tick with the partial value, then the
result or the error. :class:`JsonLinesReport` writes one JSON object per line to stdout, each
with an ``"event"`` key; the live terminal view is :class:`sdk._cli._live.LiveView`.

The JSON Lines a script can rely on (``t`` is seconds since the request was sent)::

    {"event": "field", "path": ["items", 0], "pointer": "/items/0", "value": ..., "attempt": 1,
     "t": 0.412}
    {"event": "attempt_failed", "attempt": 1, "retrying": true, "error": {...}, "t": 0.9}
    {"event": "backtracked", "attempt": 1, "path": ["hobbies"], "pointer": "/hobbies",
     "text": "\"reading\"", "offset": 118, "error": {...}, "t": 0.9}
    {"event": "result", "value": ..., "attempts": 2, "usage": {...}, "tokens": 57,
     "tokens_per_s": 41.3, "t": 1.42}
    {"event": "error", "exit_code": 1, "error": {...}, "t": 1.42}

``error`` objects hold ``type`` (the exception class) and ``message``, plus what the error
knows: ``pointer``, ``keyword``, ``value``, ``offset`` (schema violations), ``reason``,
``open_paths``, ``snapshot`` (truncation), ``status`` (HTTP), ``attempts`` (each attempt's
error, when retries ran out). Status lines (model loading) go to stderr as plain text.
"""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, TextIO

from pydantic_core import to_jsonable_python

from sdk._backend import Usage
from sdk._errors import (
    RetriesExhausted,
    SchemaViolation,
    StreamError,
    TransportError,
    TruncatedError,
    pointer,
)
from sdk._events import AttemptFailed, Backtracked, FieldEvent

__all__ = ["JsonLinesReport", "Report", "RunSummary", "error_info", "jsonable"]


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: pydantic models, dataclasses, dates... converted."""
    return to_jsonable_python(value, fallback=repr)


def error_info(error: BaseException) -> dict[str, Any]:
    """What a script may want to know about ``error``, as JSON data."""
    info: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, StreamError) and error.tool_call is not None:
        info.update(
            tool_call=error.tool_call, tool_name=error.tool_name, tool_call_id=error.tool_call_id
        )
    if isinstance(error, SchemaViolation):
        info.update(
            pointer=error.pointer,
            keyword=error.keyword,
            value=jsonable(error.value),
            offset=error.offset,
        )
    if isinstance(error, TruncatedError):
        info.update(
            reason=error.reason,
            open_paths=[pointer(p) for p in error.open_paths],
            snapshot=jsonable(error.snapshot),
        )
    if isinstance(error, TransportError):
        info.update(status=error.status, retryable=error.retryable)
    if isinstance(error, RetriesExhausted):
        info["attempts"] = [error_info(e) for e in error.errors]
    return info


class RunSummary:
    """The numbers a report shows at the end (and the live view as it goes)."""

    __slots__ = ("attempts", "rate", "tokens", "usage")

    def __init__(self, *, attempts: int, usage: Usage, tokens: int, rate: float | None) -> None:
        self.attempts = attempts
        """Attempts made, the successful one included."""
        self.usage = usage
        """Token usage the backend reported, summed over the attempts."""
        self.tokens = tokens
        """Completion tokens counted (the reported usage when there is one)."""
        self.rate = rate
        """Completion tokens per second of generation, when known."""


class Report(Protocol):
    """Receives what happens during one run of the command, in order. ``start`` and
    ``stop`` bracket the stream; ``status`` lines come before it, ``error`` may come without
    it (a schema that cannot be loaded)."""

    def start(self) -> None:
        """The stream begins."""

    def stop(self) -> None:
        """The stream is over (after ``result`` or ``error``)."""

    def status(self, message: str) -> None:
        """A line about progress outside the stream (loading a model)."""

    def busy(self, message: str) -> AbstractContextManager[None]:
        """Says ``message`` while the block runs (a spinner on a terminal)."""

    def field(self, event: FieldEvent, t: float) -> None:
        """A field became final at ``t`` seconds."""

    def attempt_failed(self, event: AttemptFailed, t: float) -> None:
        """An attempt failed with ``event.error``; ``event.retrying`` when another follows."""

    def backtracked(self, event: Backtracked, t: float) -> None:
        """The value ``event.text`` was rejected and is being rewritten in place (``--backtrack``):
        comes right after the ``attempt_failed`` of ``event.attempt``."""

    def tick(self, snapshot: Any, attempt: int, t: float) -> None:
        """Periodically while the output streams: the partial value now."""

    def result(self, value: Any, summary: RunSummary, t: float) -> None:
        """The run succeeded with ``value`` (the validated result)."""

    def error(self, error: BaseException, code: int, summary: RunSummary, t: float) -> None:
        """The run failed with ``error``; the command exits with ``code``."""


class JsonLinesReport:
    """Writes each event as one line of JSON to ``out``, flushed at once (see the module
    docstring for the lines); status lines go to ``err``."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self._out = out if out is not None else sys.stdout
        self._err = err if err is not None else sys.stderr
        encoding = (getattr(self._out, "encoding", None) or "").lower().replace("-", "")
        # Non-ASCII text as it is where the stream can carry it, \u escapes elsewhere.
        self._ascii = encoding not in ("utf8", "utf_8")

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=self._ascii, default=repr)
        self._out.write(line + "\n")
        self._out.flush()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def status(self, message: str) -> None:
        self._err.write(f"fieldstream: {message}\n")
        self._err.flush()

    def busy(self, message: str) -> AbstractContextManager[None]:
        self.status(message)
        return nullcontext()

    def field(self, event: FieldEvent, t: float) -> None:
        self._write(
            {
                "event": "field",
                "path": list(event.path),
                "pointer": event.pointer,
                "value": event.value,
                "attempt": event.attempt,
                "t": round(t, 4),
            }
        )

    def attempt_failed(self, event: AttemptFailed, t: float) -> None:
        self._write(
            {
                "event": "attempt_failed",
                "attempt": event.attempt,
                "retrying": event.retrying,
                "error": error_info(event.error),
                "t": round(t, 4),
            }
        )

    def backtracked(self, event: Backtracked, t: float) -> None:
        self._write(
            {
                "event": "backtracked",
                "attempt": event.attempt,
                "path": list(event.path),
                "pointer": event.pointer,
                "text": event.text,
                "offset": event.offset,
                "error": error_info(event.error),
                "t": round(t, 4),
            }
        )

    def tick(self, snapshot: Any, attempt: int, t: float) -> None:
        pass  # a line per tick would be noise; fields carry the progress

    def result(self, value: Any, summary: RunSummary, t: float) -> None:
        self._write(
            {
                "event": "result",
                "value": jsonable(value),
                "attempts": summary.attempts,
                "usage": _usage(summary.usage),
                "tokens": summary.tokens,
                "tokens_per_s": None if summary.rate is None else round(summary.rate, 2),
                "t": round(t, 4),
            }
        )

    def error(self, error: BaseException, code: int, summary: RunSummary, t: float) -> None:
        self._write(
            {
                "event": "error",
                "exit_code": code,
                "error": error_info(error),
                "attempts": summary.attempts,
                "t": round(t, 4),
            }
        )
        self._err.write(f"fieldstream: error: {error}\n")
        self._err.flush()


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "forced_tokens": usage.forced_tokens,
    }
