"""What a stream's output must be, compiled once: a JSON Schema, a text constraint, a structural
tag, or several tools; and the tracker each part of an attempt's output goes through.

:func:`compile_target` is what ``Client.stream`` and ``stream_structured`` call first: a JSON
Schema (a model, a type, a dict) compiles to a :class:`~sdk._schema.CompiledSchema`, as before;
a :class:`~sdk.Choice` / :class:`~sdk.Regex` / :class:`~sdk.Grammar`, a
:class:`~sdk.StructuralTag` or ``tools=`` compile to a target (:class:`TextTarget`,
:class:`TaggedTarget`, :class:`ToolsTarget`). The attempt asks the target for one tracker per
part of the output (:func:`new_tracker`): the message's document,
or each tool call's arguments, tracked against that call's own tool (found by the name on the
call's first delta). Sans-I/O, like the trackers themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from sdk._constants import DEFAULT_REGEX_TIMEOUT
from sdk._constraints import (
    Choice,
    Grammar,
    Regex,
    StructuralTag,
    TextConstraint,
    Tool,
    ToolChoice,
    chosen_tool,
    tool_choice_of,
    tools_of,
)
from sdk._errors import Path, SchemaViolation
from sdk._events import FieldEvent, TextDelta, TrackerEvent
from sdk._schema import CompiledSchema, Formats, compile_schema
from sdk._trackers._field import Dispatch, FieldTracker
from sdk._trackers._runaway import DEFAULT_RUNAWAY, RunawayLimits
from sdk._trackers._segments import SegmentTracker
from sdk._trackers._text import TextTracker

__all__ = [
    "Compiled",
    "Opts",
    "ReplyText",
    "TaggedTarget",
    "TextTarget",
    "ToolsTarget",
    "Tracker",
    "compile_target",
    "new_tracker",
    "request_fields",
]


class Tracker(Protocol):
    """What an attempt feeds each part of its output to (a :class:`~sdk.FieldTracker`, a
    :class:`~sdk._trackers._text.TextTracker`, a
    :class:`~sdk._trackers._segments.SegmentTracker`...)."""

    @property
    def snapshot(self) -> Any: ...

    @property
    def open_paths(self) -> list[Path]: ...

    def feed(self, text: str, *, forced: bool = False) -> list[TrackerEvent]: ...

    def finish(self) -> list[TrackerEvent]: ...

    def close(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Opts:
    """How an attempt's trackers are made: its number, lenient parsing, string deltas, when
    field events go out, the runaway limits of its JSON."""

    attempt: int
    lenient: bool = False
    deltas: bool = False
    dispatch: Dispatch = "validated"
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT
    runaway: RunawayLimits | None = DEFAULT_RUNAWAY


class _MessageTarget:
    """A constraint on the message's text: a tool call instead is a violation."""

    constraint: TextConstraint | StructuralTag
    what = ""

    def tracker(
        self, call: int | None, name: str | None, opts: Opts, call_id: str | None = None
    ) -> Tracker:
        """The tracker of the message's text (``call`` is ``None``)."""
        if call is not None:
            raise SchemaViolation(
                f"the model called a tool ({name!r}) instead of writing {self.what}",
                keyword="tool_calls",
            )
        return self._tracker(opts)

    def _tracker(self, opts: Opts) -> Tracker:
        raise NotImplementedError


class TextTarget(_MessageTarget):
    """A :class:`~sdk.Choice`, :class:`~sdk.Regex` or :class:`~sdk.Grammar`: the message's
    text, tracked by a :class:`~sdk._trackers._text.TextTracker`."""

    def __init__(self, constraint: TextConstraint) -> None:
        self.constraint: TextConstraint = constraint
        self.name = type(constraint).__name__.lower()
        self.what = f"the text the {type(constraint).__name__} asks for"

    def schema_dict(self) -> dict[str, Any]:
        """The JSON Schema of the result: a string (one of the choices)."""
        if isinstance(self.constraint, Choice):
            return {"type": "string", "enum": list(self.constraint.choices)}
        return {"type": "string"}

    def _tracker(self, opts: Opts) -> Tracker:
        return TextTracker(self.constraint, attempt=opts.attempt, regex_timeout=opts.regex_timeout)


