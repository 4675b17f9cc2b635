"""The field tracker: text in, field events out, the schema checked as early as the bytes allow.

A sans-I/O object (no network, no event loop): feed it the output's text as it arrives and it
returns a :class:`~sdk.FieldEvent` for every value that became final, raising
:class:`~sdk.SchemaViolation` at the first character after which the output can no longer match
the schema. :meth:`FieldTracker.close` returns the result (for a pydantic type, after pydantic
validated the whole value). The async stream moves text from a backend into one tracker per
attempt.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Literal, TypeAlias

import partial
from partial import Comma, Key, KeyDelta, KeyStart, StringDelta, ValueDone, ValueStart
from sdk._constants import DEFAULT_REGEX_TIMEOUT
from sdk._errors import (
    OutputSyntaxError,
    Path,
    PatternTimeout,
    RepeatedOutput,
    RunawayWhitespace,
    SchemaViolation,
    StreamError,
    StreamUsageError,
    TruncatedError,
)
from sdk._events import _UNCHANGED, FieldEvent, TextDelta, TrackerEvent, new_field_event
from sdk._regex._budget import Budget, enter, leave
from sdk._schema._checker import SchemaChecker
from sdk._schema._compile import CompiledSchema, Formats, compile_schema
from sdk._schema._states import LATER, NO_INSTANCE, UNDECIDED
from sdk._trackers._runaway import DEFAULT_RUNAWAY, RepeatWatch, RunawayLimits

__all__ = ["Dispatch", "FieldTracker"]

_NOT_YET: Any = object()  # no early result (see FieldTracker._early)

Dispatch: TypeAlias = Literal["validated", "eager"]
"""When a field's event goes out: after pydantic's checks that can judge it (``"validated"``,
the default), or as soon as it is final (``"eager"``)."""


class FieldTracker:
    """Tracks one document (one attempt's output) against a schema.

    ``schema`` is a pydantic ``BaseModel`` subclass, any type pydantic can adapt, a
    ``pydantic.TypeAdapter``, a JSON Schema (Draft 2020-12) dict, or a schema already compiled
    by ``sdk._schema.compile_schema`` (what a stream hands each attempt's tracker); raises
    :class:`~sdk.SchemaError` if it cannot be used.
    ``lenient`` lets the parser skip prose and a ```` ```json ```` fence around the document;
    ``max_depth``/``max_bytes`` bound it (passing them is an :class:`~sdk.OutputSyntaxError`).
    ``attempt``, ``tool_call``, ``tool_name`` and ``tool_call_id`` (a tool call's index, the
    tool it names, its id) are stamped on every event. With ``deltas=True``,
    :meth:`feed` also returns a :class:`~sdk.TextDelta` each time a string value grows.
    ``formats`` says what ``format`` means in a JSON Schema dict: ``"annotate"`` (the default,
    as Draft 2020-12 says: not checked) or ``"assert"`` (checked by fieldstream's own checkers,
    some formats while the string streams; ``docs/patterns.md`` says which); ``None`` keeps
    what a compiled schema was compiled with. A pydantic type's formats are always pydantic's
    to judge. ``regex_timeout`` is the time budget of each pattern check, in seconds
    (``pattern``, ``patternProperties``, a pydantic ``Field(pattern=...)`` checked early): a
    check of a final value that runs out raises :class:`~sdk.PatternTimeout` (path and
    pattern); one of a string's prefix that runs out leaves the verdict to the final check.
    ``runaway`` (:class:`~sdk.RunawayLimits`, ``None``: no check) stops output that follows
    the schema but runs away: whitespace between tokens past any layout is a
    :class:`~sdk.RunawayWhitespace`, a string's or an array's tail that repeats one unit a
    :class:`~sdk.RepeatedOutput`, both at the chunk that passed the limit.

    What is checked when: every keyword at the first character that proves it broken (a string
    against ``enum``/``const``/``maxLength``/``pattern`` while it streams, a key against
    ``additionalProperties``/``propertyNames`` while it streams, ``maxItems``/``maxProperties``
    at the comma that promises one member too many, ``uniqueItems`` when the repeated item is
    final, the rest when their value is final). For a pydantic type, each nested model (an
    object or list item that is a model, not the root) is validated by pydantic — field and
    model validators included — when its object closes, so a validator's error raises there;
    the root model's own validators (cross-field ones included) run in :meth:`close`.

    ``dispatch`` says when a pydantic type's field events are returned. ``"validated"`` (the
    default): a field's own validators (``field_validator``, ``Annotated`` validators, and the
    checks the JSON Schema cannot make: dates, decimals, URLs, UUIDs, transformed strings) run
    when the field is final, before its event (a refusal is a :class:`~sdk.SchemaViolation` at
    the field; :attr:`FieldEvent.validated` is what they returned); the events inside an
    object whose model has a model validator are held until the object closed and passed, then
    returned in document order — for the root model, by :meth:`finish`, after the whole value
    passed pydantic. What the type's JSON Schema cannot say (a pattern as pydantic-core reads
    it, strict ints, bytes and set bounds, a float's ``multiple_of``; validators in a root that
    is not a model, a ``RootModel``, a list item) is judged by pydantic when the value is final,
    before its event; a root judged that way sends its event from :meth:`finish`, after the
    final validation. ``"eager"``: each event as soon as its value is final.

    Duplicate keys are refused: the second occurrence of a key in one object is a
    :class:`~sdk.SchemaViolation` (keyword ``"duplicateKey"``) at its closing quote, so the
    value checked early is always the value that ends up in the result.

    Errors are sticky: after one, every later :meth:`feed` or :meth:`close` raises it again.
    """

    __slots__ = (
        "_budget",
        "_checker",
        "_closed",
        "_compiled",
        "_consumed",
        "_early",
        "_error",
        "_finished",
        "_forced",
        "_holds",
        "_parser",
        "_result",
        "_root_held",
        "_root_start",
        "_watch",
        "attempt",
        "deltas",
        "dispatch",
        "tool_call",
        "tool_call_id",
        "tool_name",
    )

    def __init__(
        self,
        schema: Any,
        *,
        lenient: bool = False,
        attempt: int = 1,
        max_depth: int = 512,
        max_bytes: int | None = None,
        deltas: bool = False,
        tool_call: int | None = None,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        formats: Formats | None = None,
        dispatch: Dispatch = "validated",
        regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
        runaway: RunawayLimits | None = DEFAULT_RUNAWAY,
    ) -> None:
        self._budget = Budget(regex_timeout)
        if dispatch not in ("validated", "eager"):
            raise ValueError(f"dispatch must be 'validated' or 'eager', not {dispatch!r}")
        if isinstance(schema, CompiledSchema):
            if formats is not None and formats != schema.formats:
                raise ValueError(
                    f"this schema was compiled with formats={schema.formats!r}; compile it "
                    f"with compile_schema(..., formats={formats!r}) instead"
                )
            self._compiled = schema
        else:
            self._compiled = compile_schema(schema, formats=formats or "annotate")
        self._parser = partial.Parser(
            lenient=lenient,
            max_depth=max_depth,
            max_bytes=max_bytes,
            detail=True,
            max_gap=None if runaway is None else runaway.whitespace,
            gap_per_level=0 if runaway is None else runaway.whitespace_per_level,
        )
        self._watch = (
            None
            if runaway is None or (runaway.repeats is None and runaway.near_repeats is None)
            else RepeatWatch(runaway)
        )
        self._checker = SchemaChecker(
            self._compiled.root,
            early_models=self._compiled.models,
            field_checks=dispatch == "validated" and self._compiled.field_checks,
        )
        self.dispatch: Dispatch = dispatch
        """``"validated"``: field validators run before a field's event, and a model validator
        holds its fields' events until it passed; ``"eager"``: every event as soon as the
        value is final and passed the JSON Schema checks (pydantic judges later)."""
        # The values whose members' events wait for their validation, innermost last: (path,
        # the events held). The root model's wait for the final validation (_root_held).
        self._holds: list[tuple[Path, list[TrackerEvent]]] = []
        self._root_held: list[TrackerEvent] | None = None
        self.attempt = attempt
        """The attempt number stamped on events (1-based)."""
        self.deltas = deltas
        """Whether :meth:`feed` also returns :class:`~sdk.TextDelta` events."""
        self.tool_call = tool_call
        """The tool-call index stamped on events (``None`` for message content)."""
        self.tool_name = tool_name
        """The name of the tool called, stamped on events."""
        self.tool_call_id = tool_call_id
        """The tool call's id (when the server sent one), stamped on events."""
        self._consumed = 0
        self._forced = _ForcedRuns()
        self._error: StreamError | None = None
        self._finished = False
        self._closed = False
        self._result: Any = None
        self._early: Any = _NOT_YET  # a tool call's arguments, validated when they closed
        self._root_start: int | None = None

    # ------------------------------------------------------------------ what it knows

    @property
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema the output must follow (a fresh copy: what a backend sends)."""
        return self._compiled.schema_dict()

    @property
    def formats(self) -> Formats:
        """``"annotate"`` or ``"assert"``: whether ``format`` is checked (dict schemas)."""
        return self._compiled.formats

    @property
    def schema_name(self) -> str:
        """A name for the schema: the model's class name, the dict's ``title``, or
        ``"response"`` (only ``[a-zA-Z0-9_-]``, at most 64 characters)."""
        return self._compiled.name

    @property
    def snapshot(self) -> Any:
        """The partial value so far (``None`` before anything can be shown). Open strings show
        what arrived; open numbers, literals and keys without a value are absent. Read-only."""
        snap = self._parser.snapshot()
        return None if snap is partial.MISSING else snap

    @property
    def open_paths(self) -> list[Path]:
        """Paths of the values still open, outermost first (a key whose value has not begun
        counts as open)."""
        return self._checker.open_paths

    @property
    def offset(self) -> int:
        """Characters fed so far."""
        return self._consumed

    @property
    def done(self) -> bool:
        """True once the root value is final (and passed its checks)."""
        return self._parser.done and self._error is None

    # ------------------------------------------------------------------ input

    def feed(self, text: str, *, forced: bool = False) -> list[TrackerEvent]:
        """Take the output's next characters; return the events they made certain, in order.

        ``forced=True`` says the grammar alone chose these characters (a local engine's
        jump-forward); events count such characters in :attr:`FieldEvent.forced`.

        Raises :class:`~sdk.SchemaViolation` at the first event after which no continuation can
        match the schema (events of the same chunk before it are not returned), and
        :class:`~sdk.OutputSyntaxError` when the text is not JSON.
        """
        if self._error is not None:
            raise self._error
        if self._finished:
            raise StreamUsageError("feed() after close(): this tracker's input has ended")
        start = self._consumed
        end = self._consumed = start + len(text)
        if forced and text:
            self._forced.add(start, end)
        try:
            events = self._parser.feed(text)
        except partial.JSONRunawayError as exc:
            self._handle(exc.events)
            raise self._fail(
                RunawayWhitespace(
                    f"{exc.length} whitespace characters in a row after the finished document "
                    f"(at most {exc.value}: RunawayLimits.whitespace)"
                    if exc.after_root
                    else f"{exc.length} whitespace characters in a row between two JSON tokens, "
                    f"more than any layout needs at depth {exc.depth} (at most {exc.value}: "
                    "RunawayLimits.whitespace)",
                    path=exc.path,
                    offset=exc.offset,
                    length=exc.length,
                    bound=exc.value,
                ),
                exc,
            ) from exc
        except partial.JSONError as exc:
            # What came before the bad character may already break the schema: that is the
            # earlier, truer error.
            self._handle(getattr(exc, "events", []))
            raise self._fail(
                OutputSyntaxError(f"the output is not valid JSON: {exc}", offset=exc.offset), exc
            ) from exc
        if not events:  # most tokens only grow a string or a number
            return []
        return self._handle(events)

    def finish(self) -> list[TrackerEvent]:
        """End the input and return its last events (a root number is final only at the end).

        :meth:`close` calls it when needed; call it yourself to receive those events. Raises
        :class:`~sdk.TruncatedError` if the document is not complete. When the root model has a
        model validator (``dispatch="validated"``), the whole value is validated here first (the
        events held until now come after it passed; :class:`~sdk.ValidationFailed` if not).
        """
        if self._error is not None:
            raise self._error
        if self._finished:
            return []
        try:
            events = self._parser.finish()
        except partial.IncompleteJSONError as exc:
            what = "nothing" if self._parser.snapshot() is partial.MISSING else "part"
            raise self._fail(
                TruncatedError(
                    f"the output ended before the document did ({what} of it arrived; "
                    f"{exc.expected} was expected next)",
                    snapshot=self.snapshot,
                    open_paths=self.open_paths,
                    reason="eof",
                ),
                exc,
            ) from exc
        except partial.JSONError as exc:  # the input ended inside a UTF-8 sequence
            raise self._fail(
                OutputSyntaxError(f"the output is not valid JSON: {exc}", offset=exc.offset), exc
            ) from exc
        out = self._handle(events)
        self._finished = True
        held = self._root_held
        if held is not None:  # the root model has a model validator: it judges first
            self._validate()
            self._root_held = None
            out.extend(held)
        return out

    def close(self) -> Any:
        """End the input and return the result. A JSON Schema dict was checked in full as the
        output streamed; a pydantic type is now validated as a whole by pydantic (the root
        model's field and model validators, cross-field rules), in JSON mode.

        Returns the model instance, the validated value of a type, or the plain value for a
        dict schema; calling it again returns the same object. Raises
        :class:`~sdk.TruncatedError` (with the snapshot and the open paths) when the output
        ended early, :class:`~sdk.ValidationFailed` when pydantic rejects the whole value, or
        the error the tracker already failed with.
        """
        if self._closed:
            return self._result
        self.finish()
        if not self._closed:
            self._validate()
        return self._result

    def _validate(self) -> None:
        """The final validation (the result, or the sticky error)."""
        value = self._parser.close()
        try:
            if self._early is not _NOT_YET:  # validated already, when the value closed
                self._result = self._early
            else:
                self._result = self._compiled.finish(
                    value, offset=self._consumed, start=self._root_start
                )
        except StreamError as exc:
            self._error = exc
            raise
        self._closed = True

    # ------------------------------------------------------------------ internals

    def _handle(self, events: list[partial.Event]) -> list[TrackerEvent]:
        out: list[TrackerEvent] = []
        checker = self._checker
        attempt = self.attempt
        forced = self._forced if self._forced.total else None
        watch = self._watch
        token = enter(self._budget)
        try:
            # The kinds tested in order of how often they come in a field-dense document
            # (strings grow, values end and start, commas, keys).
            for ev in events:
                if type(ev) is StringDelta:
                    checker.string_delta(ev.path, ev.offset, ev.text)
                    if watch is not None:
                        watch.grow(ev.path, ev.offset, ev.text)
                    if self.deltas:
                        out.append(
                            TextDelta(
                                ev.path,
                                ev.text,
                                attempt,
                                self.tool_call,
                                self.tool_name,
                                self.tool_call_id,
                            )
                        )
                elif type(ev) is ValueDone:
                    start, kind, instance, validated = checker.value_done(
                        ev.path, ev.offset, ev.value
                    )
                    if watch is not None and ev.path:
                        if type(ev.path[-1]) is int:
                            watch.item(ev.path, ev.offset, ev.value)
                        if kind == "array":
                            watch.closed(ev.path)
                    if not ev.path and self.tool_call is not None:
                        # A tool call's arguments are its result: validated as a whole now,
                        # so the call's root event carries them (there is no result() per
                        # call to read them from; results() gives the list at the end).
                        self._early = self._compiled.finish(
                            ev.value, offset=ev.offset, start=self._root_start
                        )
                        instance = self._early
                    n = 0
                    if forced is not None:
                        # A number ends before the character that finished it.
                        stop = ev.offset if kind == "number" else ev.offset + 1
                        n = forced.count(start, stop)
                    event = new_field_event(
                        ev.path,
                        ev.value,
                        ev.offset,
                        attempt,
                        n,
                        self.tool_call,
                        self.tool_name,
                        self.tool_call_id,
                        instance,
                        _UNCHANGED
                        if validated is NO_INSTANCE or validated is UNDECIDED or validated is LATER
                        else validated,
                    )
                    holds = self._holds
                    if validated is UNDECIDED:
                        self._defer(ev.path, event)
                    elif validated is LATER:
                        self._defer_to_end(ev.path, event)
                    elif not holds:
                        out.append(event)
                    elif holds[-1][0] == ev.path:  # a held value passed: release its members
                        path, held = holds.pop()
                        held.append(event)
                        if not path:  # the root model: at the end, once pydantic passed it
                            self._root_held = held
                        else:
                            (holds[-1][1] if holds else out).extend(held)
                    else:
                        holds[-1][1].append(event)
                elif type(ev) is ValueStart:
                    if not ev.path:
                        self._root_start = ev.offset
                    if checker.value_start(ev.path, ev.offset, ev.kind.value):
                        self._holds.append((ev.path, []))
                    if watch is not None and ev.kind is _ARRAY:
                        watch.array(ev.path, ev.offset)
                elif type(ev) is Comma:
                    checker.comma(ev.offset)
                elif type(ev) is KeyStart:
                    checker.key_start(ev.offset)
                elif type(ev) is Key:
                    checker.key(ev.path, ev.offset)
                elif type(ev) is KeyDelta:
                    checker.key_delta(ev.offset, ev.text)
        except SchemaViolation as exc:
            if exc.value is None and exc.keyword in _STREAMING_KEYWORDS:
                exc.value = _lookup(self._parser.snapshot(), exc.path)  # the prefix received
            self._error = exc
            raise
        except (PatternTimeout, RepeatedOutput) as exc:
            self._error = exc
            raise
        finally:
            leave(token)
        return out

    def _defer(self, path: Path, event: FieldEvent) -> None:
        """The field at ``path`` could not be judged alone: its event (with its members', if
        they were held for it) and those of the fields after it wait for its object's
        validation, in document order."""
        holds = self._holds
        if holds and holds[-1][0] == path:
            held = holds.pop()[1]
            held.append(event)
        else:
            held = [event]
        parent = path[:-1]
        if holds and holds[-1][0] == parent:
            holds[-1][1].extend(held)
        else:
            holds.append((parent, held))

    def _defer_to_end(self, path: Path, event: FieldEvent) -> None:
        """pydantic could not judge the value at ``path`` alone (outside a model's fields):
        its event, and every later one, wait for the final validation (a hold on the root,
        under every other)."""
        holds = self._holds
        if not holds or holds[0][0] != ():
            holds.insert(0, ((), []))
        if len(holds) > 1 and holds[-1][0] == path:
            held = holds.pop()[1]
            held.append(event)
            holds[-1][1].extend(held)
        else:
            holds[-1][1].append(event)

    def _fail(self, err: StreamError, cause: BaseException) -> StreamError:
        err.__cause__ = cause
        self._error = err
        return err


_ARRAY = partial.Kind.ARRAY

_STREAMING_KEYWORDS = frozenset({"enum", "const", "maxLength", "pattern", "format"})
"""Keywords a string can break while it streams: the violation then carries its prefix."""


def _lookup(value: Any, path: Path) -> Any:
    """The value at ``path`` inside a snapshot, or ``None`` where it is not there."""
    for step in path:
        if isinstance(value, dict) and isinstance(step, str):
            value = value.get(step)
        elif isinstance(value, list) and isinstance(step, int) and step < len(value):
            value = value[step]
        else:
            return None
    return value


class _ForcedRuns:
    """Which character offsets were fed with ``forced=True``: sorted, disjoint runs, with the
    forced count before each, so a span's count costs O(log runs)."""

    __slots__ = ("before", "ends", "starts", "total")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.before: list[int] = []  # forced characters before run i
        self.total = 0

    def add(self, start: int, end: int) -> None:
        if self.ends and self.ends[-1] == start:
            self.ends[-1] = end  # extend the last run
        else:
            self.starts.append(start)
            self.ends.append(end)
            self.before.append(self.total)
        self.total += end - start

    def _upto(self, x: int) -> int:
        i = bisect_right(self.starts, x) - 1
        if i < 0:
            return 0
        return self.before[i] + min(x, self.ends[i]) - self.starts[i]

    def count(self, start: int, stop: int) -> int:
        """Forced characters in ``[start, stop)``."""
        return self._upto(stop) - self._upto(start)
