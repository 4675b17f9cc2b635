"""What a stream yields: small immutable events, one class per thing that happens.

Field events come from the tracker: :class:`FieldEvent` when a value is final, and, when asked
for (``deltas=True``), :class:`TextDelta` as a string grows. Each has a ``path`` (a tuple of
``str`` keys and ``int`` indices; ``()`` is the document root; ``pointer`` is the same as an RFC
6901 JSON Pointer) and the ``attempt`` it belongs to (1-based; each attempt has its own
tracker). Events of a tool call's arguments say which call (``tool_call``, ``tool_name``,
``tool_call_id``); events inside a :class:`~sdk.StructuralTag` segment say which segment
(``segment``, ``tag``). A text constraint's output (:class:`~sdk.Choice`, :class:`~sdk.Regex`,
:class:`~sdk.Grammar`), and the free text between tagged segments, stream as
:class:`TextDelta` events at path ``()``.

Progress events come from the stream itself, when asked for (``progress=True``): an attempt
started (:class:`AttemptStarted`), failed (:class:`AttemptFailed`, with whether it will be
retried), a value was taken back in place and is being rewritten (:class:`Backtracked`, under
``Retry(backtrack=True)``), the backend reported token usage (:class:`UsageReported`), and the
stream ended (:class:`StreamEnded`). A reasoning model's thoughts stream as
:class:`ReasoningDelta` when asked for (``reasoning=True``). A plain ``async for event in
stream`` yields field events only: :class:`FieldEvent`, and :class:`TextDelta` under a text
constraint (or ``deltas=True``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from sdk._backend import Usage
from sdk._errors import Path, SchemaViolation, pointer

__all__ = [
    "AttemptFailed",
    "AttemptStarted",
    "Backtracked",
    "Event",
    "FieldEvent",
    "ReasoningDelta",
    "StreamEnded",
    "StreamEvent",
    "TextDelta",
    "TrackerEvent",
    "UsageReported",
]


_UNCHANGED: Any = object()
"""``FieldEvent._validated`` when the field's validators did not change the value."""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """Base of every event a stream yields."""


@dataclass(frozen=True, slots=True)
class _PathEvent(StreamEvent):
    """An event about one place in the document."""

    path: Path
    """Where in the document: keys and indices from the root (``()`` is the root)."""

    @property
    def pointer(self) -> str:
        """The path as a JSON Pointer: ``("items", 0, "a/b")`` -> ``"/items/0/a~1b"``."""
        return pointer(self.path)


@dataclass(frozen=True, slots=True)
class FieldEvent(_PathEvent):
    """A value is final and passed every check that can be made on it alone.

    Fires exactly once per value of the document, in document order, children before their
    container (so a container's event comes after all of its members' events). For a pydantic
    schema (``dispatch="validated"``, the default), the field's own validators ran before it,
    and a model's fields wait for its model validator, if it has one (docs/events.md).
    ``value`` is the plain JSON value (``dict``/``list``/``str``/``int``/``float``/``bool``/
    ``None``); containers are shared with the parser's result, so treat them as read-only.
    """

    type: ClassVar[Literal["field"]] = "field"
    """``"field"``: what this event is (narrows the :data:`Event` union)."""

    value: Any
    """The value, as ``json.loads`` would give it."""
    offset: int
    """Character offset in the attempt's output at which the value became final (its last
    character; for a number, the character after it, or the end of the output)."""
    attempt: int = 1
    """The attempt (1-based) whose output this value came from."""
    forced: int = 0
    """How many characters of the value's text the grammar forced (fed with ``forced=True``);
    0 when none were, or when the backend does not say."""
    tool_call: int | None = None
    """Index of the parallel tool call whose arguments hold this value; ``None`` for the
    message content."""
    tool_name: str | None = None
    """The name of the tool that call calls (when the source named it)."""
    tool_call_id: str | None = None
    """The id the server gave that call (when it sent one)."""
    segment: int | None = None
    """In a :class:`~sdk.StructuralTag` output: the index (0-based, in output order) of the
    tagged segment whose JSON holds this value; ``None`` elsewhere."""
    tag: str | None = None
    """In a :class:`~sdk.StructuralTag` output: the name of that segment's :class:`~sdk.Tag`."""
    instance: Any = None
    """The value as its pydantic model's validated instance, when the schema here is a nested
    model (an item of ``list[Item]``, a field typed ``Address``...): validated the moment its
    object closed, validators included. ``None`` otherwise; the root's model instance is
    :meth:`~sdk.Stream.result`."""
    _validated: Any = field(default=_UNCHANGED, repr=False)
    # What the field's pydantic validators returned, when it differs from ``value``.

    @property
    def validated(self) -> Any:
        """The value as the field's own pydantic validators returned it (a
        ``field_validator``, an ``Annotated[..., AfterValidator(...)]``...: they ran before
        this event), when they changed it; else the same as :attr:`value`."""
        validated = self._validated
        return self.value if validated is _UNCHANGED else validated

    @property
    def changed(self) -> bool:
        """Whether the field's validators returned something else than :attr:`value` (then
        :attr:`validated` is what they returned)."""
        return self._validated is not _UNCHANGED

    @property
    def part(self) -> tuple[int | None, str | None, int | None, str | None]:
        """Which part of the output the value belongs to: ``(tool_call, tool_name, segment,
        tag)``, all ``None`` for the message's document. With the path and the value, the
        identity of a field for exactly-once dispatch (the call id is left out: a retry's
        calls get new ids)."""
        return (self.tool_call, self.tool_name, self.segment, self.tag)


