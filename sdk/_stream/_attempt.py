"""One attempt's bookkeeping, sans-I/O: deltas in, field events out, then values or the error.

:class:`AttemptState` is what a :class:`~sdk.Stream` feeds, one attempt at a time. It owns no
event loop and no connection, so every rule below is tested by feeding it values:

- ``Delta.text`` goes to the tracker of its ``tool_call`` (``None``: the message's document; an
  index: that tool call's arguments, one tracker each, against the schema of the tool the call
  names when there are several; its name and id are stamped on its events, an id that comes
  after the call's first delta from then on). When the tool must be known to choose the schema
  (several tools), a call's text waits until its name arrives (it may come on a later delta),
  or until the output ends. An error in a call's arguments says which call it is
  (:meth:`~sdk.StreamError.attribute`: index, tool name, id). What kind of
  tracker reads a part is the target's choice (:func:`sdk._trackers._target.new_tracker`): a JSON
  Schema's :class:`~sdk.FieldTracker`, a text constraint's, a structural tag's. Message text
  next to tool calls is prose: kept in the attempt's text, never parsed (text seen before the
  first tool call is dropped from parsing when the call arrives).
- ``refusal`` pieces are joined into a :class:`~sdk.RefusedError`; ``finish_reason`` ends the
  parsing (later deltas may only add usage) and says what an unfinished document is:
  ``"length"`` a :class:`~sdk.TruncatedError` with reason ``"length"``, ``"malformed"`` (the
  provider could not read the output) an :class:`~sdk.OutputSyntaxError`, a provider's word
  that is none of the stream's (``"pause_turn"``, ``"OTHER"``...) a
  :class:`~sdk.TruncatedError` whose ``reason`` is that word, ``"stop"``, ``"tool_calls"`` or
  none a :class:`~sdk.TruncatedError` with reason ``"eof"``; each message names the
  provider's own word when the backend kept it (``Delta.response["stop_reason"]``).
  ``"content_filter"`` is a :class:`~sdk.ContentFilteredError` whatever the document. A
  finished document is accepted whatever the reason, except after ``"length"`` when it did not
  close itself: a root number, which more output could have changed (``12`` may have been cut
  from ``123``), is a :class:`~sdk.TruncatedError` with reason ``"length"``; an object, array,
  string, ``true``, ``false`` or ``null`` that ended before the limit is the answer,
  ``"length"`` kept in the record (a text constraint's output has no end of its own: its final
  check decides, as after any reason). All are raised by
  :meth:`AttemptState.finish`, after the source ended, so that usage sent after the finish
  reason is counted.
- What the server says about the response (``Delta.response``: its id, system fingerprint) and
  the message's token log probabilities (``Delta.logprobs``) are kept for the record, with the
  finish reason.
- Reasoning (``Delta.reasoning``, or in ``lenient`` mode a ``<think>`` block before the
  message's document) is kept apart, never parsed, and given as
  :class:`~sdk.ReasoningDelta` events when asked for.
- The server's faults (:mod:`sdk._stream._misroute`): an attempt whose content is empty and
  whose reasoning is itself the JSON document ends with :class:`~sdk.AnswerInReasoning`, or,
  with ``reasoning_fallback``, reads the document from the reasoning; a syntax error at the
  start of a document the server claims to mask (:attr:`AttemptState.server_policy`) is a
  :class:`~sdk.ConstraintIgnored` (:meth:`AttemptState.diagnose`). Each names the server's
  cure, and is not retried where there is none or the attempt had asked for it already.
- Usage: the backend's latest report (``Delta.usage``) when it sent one, else the attempt's
  own count (``Delta.tokens``, or one token per text delta, marked ``estimated``), so an
  aborted attempt is never counted as free; its prompt, once output came, is the backend's
  estimate (:attr:`AttemptState.prompt_estimate`, set by the stream from the generation's
  ``prompt_estimate``), marked ``estimated`` too.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from sdk._backend import CONTENT_FILTER, CURES, LENGTH, MALFORMED, STOP, TOOL_CALLS, Delta, Usage
from sdk._constants import DEFAULT_REGEX_TIMEOUT
from sdk._errors import (
    AnswerInReasoning,
    ConstraintIgnored,
    ContentFilteredError,
    OutputSyntaxError,
    RefusedError,
    StreamError,
    StreamUsageError,
    TruncatedError,
)
from sdk._events import FieldEvent, ReasoningDelta, TextDelta
from sdk._records import JSON_DOCUMENT, AttemptInfo, ToolCallText
from sdk._server_policy import ServerPolicy
from sdk._stream._misroute import document_in_reasoning, ignored_constraint
from sdk._stream._partial_view import partial_view
from sdk._stream._pieces import FOLD, Pieces
from sdk._stream._think import ThinkSplitter
from sdk._trackers._field import Dispatch, FieldTracker
from sdk._trackers._runaway import DEFAULT_RUNAWAY, RunawayLimits
from sdk._trackers._target import Compiled, ToolsTarget, Tracker, new_tracker

__all__ = ["AttemptEvent", "AttemptState"]

AttemptEvent = FieldEvent | TextDelta | ReasoningDelta
"""What :meth:`AttemptState.feed` and :meth:`AttemptState.finish` return."""


class AttemptState:
    """The state of attempt number ``number`` of a stream whose schema is ``compiled``.

    Call :meth:`feed` with each chunk the source yields (``str`` or :class:`~sdk.Delta`), then
    :meth:`finish` when the source ends (the last events, or the error that ends the attempt),
    then :meth:`close` for the validated values (one per document: the message's, or one per
    tool call in index order). Errors raised by the trackers (violations, syntax) propagate from
    :meth:`feed`; after an error the owner stops feeding. :meth:`record` makes the
    :class:`~sdk.AttemptInfo` of the attempt, whatever its outcome.
    """

    __slots__ = (
        "_clock",
        "_compiled",
        "_counted",
        "_cures",
        "_deltas",
        "_dispatch",
        "_estimated",
        "_finish_reason",
        "_first_output",
        "_forced",
        "_ids",
        "_last_key",
        "_last_texts",
        "_last_tracker",
        "_lenient",
        "_logprobs",
        "_names",
        "_needs_name",
        "_reasoning",
        "_reasoning_fallback",
        "_refusal",
        "_regex_timeout",
        "_reported",
        "_response",
        "_runaway",
        "_started",
        "_texts",
        "_think",
        "_tool_mode",
        "_trackers",
        "_usage_base",
        "_want_reasoning",
        "number",
        "prompt_estimate",
        "server_policy",
    )

    def __init__(
        self,
        number: int,
        compiled: Compiled,
        *,
        lenient: bool = False,
        deltas: bool = False,
        reasoning: bool = False,
        dispatch: Dispatch = "validated",
        regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        usage_base: Usage = Usage(),  # noqa: B008 - frozen, so one shared zero is fine
        reasoning_fallback: bool = False,
        cures: frozenset[str] = frozenset(),
        runaway: RunawayLimits | None = DEFAULT_RUNAWAY,
    ) -> None:
        self.number = number
        """The attempt's number (1-based), stamped on its events."""
        self._compiled = compiled
        self._lenient = lenient
        self._deltas = deltas
        self._dispatch: Dispatch = dispatch
        self._regex_timeout = regex_timeout
        self._runaway = runaway
        self._trackers: dict[int | None, Tracker] = {}
        self._tool_mode = False  # a tool call arrived: message text is prose from now on
        self._texts: dict[int | None, Pieces] = {}
        self._names: dict[int, str | None] = {}
        self._ids: dict[int, str] = {}
        # Several tools: a call's schema is its tool's, so its text waits for its name.
        self._needs_name = isinstance(compiled, ToolsTarget) and len(compiled.tools) > 1
        self._refusal: list[str] = []
        self._reasoning: list[str] = []
        self._want_reasoning = reasoning
        self._think = ThinkSplitter() if lenient else None
        self._finish_reason: str | None = None
        self.prompt_estimate: int | None = None
        """The backend's estimate of the request's prompt tokens (see :attr:`usage`)."""
        self.server_policy: ServerPolicy | None = None
        """What the backend said of the constraint its server applies (set by the stream from
        the generation): how a server's fault is told from the model's."""
        self._reasoning_fallback = reasoning_fallback
        self._cures = cures  # what this attempt's request asked for
        self._response: dict[str, Any] = {}  # what the server said about the response
        self._logprobs: list[Any] = []
        self._reported: Usage | None = None
        self._counted = 0
        self._forced = 0
        self._estimated = False
        self._usage_base = usage_base
        """For an attempt that continues a rewound generation: what the earlier attempts of that
        generation already counted (the backend's final report covers the whole generation)."""
        self._clock = clock
        """Seconds, for the record's timings (``time.monotonic``; tests inject one)."""
        self._started = clock()
        self._first_output: float | None = None
        # Where the last text went (most chunks go where the one before went).
        self._last_key: int | None = None
        self._last_texts = Pieces()
        self._last_tracker: Tracker | None = None

    # ------------------------------------------------------------------ what it knows

    @property
    def finish_reason(self) -> str | None:
        """The finish reason the source sent, if any yet."""
        return self._finish_reason

    @property
    def usage(self) -> Usage:
        """The attempt's token usage so far (see the module docstring)."""
        reported = self._reported
        if reported is not None:
            reported = reported - self._usage_base
        if reported is not None and reported.completion_tokens >= self._counted:
            return reported
        forced = max(self._forced, reported.forced_tokens if reported is not None else 0)
        if reported is not None:
            return dataclasses.replace(
                reported,
                completion_tokens=self._counted,
                forced_tokens=forced,
                estimated=self._estimated or reported.estimated,
            )
        # Nothing reported (an attempt aborted, or a server that sends no usage): once output
        # came, the server read the prompt and bills it; the backend's estimate of it counts.
        prompt = (self.prompt_estimate or 0) if self._counted else 0
        return Usage(prompt, self._counted, forced, estimated=self._estimated or prompt > 0)

    @property
    def reported_usage(self) -> Usage | None:
        """The backend's latest usage report, if it sent one."""
        return self._reported

    def view(self, python_type: Any) -> Any:
        """The snapshot as ``python_type`` (see :mod:`sdk._stream._partial_view`): the plain
        snapshot when it is ``None`` (a dict schema). Raises :class:`~sdk.StreamUsageError` when
        there are several tool calls."""
        snapshot = self.snapshot
        if self._tool_mode:
            if len(snapshot) != 1:
                raise StreamUsageError(
                    f"the stream has {len(snapshot)} tool calls; read `s.snapshot` instead"
                )
            snapshot = snapshot[0]
        return snapshot if python_type is None else partial_view(python_type, snapshot)

    @property
    def tool_mode(self) -> bool:
        """A tool call arrived: the documents are the calls' arguments."""
        return self._tool_mode

    @property
    def snapshot(self) -> Any:
        """The partial value so far (plain JSON): the document's, or, once a tool call arrived,
        a list of the calls' snapshots in index order; ``None`` before any output."""
        if self._tool_mode:
            return [self._trackers[k].snapshot for k in self._tool_keys()]
        tracker = self._trackers.get(None)
        return None if tracker is None else tracker.snapshot

    @property
    def open_paths(self) -> list[tuple[str | int, ...]]:
        """The paths still open in the message's document (empty for tool calls)."""
        tracker = self._trackers.get(None)
        return [] if tracker is None else tracker.open_paths

    # ------------------------------------------------------------------ input

    def feed(self, chunk: str | Delta) -> Sequence[AttemptEvent]:
        """Take one chunk of the source; return the field events it made certain. A ``str``
        is taken as ``Delta(text=chunk)`` is."""
        if isinstance(chunk, str):  # text alone: the HTTP backends' common chunk
            if not chunk or self._finish_reason is not None:
                return []
            self._counted += 1
            self._estimated = True
            tracker = self._last_tracker
            if self._last_key is None and tracker is not None:  # where the last text went
                texts = self._last_texts
                texts.append(chunk)  # texts.add(chunk), inline: this runs once per token
                if len(texts) == FOLD:
                    texts.fold()
                return tracker.feed(chunk)  # the message's document: no call to name
            return self._text(chunk, False, None)
        if type(chunk) is Delta:
            if (
                chunk.usage is None
                and chunk.finish_reason is None
                and chunk.refusal is None
                and chunk.tool_name is None
                and chunk.tool_call_id is None
                and chunk.reasoning is None
                and chunk.logprobs is None
                and chunk.response is None
            ):
                # The common delta: text only.
                text = chunk.text
                if not text or self._finish_reason is not None:
                    return []
                self._count(chunk)
                return self._text(text, chunk.forced, chunk.tool_call)
        elif not isinstance(chunk, Delta):
            raise TypeError(f"a source must yield str or Delta, not {type(chunk).__name__}")
        if chunk.usage is not None:
            self._reported = chunk.usage
        if chunk.response:
            self._response.update(chunk.response)
        if chunk.logprobs and chunk.tool_call is None and self._finish_reason is None:
            self._logprobs.extend(chunk.logprobs)
        if chunk.refusal:
            self._refusal.append(chunk.refusal)
        thoughts = self._thought(chunk.reasoning) if chunk.reasoning else []
        key = chunk.tool_call
        held: Sequence[AttemptEvent] = ()
        if key is not None:
            held = self._identify(key, chunk.tool_name, chunk.tool_call_id)
            if held:
                thoughts = [*thoughts, *held]
        text = chunk.text
        if not text or self._finish_reason is not None:
            if chunk.finish_reason is not None and self._finish_reason is None:
                self._finish_reason = chunk.finish_reason
            return thoughts
        self._count(chunk)
        events = self._text(text, chunk.forced, key)
        if chunk.finish_reason is not None:
            # Text on the finishing delta is the output's last; nothing after it is parsed.
            self._finish_reason = chunk.finish_reason
        return [*thoughts, *events] if thoughts else events

    def replay(self, text: str) -> None:
        """Take ``text`` as the message's output so far, without events, usage or timing: the
        part a rewound generation kept, written by the attempt before."""
        if text:
            self._document(text, False, None)
            # The kept text is not this attempt's output: its first own text, taken the long
            # way (through _document), is.
            self._first_output = self._last_tracker = None

    @property
    def cures(self) -> frozenset[str]:
        """The cures this attempt's request asked for (:attr:`sdk.Attempt.cures`)."""
        return self._cures

    @property
    def usage_base(self) -> Usage:
        """What earlier attempts of the same (rewound) generation counted; zero for a fresh one."""
        return self._usage_base

    @property
    def rewindable(self) -> bool:
        """Whether offsets in the message's text are offsets in the generation's output: one
        document, the message's, with nothing routed elsewhere (no tool call, no reasoning)."""
        return self._texts.keys() <= {None} and not self._reasoning  # no tool call either

    @property
    def text(self) -> str:
        """The message's text so far."""
        return self._joined(None)

    def finish(self) -> Sequence[AttemptEvent]:
        """The source ended: return the documents' last events (a root number is final only at
        the end), or raise what ended the attempt: :class:`~sdk.RefusedError`,
        :class:`~sdk.ContentFilteredError`, :class:`~sdk.TruncatedError` (reason ``"length"``
        after ``finish_reason == "length"``, a provider's own reason after one the stream has
        no word for, else ``"eof"``), :class:`~sdk.OutputSyntaxError` after ``"malformed"``,
        or the tracker's error (see the module docstring)."""
        if self._refusal:
            raise RefusedError("".join(self._refusal))
        if self._finish_reason == CONTENT_FILTER:
            raise ContentFilteredError(
                "the provider's content filter stopped the output" + self._provider_said(),
                snapshot=self.snapshot,
            )
        events: list[AttemptEvent] = []
        if self._think is not None:
            thought, content = self._think.end()
            if thought:
                events.extend(self._thought(thought))
            if content:
                events.extend(self._document(content, False, None))
        if (
            self._reasoning
            and self._texts.keys() <= {None}
            and not isinstance(self._compiled, ToolsTarget)  # the answer is a call there
            and not self._joined(None).strip()
        ):
            events.extend(self._answer_in_reasoning())
        for waiting in sorted(k for k in self._texts if k is not None and k not in self._trackers):
            # Calls still waiting for a name: none will come now (an unnamed call of one of
            # several tools is a violation, said by the target).
            events.extend(self._start_call(waiting))
        if not self._trackers:
            self._trackers[None] = self._new_tracker(None)
        for key in self._keys():
            tracker = self._trackers[key]
            # A JSON document final before the end: no later character could have changed it
            # (a text tracker has no such notion: its own final check decides).
            closed = getattr(tracker, "done", True)
            cut = self._finish_reason == LENGTH and not closed
            try:
                last = tracker.finish()
            except TruncatedError as exc:
                error = self._unfinished(exc)
                self._attribute(error, key)
                if error is exc:
                    raise
                raise error from exc.__cause__
            except StreamError as exc:
                if cut:  # a root number's verdict ("10" below a minimum of 100): it was cut
                    raise self._cut_number(tracker, key) from exc
                self._attribute(exc, key)
                raise
            if cut:
                raise self._cut_number(tracker, key)
            events.extend(last)
        return events

    def _answer_in_reasoning(self) -> Sequence[AttemptEvent]:
        """The content is empty and there is reasoning: if the reasoning is the document, read
        it (``reasoning_fallback``) or raise :class:`~sdk.AnswerInReasoning`."""
        reasoning = "".join(self._reasoning)
        document = document_in_reasoning(reasoning)
        if document is None:
            return ()
        if self._reasoning_fallback:
            return self._document(document, False, None)
        policy = self.server_policy
        cure = None if policy is None else policy.reasoning_cure
        server = None if policy is None else policy.server
        raise AnswerInReasoning(
            "the answer came in the reasoning channel and the content is empty"
            + (f" ({server})" if server else "")
            + f": the reasoning is a JSON document ({len(document)} characters); "
            + self._cure_said(cure)
            + " (reasoning_fallback=True reads the document from the reasoning)",
            reasoning=reasoning,
            server=server,
            cure=cure,
            retryable=cure is not None and cure not in self._cures,
        )

    def diagnose(self, error: Exception) -> Exception:
        """The error that ended the attempt, as the stream should see it: a syntax error at the
        start of a document the server claims to mask (:attr:`server_policy`) becomes a
        :class:`~sdk.ConstraintIgnored` (the server dropped the constraint; the original is
        its ``__cause__``); any other error is returned as it is."""
        policy = self.server_policy
        if (
            policy is None
            or not policy.masked
            or type(error) is not OutputSyntaxError
            or error.tool_call is not None
            or self._lenient
            or self._tool_mode
        ):
            return error
        cause = ignored_constraint(self._joined(None), error.offset)
        if cause is None:
            return error
        cure = policy.ignored_cure
        detail = f", {policy.detail}" if policy.detail else ""
        ignored = ConstraintIgnored(
            f"the server returned prose under a schema it claims to apply ({policy.server}"
            f"{detail}): {cause}; " + self._cure_said(cure),
            cause=cause,
            offset=error.offset,
            server=policy.server,
            cure=cure,
            retryable=cure is not None and cure not in self._cures,
        )
        ignored.__cause__ = error
        return ignored

    def _cure_said(self, cure: str | None) -> str:
        """What the retry does about a server's fault whose fix is ``cure``, in words."""
        if cure is None:
            return "the server has no fix fieldstream knows of, so it is not retried"
        if cure in self._cures:
            return f"this attempt already asked for the fix ({cure!r}), so it is not retried"
        return f"the retry asks for {cure!r} ({CURES.get(cure, 'the fix')})"

    def _cut_number(self, tracker: Tracker, key: int | None) -> TruncatedError:
        """The token limit ended the output right after a root number (the only value the
        end of the output completes): more output could have changed it."""
        error = TruncatedError(
            "the output hit the token limit (finish_reason 'length'"
            + self._provider_said(", ")
            + ") right after a root number, which more output could have changed: it may "
            "have been cut short",
            snapshot=tracker.snapshot,
            reason=LENGTH,
        )
        self._attribute(error, key)
        return error

    def _unfinished(self, exc: TruncatedError) -> StreamError:
        """What a document that ``exc`` says is unfinished is, given the finish reason."""
        reason = self._finish_reason
        if reason is None or reason in (STOP, TOOL_CALLS):
            return exc  # the source ended mid-document ("eof")
        if reason == MALFORMED:
            return OutputSyntaxError(
                "the provider found the output the model wrote malformed and did not pass it "
                "on (finish_reason 'malformed'" + self._provider_said(", ") + ")"
            )
        if reason == LENGTH:
            return TruncatedError(
                "the output hit the token limit (finish_reason 'length'"
                + self._provider_said(", ")
                + ") before the document ended",
                snapshot=exc.snapshot,
                open_paths=exc.open_paths,
                reason=LENGTH,
            )
        return TruncatedError(
            f"the provider stopped the output (finish_reason {reason!r}"
            + self._provider_said(", ")
            + ") before the document ended",
            snapshot=exc.snapshot,
            open_paths=exc.open_paths,
            reason=reason,
        )

    def _provider_said(self, lead: str = " ") -> str:
        """The provider's own stop reason and message, as the backend kept them (``Delta.
        response``): ``" (the provider's 'max_tokens': ...)"`` with ``lead=" "``, the same
        without brackets after ``lead=", "``; ``""`` when it kept none."""
        reason = _str(self._response.get("stop_reason"))
        message = _str(self._response.get("stop_message"))
        if reason is None and message is None:
            return ""
        said = "the provider's " + (repr(reason) if reason else "message")
        said += f": {message}" if message else ""
        return f" ({said})" if lead == " " else lead + said

    def close(self) -> list[Any]:
        """Validate every document whole (after :meth:`finish`); their values, in order."""
        values = []
        for key in self._keys():
            try:
                values.append(self._trackers[key].close())
            except StreamError as exc:
                self._attribute(exc, key)
                raise
        return values

    def record(self, error: BaseException | None) -> AttemptInfo:
        """The attempt's record: its error (``None`` for success), usage and text."""
        tool_calls = tuple(
            ToolCallText(k, self._names.get(k), self._joined(k), id=self._ids.get(k))
            for k in sorted(k for k in self._texts if k is not None)
        )
        first = self._first_output
        return AttemptInfo(
            number=self.number,
            error=error,
            usage=self.usage,
            text=self._joined(None),
            tool_calls=tool_calls,
            seconds=self._clock() - self._started,
            first_output=None if first is None else first - self._started,
            reasoning="".join(self._reasoning),
            expected=getattr(self._compiled, "what", None) or JSON_DOCUMENT,
            finish_reason=self._finish_reason,
            response_id=_str(self._response.get("id")),
            system_fingerprint=_str(self._response.get("system_fingerprint")),
            logprobs=tuple(self._logprobs),
        )

    # ------------------------------------------------------------------ internals

    def _joined(self, key: int | None) -> str:
        texts = self._texts.get(key)
        return "" if texts is None else texts.joined()

    def _count(self, chunk: Delta) -> None:
        tokens = chunk.tokens
        if tokens is None:
            self._counted += 1
            self._estimated = True
            if chunk.forced:
                self._forced += 1
        else:
            self._counted += tokens
            if chunk.forced:
                self._forced += tokens

    def _thought(self, text: str) -> list[AttemptEvent]:
        self._reasoning.append(text)
        return [ReasoningDelta(text, self.number)] if self._want_reasoning else []

    def _identify(self, key: int, name: str | None, call_id: str | None) -> Sequence[AttemptEvent]:
        """Call ``key``'s name or id arrived: stamp it on the call's tracker if there is one
        (its later events carry it), or start the tracker of a call whose text waited for its
        name (the events of that text)."""
        tracker = self._trackers.get(key)
        if name is not None and key not in self._names:
            self._names[key] = name
            if isinstance(tracker, FieldTracker) and tracker.tool_name is None:
                tracker.tool_name = name
        if call_id is not None and key not in self._ids:
            self._ids[key] = call_id
            if isinstance(tracker, FieldTracker) and tracker.tool_call_id is None:
                tracker.tool_call_id = call_id
        if tracker is None and name is not None and key in self._texts:
            return self._start_call(key)
        return ()

    def _start_call(self, key: int) -> Sequence[AttemptEvent]:
        """Make call ``key``'s tracker and feed it the text that waited for the call's name."""
        try:
            tracker = self._trackers[key] = self._new_tracker(key)
            return tracker.feed(self._joined(key))
        except StreamError as exc:
            self._attribute(exc, key)
            raise

    def _attribute(self, error: StreamError, key: int | None) -> None:
        if key is not None:
            error.attribute(key, self._names.get(key), self._ids.get(key))

    def _text(self, text: str, forced: bool, key: int | None) -> Sequence[AttemptEvent]:
        tracker = self._last_tracker
        if key == self._last_key and tracker is not None:  # where the last text went
            self._last_texts.add(text)
            if key is None:
                return tracker.feed(text, forced=forced)
            try:
                return tracker.feed(text, forced=forced)
            except StreamError as exc:
                self._attribute(exc, key)
                raise
        think = self._think
        if think is not None and key is None:
            thought, text = think.feed(text)
            if thought:
                events = self._thought(thought)
                return [*events, *self._document(text, forced, key)] if text else events
            if not text:
                return []
        return self._document(text, forced, key)

    def _document(self, text: str, forced: bool, key: int | None) -> Sequence[AttemptEvent]:
        texts = self._texts.get(key)
        if texts is None:
            texts = self._texts[key] = Pieces()
        if self._first_output is None:
            self._first_output = self._clock()
        texts.add(text)
        tracker = self._trackers.get(key)
        if tracker is None:
            if key is None and self._tool_mode:
                return []  # prose next to tool calls: kept in the text, not parsed
            if key is not None and not self._tool_mode:
                # The first tool call: message text before it was prose, not the document.
                self._tool_mode = True
                self._trackers.pop(None, None)
            if key is not None and self._needs_name and key not in self._names:
                return []  # held until the call's name says which tool's schema it follows
            if key is not None:
                events = self._start_call(key)
                self._last_key, self._last_texts = key, texts
                self._last_tracker = self._trackers[key]
                return events
            tracker = self._trackers[key] = self._new_tracker(key)
        if key is not None or self._think is None or self._think.done:
            self._last_key, self._last_texts, self._last_tracker = key, texts, tracker
        if key is None:
            return tracker.feed(text, forced=forced)
        try:
            return tracker.feed(text, forced=forced)
        except StreamError as exc:
            self._attribute(exc, key)
            raise

    def _new_tracker(self, key: int | None) -> Tracker:
        return new_tracker(
            self._compiled,
            key,
            self._names.get(key),  # type: ignore[arg-type]  # None for the message
            self._ids.get(key),  # type: ignore[arg-type]
            attempt=self.number,
            lenient=self._lenient,
            deltas=self._deltas,
            dispatch=self._dispatch,
            regex_timeout=self._regex_timeout,
            runaway=self._runaway,
        )

    def _tool_keys(self) -> list[int]:
        return sorted(k for k in self._trackers if k is not None)

    def _keys(self) -> Sequence[int | None]:
        return self._tool_keys() if self._tool_mode else [None]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