class TaggedTarget(_MessageTarget):
    """A :class:`~sdk.StructuralTag`: free text and tagged JSON segments, tracked by a
    :class:`~sdk._trackers._segments.SegmentTracker`."""

    def __init__(self, constraint: StructuralTag) -> None:
        self.constraint: StructuralTag = constraint
        self.name = "structural_tag"
        self.what = "the tagged text"

    def schema_dict(self) -> dict[str, Any]:
        """What each segment's value satisfies: one of the tags' schemas."""
        return {"anyOf": [t.compiled.schema_dict() for t in self.constraint.structures]}

    def _tracker(self, opts: Opts) -> Tracker:
        return SegmentTracker(
            self.constraint,
            attempt=opts.attempt,
            deltas=opts.deltas,
            dispatch=opts.dispatch,
            regex_timeout=opts.regex_timeout,
            runaway=opts.runaway,
        )


class ToolsTarget:
    """Several tools: each call's arguments are tracked against the schema of the tool it
    names. ``choice`` is the caller's ``tool_choice`` (``None``: a call is forced, one tool by
    name, several ``"required"``): under a forced choice message text before any call is not
    the answer (its first character that is not whitespace is a violation, as the reply then
    calls no tool; in ``lenient`` mode it is prose, and a reply that ends with no call is the
    violation); under ``"auto"`` or ``"none"`` it is the answer, streamed as text
    (:class:`ReplyText`); under ``"none"`` or a named tool a call of another tool is a
    violation at its first delta."""

    def __init__(
        self,
        tools: tuple[Tool, ...],
        *,
        formats: Formats = "annotate",
        choice: ToolChoice | None = None,
    ) -> None:
        self.tools = tools
        self.by_name = {t.name: t for t in tools}
        self.name = "tools"
        self.choice = choice
        # Each tool's schema as the stream asks for ``format``s (compiled once, here).
        self.compiled = {
            t.name: t.compiled
            if formats == "annotate"
            else compile_schema(t.schema, formats=formats)
            for t in tools
        }

    @property
    def text_allowed(self) -> bool:
        """Whether a text reply is an answer (``tool_choice`` ``"auto"`` or ``"none"``)."""
        return self.choice in ("auto", "none")

    def schema_dict(self) -> dict[str, Any]:
        """What each call's arguments satisfy: one of the tools' schemas (or, when the model
        may answer in text, a string)."""
        schemas = [t.compiled.schema_dict() for t in self.tools]
        if self.choice == "none":
            return {"type": "string"}
        if self.text_allowed:
            schemas.append({"type": "string"})
        return {"anyOf": schemas}

    def tracker(
        self, call: int | None, name: str | None, opts: Opts, call_id: str | None = None
    ) -> Tracker:
        """The tracker of call ``call`` (of the tool ``name``, with id ``call_id`` when the
        server sent one), or of the message's text."""
        names = ", ".join(self.by_name)
        if call is None:
            if self.text_allowed:
                return ReplyText(opts.attempt)
            return _NoCall(names, early=not opts.lenient)
        if self.choice == "none":
            raise SchemaViolation(
                f"the model called {name!r} although tool_choice is 'none' (text only)",
                keyword="tool_choice",
                value=name,
            )
        chosen = chosen_tool(self.choice)
        if name is None and chosen is not None:
            name = chosen  # a server that does not name the call of the tool it was told
        if name is None and len(self.tools) == 1:
            tool = self.tools[0]  # a server that does not name the call of the only tool
        elif name is None:
            raise SchemaViolation(
                f"the call names no tool (the server sent no name); the tools offered: {names}",
                keyword="tools",
            )
        elif name not in self.by_name:
            raise SchemaViolation(
                f"the model called {name!r}, which is not one of the tools offered ({names})",
                keyword="tools",
                value=name,
            )
        elif chosen is not None and name != chosen:
            raise SchemaViolation(
                f"the model called {name!r}, but tool_choice names {chosen!r}",
                keyword="tool_choice",
                value=name,
            )
        else:
            tool = self.by_name[name]
        return FieldTracker(
            self.compiled[tool.name],
            lenient=opts.lenient,
            attempt=opts.attempt,
            deltas=opts.deltas,
            tool_call=call,
            tool_name=name,
            tool_call_id=call_id,
            dispatch=opts.dispatch,
            regex_timeout=opts.regex_timeout,
            runaway=opts.runaway,
        )