@dataclass(frozen=True, slots=True)
class TextDelta(_PathEvent):
    """A string value grew (only when the tracker or stream was asked for ``deltas``), or text
    arrived that is output in its own right: a text constraint's output, the free text around
    tagged segments (always; their ``path`` is ``()``).

    Concatenating a string's deltas gives its final value; escapes are already decoded. The
    string's :class:`FieldEvent` still comes when it closes.
    """

    type: ClassVar[Literal["text_delta"]] = "text_delta"
    """``"text_delta"``: what this event is (narrows the :data:`Event` union)."""

    text: str
    """The new characters (never empty)."""
    attempt: int = 1
    """The attempt (1-based) whose output this text came from."""
    tool_call: int | None = None
    """Index of the parallel tool call this text belongs to; ``None`` for the message content."""
    tool_name: str | None = None
    """The name of the tool that call calls (when the source named it)."""
    tool_call_id: str | None = None
    """The id the server gave that call (when it sent one)."""
    segment: int | None = None
    """In a :class:`~sdk.StructuralTag` output: the tagged segment this text belongs to
    (``None`` for the free text between segments)."""
    tag: str | None = None
    """In a :class:`~sdk.StructuralTag` output: the name of that segment's :class:`~sdk.Tag`."""


TrackerEvent = FieldEvent | TextDelta
"""What :meth:`sdk.FieldTracker.feed` returns."""


@dataclass(frozen=True, slots=True)
class ReasoningDelta(StreamEvent):
    """The model's reasoning grew (``reasoning=True``): a reasoning model's
    ``reasoning_content``, or, in ``lenient`` mode, a ``<think>`` block before the document.
    Never parsed; concatenating an attempt's pieces gives its reasoning."""

    type: ClassVar[Literal["reasoning_delta"]] = "reasoning_delta"
    """``"reasoning_delta"``: what this event is (narrows the :data:`Event` union)."""

    text: str
    """The new characters (never empty)."""
    attempt: int = 1
    """The attempt (1-based) whose output this reasoning came from."""


@dataclass(frozen=True, slots=True)
class AttemptStarted(StreamEvent):
    """An attempt is about to send its request (``progress=True``)."""

    type: ClassVar[Literal["attempt_started"]] = "attempt_started"
    """``"attempt_started"``: what this event is (narrows the :data:`Event` union)."""

    attempt: int
    """Its number (1-based)."""


@dataclass(frozen=True, slots=True)
class AttemptFailed(StreamEvent):
    """An attempt failed (``progress=True``); its generation was stopped."""

    type: ClassVar[Literal["attempt_failed"]] = "attempt_failed"
    """``"attempt_failed"``: what this event is (narrows the :data:`Event` union)."""

    attempt: int
    """Its number (1-based)."""
    error: BaseException
    """Why: a :class:`~sdk.StreamError` (violation, syntax, truncation, transport...)."""
    retrying: bool
    """Whether another attempt follows. When false, the stream raises its error next."""
    usage: Usage
    """The attempt's token usage (``usage.estimated`` when the backend never reported it)."""


