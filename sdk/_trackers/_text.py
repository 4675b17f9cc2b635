"""The text tracker: a text constraint's output in, text events out, checked as early as the
constraint allows (sans-I/O).

:class:`TextTracker` is to :class:`~sdk.Choice`, :class:`~sdk.Regex` and :class:`~sdk.Grammar`
what :class:`~sdk.FieldTracker` is to a JSON Schema: feed it the output as it arrives; it
returns a :class:`~sdk.TextDelta` (path ``()``) for every chunk and, at :meth:`finish`, one
:class:`~sdk.FieldEvent` with the whole text. What it checks while the text streams:

- :class:`~sdk.Choice`: the choices the text is still a beginning of; the first character that
  leaves none raises :class:`~sdk.SchemaViolation` (keyword ``"enum"``).
- :class:`~sdk.Regex`: whether some continuation of the text so far can still be a full match
  (:meth:`~sdk._regex._ecma.EcmaRegex.could_fullmatch`, sound: a word boundary or lookaround at
  the end of the text so far is left open) after each chunk; when none can, the first
  character that made it so (found by bisection within the chunk) raises
  :class:`~sdk.SchemaViolation` (keyword ``"pattern"``). Each check reads the whole text so
  far, so a long output under a regex costs O(n) per chunk. Each check has ``regex_timeout``
  seconds (:mod:`sdk._regex._budget`): a prefix check that runs out leaves the verdict to the
  end; the final full match that runs out raises :class:`~sdk.PatternTimeout`.
- :class:`~sdk.Grammar`: nothing; the server's decoding is the guarantee.

At the end the text must be complete: a choice, a full match (an empty output is one when the
pattern matches the empty string). A text that could still have become one is a
:class:`~sdk.TruncatedError` (the output stopped early).
"""

from __future__ import annotations

from typing import Any, NoReturn

from sdk._constants import DEFAULT_REGEX_TIMEOUT
from sdk._constraints import Choice, Grammar, Regex, TextConstraint
from sdk._errors import SchemaViolation, StreamError, StreamUsageError, TruncatedError
from sdk._events import FieldEvent, TextDelta, TrackerEvent
from sdk._regex._budget import Budget, BudgetSpent, enter, leave
from sdk._schema._streaming import common_length, first_bad

__all__ = ["TextTracker"]


class TextTracker:
    """Tracks one text output (the message's: a text constraint is never a tool call's)
    against ``constraint``. ``attempt`` is stamped on its events; ``regex_timeout`` is the
    time budget of each check of a :class:`~sdk.Regex`, in seconds. Errors are sticky: after
    one, every later call raises it again."""

    __slots__ = (
        "_alive",
        "_budget",
        "_constraint",
        "_error",
        "_finished",
        "_forced",
        "_parts",
        "_size",
        "attempt",
    )

    def __init__(
        self,
        constraint: TextConstraint,
        *,
        attempt: int = 1,
        regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
    ) -> None:
        self._budget = Budget(regex_timeout)
        if not isinstance(constraint, (Choice, Regex, Grammar)):
            raise TypeError(f"TextTracker takes a Choice, Regex or Grammar, not {constraint!r}")
        self._constraint = constraint
        self._alive: tuple[str, ...] = constraint.choices if isinstance(constraint, Choice) else ()
        self._parts: list[str] = []
        self._size = 0
        self._forced = 0
        self._error: StreamError | None = None
        self._finished = False
        self.attempt = attempt

    @property
    def text(self) -> str:
        """The text so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def snapshot(self) -> str | None:
        """The text so far (``None`` before any)."""
        return self.text if self._parts else None

    @property
    def open_paths(self) -> list[tuple[str | int, ...]]:
        """``[()]`` until the text is final, then ``[]``."""
        return [] if self._finished else [()]

    @property
    def offset(self) -> int:
        """Characters fed so far."""
        return self._size

    def feed(self, text: str, *, forced: bool = False) -> list[TrackerEvent]:
        """Take the output's next characters; return their :class:`~sdk.TextDelta`. Raises
        :class:`~sdk.SchemaViolation` at the first character the constraint rules out."""
        if self._error is not None:
            raise self._error
        if self._finished:
            raise StreamUsageError("feed() after finish(): this tracker's input has ended")
        if not text:
            return []
        start = self._size
        constraint = self._constraint
        if isinstance(constraint, Choice):
            self._check_choice(text, start)
        self._parts.append(text)
        self._size = start + len(text)
        if isinstance(constraint, Regex):
            token = enter(self._budget)
            try:
                self._check_regex(constraint, start)
            finally:
                leave(token)
        if forced:
            self._forced += len(text)
        return [TextDelta((), text, self.attempt)]

    def finish(self) -> list[TrackerEvent]:
        """End the input: the one :class:`~sdk.FieldEvent` with the whole text. Raises
        :class:`~sdk.TruncatedError` when the text stopped before it was complete."""
        if self._error is not None:
            raise self._error
        if self._finished:
            return []
        text = self.text
        constraint = self._constraint
        complete = True
        if isinstance(constraint, Choice):
            complete = text in constraint.choices
        elif isinstance(constraint, Regex):
            token = enter(self._budget)
            try:
                complete = constraint.compiled.fullmatch(text)
            except BudgetSpent as exc:
                self._fail(exc.at((), text, max(0, self._size - 1)))
            finally:
                leave(token)
        if not complete:
            what = "nothing" if not text else f"{text[-60:]!r}"
            error = TruncatedError(
                f"the output ended before the text was complete ({what} arrived)",
                snapshot=self.snapshot,
                open_paths=[()],
                reason="eof",
            )
            self._error = error
            raise error
        self._finished = True
        return [FieldEvent((), text, max(0, self._size - 1), self.attempt, self._forced)]

    def close(self) -> Any:
        """End the input (if not yet) and return the text: the chosen string for a
        :class:`~sdk.Choice`."""
        self.finish()
        return self.text

    # ------------------------------------------------------------------ checks

    def _check_choice(self, text: str, start: int) -> None:
        alive = tuple(c for c in self._alive if c.startswith(text, start))
        if alive:
            self._alive = alive
            return
        # The first character of the chunk that leaves no choice.
        bad = max(common_length(c, text, start) for c in self._alive)
        prefix = self.text + text[: bad + 1]
        choices = ", ".join(map(repr, self._constraint.choices))  # type: ignore[union-attr]
        self._fail(
            SchemaViolation(
                f"{prefix!r} is not the beginning of any choice ({choices})",
                keyword="enum",
                value=prefix,
                offset=start + bad,
            )
        )

    def _check_regex(self, constraint: Regex, start: int) -> None:
        text = self.text
        compiled = constraint.compiled
        if compiled.could_fullmatch(text):
            return
        # The shortest failing prefix ends in this chunk (the text before it passed).
        low = first_bad(compiled.could_fullmatch, text, start)
        self._parts[:] = [text[:low]] if low else []  # what passed stays the snapshot
        self._size = low
        self._fail(
            SchemaViolation(
                f"{text[: low + 1][-60:]!r} cannot begin a match of {constraint.pattern!r}",
                keyword="pattern",
                value=text[: low + 1],
                offset=low,
            )
        )

    def _fail(self, error: StreamError) -> NoReturn:
        self._error = error
        raise error