class _NoCall:
    """The message's text in a stream whose reply must call a tool: a server that forces the
    call streams nothing but the call, so the first character of text that is not whitespace
    proves the reply calls no tool (a violation at once, not after ``max_tokens``). In
    ``lenient`` mode (``early=False``: a server that does not constrain may write prose before
    its calls) the text is kept, and only an output that ends with no call is a violation.
    Text after the calls is prose, never parsed (it never reaches this tracker)."""

    def __init__(self, names: str, *, early: bool = True) -> None:
        self._names = names
        self._early = early
        self._text: list[str] = []
        self._size = 0

    @property
    def snapshot(self) -> Any:
        return None

    @property
    def open_paths(self) -> list[Path]:
        return []

    def feed(self, text: str, *, forced: bool = False) -> list[TrackerEvent]:
        stripped = text.lstrip()
        if stripped and self._early:
            raise SchemaViolation(
                f"the reply calls none of the tools ({self._names}); it writes text instead: "
                f"{stripped[:200]!r}",
                keyword="tool_calls",
                value=stripped[:200],
                offset=self._size + len(text) - len(stripped),
            )
        self._text.append(text)
        self._size += len(text)
        return []

    def finish(self) -> list[TrackerEvent]:
        text = "".join(self._text).strip()
        raise SchemaViolation(
            f"the reply calls none of the tools ({self._names})"
            + (f"; it wrote text instead: {text[:200]!r}" if text else ""),
            keyword="tool_calls",
        )

    def close(self) -> Any:
        return self.finish()