@dataclass(frozen=True, slots=True)
class Backtracked(_PathEvent):
    """A value broke the schema and is being rewritten in place (``progress=True``, under
    ``Retry(backtrack=True)`` on a generation that can go back on its output: the local
    engine's).

    The generation was rewound to where the value began (``offset``), what it wrote there is
    ruled out, and it goes on from there as the next attempt (``attempt + 1``): the text
    before ``offset`` is kept, and its fields are not dispatched again. Comes right after the
    :class:`AttemptFailed` (``retrying=True``) of the attempt that wrote the value and before
    the :class:`AttemptStarted` of the one that rewrites it. Under the default
    ``dispatch="validated"`` the rejected value never had a :class:`FieldEvent`, nor did any
    value in it or container holding it (with ``"eager"``, values a pydantic validator refused
    after they went out had theirs); the rewritten value has its own when it passes. ``path``
    is the violation's (for ``uniqueItems``, the array's).
    """

    type: ClassVar[Literal["backtracked"]] = "backtracked"
    """``"backtracked"``: what this event is (narrows the :data:`Event` union)."""

    text: str
    """The rejected value as the model wrote it, from its first character to the one at which
    the violation became certain (``'"Fantasy"'``; a string cut off where it broke a
    ``maxLength`` or ``pattern``: ``'"Fantasy Adventu'``)."""
    error: SchemaViolation
    """Why it was rejected: the violation (``keyword``, ``message``, ``value``, ``start``,
    ``offset``)."""
    offset: int
    """The character offset in the output that the generation was rewound to: the output
    is now its first ``offset`` characters (the last token boundary at or before
    ``error.start``), and the rewritten text goes on from there."""
    attempt: int
    """The attempt (1-based) that wrote the rejected value; the rewrite is ``attempt + 1``."""


@dataclass(frozen=True, slots=True)
class UsageReported(StreamEvent):
    """The backend reported the token usage of the attempt in progress (``progress=True``)."""

    type: ClassVar[Literal["usage_reported"]] = "usage_reported"
    """``"usage_reported"``: what this event is (narrows the :data:`Event` union)."""

    attempt: int
    """The attempt (1-based)."""
    usage: Usage
    """The attempt's usage so far, as the backend reported it."""


@dataclass(frozen=True, slots=True)
class StreamEnded(StreamEvent):
    """The stream succeeded: the last event (``progress=True``). ``result()`` is ready."""

    type: ClassVar[Literal["stream_ended"]] = "stream_ended"
    """``"stream_ended"``: what this event is (narrows the :data:`Event` union)."""

    attempts: int
    """How many attempts it took."""
    usage: Usage
    """Token usage summed over every attempt."""


Event: TypeAlias = (
    FieldEvent
    | TextDelta
    | ReasoningDelta
    | AttemptStarted
    | AttemptFailed
    | Backtracked
    | UsageReported
    | StreamEnded
)
"""What iterating a stream yields: one of the event classes, told apart by their ``type``
(``if ev.type == "field":`` or ``match ev: case FieldEvent():`` narrows it for mypy and
pyright)."""


# A fast constructor for the tracker's hot path (a field-dense document makes a FieldEvent every
# few tokens): a frozen dataclass's generated __init__ goes through object.__setattr__ once per
# field (twelve here); this fills the same slots through their descriptors, as partial's event
# constructors do. The object is indistinguishable from one FieldEvent's own __init__ builds
# (tests/sdk/trackers/test_field_events_fast.py checks equality, repr and every attribute).
_new = object.__new__
_set_path = _PathEvent.__dict__["path"].__set__
_field_slots = FieldEvent.__dict__
_set_value = _field_slots["value"].__set__
_set_offset = _field_slots["offset"].__set__
_set_attempt = _field_slots["attempt"].__set__
_set_forced = _field_slots["forced"].__set__
_set_tool_call = _field_slots["tool_call"].__set__
_set_tool_name = _field_slots["tool_name"].__set__
_set_tool_call_id = _field_slots["tool_call_id"].__set__
_set_segment = _field_slots["segment"].__set__
_set_tag = _field_slots["tag"].__set__
_set_instance = _field_slots["instance"].__set__
_set_validated = _field_slots["_validated"].__set__


def new_field_event(
    path: Path,
    value: Any,
    offset: int,
    attempt: int,
    forced: int,
    tool_call: int | None,
    tool_name: str | None,
    tool_call_id: str | None,
    instance: Any,
    validated: Any,
) -> FieldEvent:
    """``FieldEvent(path, value, offset, attempt, forced, tool_call, tool_name, tool_call_id,
    instance=instance, _validated=validated)`` (no segment, no tag), built without the
    dataclass's ``__init__``."""
    ev: FieldEvent = _new(FieldEvent)
    _set_path(ev, path)
    _set_value(ev, value)
    _set_offset(ev, offset)
    _set_attempt(ev, attempt)
    _set_forced(ev, forced)
    _set_tool_call(ev, tool_call)
    _set_tool_name(ev, tool_name)
    _set_tool_call_id(ev, tool_call_id)
    _set_segment(ev, None)
    _set_tag(ev, None)
    _set_instance(ev, instance)
    _set_validated(ev, validated)
    return ev