class ReplyText:
    """The message's text where the model may answer in text instead of calling a tool
    (``tool_choice`` ``"auto"`` or ``"none"``): each chunk is a :class:`~sdk.TextDelta` (path
    ``()``), the end one :class:`~sdk.FieldEvent` with the whole text, which is the result. A
    reply with neither text nor a call is a violation. When a call follows the text, the text
    was prose before it: the attempt drops this tracker and the calls are the result."""

    def __init__(self, attempt: int) -> None:
        self._attempt = attempt
        self._parts: list[str] = []
        self._size = 0
        self._finished = False

    @property
    def text(self) -> str:
        """The text so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def snapshot(self) -> Any:
        return self.text if self._parts else None

    @property
    def open_paths(self) -> list[Path]:
        return [] if self._finished else [()]

    def feed(self, text: str, *, forced: bool = False) -> list[TrackerEvent]:
        self._parts.append(text)
        self._size += len(text)
        return [TextDelta((), text, self._attempt)]

    def finish(self) -> list[TrackerEvent]:
        if self._finished:
            return []
        text = self.text
        if not text.strip():
            raise SchemaViolation(
                "the reply is empty: neither text nor a tool call", keyword="tool_calls"
            )
        self._finished = True
        return [FieldEvent((), text, max(0, self._size - 1), self._attempt, 0)]

    def close(self) -> Any:
        self.finish()
        return self.text


Compiled: TypeAlias = "CompiledSchema | TextTarget | TaggedTarget | ToolsTarget"
"""What a stream is built with: a compiled JSON Schema, or a target."""


def compile_target(
    schema: Any,
    tools: Sequence[Tool] | Mapping[str, Any] | None = None,
    *,
    formats: Formats = "annotate",
    tool_choice: object = None,
) -> Compiled:
    """Compile what a stream's output must be: ``schema`` (a model, a type, a JSON Schema dict,
    or a constraint value) or ``tools``, exactly one of them. ``formats`` applies to JSON
    documents and tool arguments (a structural tag's segments treat ``format`` as an
    annotation); ``tool_choice`` (with ``tools`` only) as :class:`ToolsTarget` reads it.
    Raises ``TypeError`` when both or neither are given, ``ValueError`` for a
    ``tool_choice`` without tools or naming a tool not offered, :class:`~sdk.SchemaError` for
    an unusable schema."""
    if tool_choice is not None and tools is None and not isinstance(schema, Tool):
        raise ValueError(
            "tool_choice goes with tools=: a schema= is filled in by the reply itself (as a "
            "forced tool call with mode='tool')"
        )
    if tools is not None or isinstance(schema, Tool):
        if tools is not None and schema is not None:
            raise TypeError("give schema= or tools=, not both (each tool has its own schema)")
        offered = tools_of(tools) if tools is not None else (schema,)
        choice = None if tool_choice is None else tool_choice_of(tool_choice, offered)
        return ToolsTarget(offered, formats=formats, choice=choice)
    if schema is None:
        raise TypeError("schema= is required (a model, a type, a JSON Schema dict, a constraint)")
    if isinstance(schema, (Choice, Regex, Grammar)):
        return TextTarget(schema)
    if isinstance(schema, StructuralTag):
        return TaggedTarget(schema)
    return compile_schema(schema, formats=formats)


def new_tracker(
    target: Compiled,
    tool_call: int | None,
    tool_name: str | None,
    tool_call_id: str | None,
    *,
    attempt: int,
    lenient: bool,
    deltas: bool,
    dispatch: Dispatch = "validated",
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
    runaway: RunawayLimits | None = DEFAULT_RUNAWAY,
) -> Tracker:
    """The tracker for one part of attempt ``attempt``'s output: the message's document
    (``tool_call is None``) or one tool call's arguments (named ``tool_name``, with id
    ``tool_call_id`` when the server sent one, both stamped on its events)."""
    if isinstance(target, CompiledSchema):
        return FieldTracker(
            target,
            lenient=lenient,
            attempt=attempt,
            deltas=deltas,
            tool_call=tool_call,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            dispatch=dispatch,
            regex_timeout=regex_timeout,
            runaway=runaway,
        )
    opts = Opts(attempt, lenient, deltas, dispatch, regex_timeout, runaway)
    return target.tracker(tool_call, tool_name, opts, tool_call_id)


def request_fields(target: Compiled, mode: object) -> dict[str, Any]:
    """What a :class:`~sdk.GenerationRequest` carries for ``target`` besides its JSON Schema
    (``constraint``, ``tools``, ``mode``), with ``mode`` (as given, ``None`` when not) checked
    against it: several tools are sent as tools; a constraint is sent the server's own way
    (``"json_schema"``, the default) or not at all (``"none"``: the client alone checks)."""
    if isinstance(target, ToolsTarget):
        if mode not in (None, "tool"):
            raise ValueError(
                f"tools are sent as tools: mode must be 'tool' (the default), not {mode!r}"
            )
        return {"tools": target.tools, "mode": "tool", "tool_choice": target.choice}
    if isinstance(target, (TextTarget, TaggedTarget)):
        if mode not in (None, "json_schema", "none"):
            kind = type(target.constraint).__name__
            raise ValueError(
                f"a {kind} is sent the server's own way (mode 'json_schema', the default) or "
                f"not at all (mode 'none'), not as {mode!r}"
            )
        return {"constraint": target.constraint}
    return {}
