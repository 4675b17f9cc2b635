"""The stream: pulls deltas from a source, dispatches field events, aborts and retries.

:class:`Stream` is the async shell around the sans-I/O attempts (:mod:`sdk._stream._ledger`,
:mod:`sdk._stream._attempt`): it pulls one chunk at a time from the source, hands it to the
attempt in progress, gives the new field events to the dispatcher (callbacks, exactly once) and the
iterator, and when an attempt fails rewinds the generation (``Retry(backtrack=True)``) or closes
the source at once (the generation stops), then goes on with the next attempt or fails.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
from anyio.abc import TaskGroup

from sdk._backend import Delta, Usage
from sdk._errors import CallbackError, SchemaViolation, StreamUsageError
from sdk._events import (
    AttemptFailed,
    AttemptStarted,
    Backtracked,
    Event,
    FieldEvent,
    StreamEnded,
    UsageReported,
)
from sdk._options import StreamConfig
from sdk._partial_typed import Partial
from sdk._records import AttemptInfo
from sdk._retry import NO_RETRY, answers, next_try
from sdk._stream._dispatch import Dispatcher
from sdk._stream._ledger import Ledger
from sdk._stream._source import Pulled, Source, SourceReader
from sdk._stream._tracing import StreamTrace, stream_trace
from sdk._trackers._target import Compiled

if TYPE_CHECKING:
    from sdk._local._mask_report import MaskReport

__all__ = ["Stream"]

logger = logging.getLogger("fieldstream")

T = TypeVar("T")

_NEW, _OPEN, _DONE, _FAILED, _CLOSED = "new", "open", "done", "failed", "closed"


class Stream(Generic[T]):
    """A structured stream: an async context manager and a one-shot async iterator.

    ``T`` is the result's type: the model for ``schema=Model``, ``list[Item]`` for
    ``schema=list[Item]``, ``Any`` for a dict schema.

    ``async for ev in s`` yields each :class:`~sdk.FieldEvent` once per stream (and
    :class:`~sdk.TextDelta` / progress events if asked for), each typed as the
    :data:`~sdk.Event` union that its ``type`` narrows (``s.fields()``: field events only),
    then ends when the document is
    complete, valid, and every async callback has finished; it raises the stream's error
    otherwise (after yielding the events that came before it). ``await s.result()`` gives the
    validated value (a model instance, or the plain value for a dict schema), reading whatever
    is left first. Leaving the ``async with`` block closes the source (the generation stops)
    whatever state the stream is in.

    Exactly once (see :mod:`sdk._stream._dispatch`): a retry that writes a field with the same value
    does not yield or dispatch it again; ``TextDelta`` events are live text, not deduplicated.

    Built by :func:`stream_structured` and :meth:`sdk.Client.stream`.
    """

    def __init__(
        self,
        source: Source,
        schema: Compiled,
        config: StreamConfig | None = None,
        *,
        trace: Mapping[str, Any] | None = None,
    ) -> None:
        config = config if config is not None else StreamConfig()
        retry = config.retry
        self._source = SourceReader(
            source, retries=retry is not None and retry.max_attempts > 1 and retry.output_errors
        )
        self._compiled = schema
        self._config = config
        self._progress = config.progress
        self._backtrack = config.retry is not None and config.retry.backtrack
        self._dispatcher = Dispatcher(
            config.on_field,
            on_error=config.on_callback_error,
            max_concurrency=config.max_concurrency,
        )
        self._state = _NEW
        self._tg: TaskGroup | None = None
        self._events: deque[Event] = deque()
        self._iterated = False
        self._busy = False
        self._error: BaseException | None = None
        self._values: list[T] | None = None
        self._ledger = Ledger(schema, config)
        self._trace_attributes = trace or {}
        self._trace: StreamTrace | None = None
        self.mask_report: MaskReport | None = None
        """On the local engine, what its mask does with the schema (relaxed parts, strict
        closures, key order: ``LocalBackend.explain``), known when the stream is built; None
        on other backends and for constraints other than a JSON Schema."""

    # -- public surface ---------------------------------------------------------------------

    @property
    def json_schema(self) -> dict[str, Any]:
        """The resolved JSON Schema of ``schema`` (what a backend sends); a fresh copy."""
        return self._compiled.schema_dict()

    @property
    def schema_name(self) -> str:
        """A name for the schema (the model's class name, for a model)."""
        return self._compiled.name

    @property
    def attempt(self) -> int:
        """The number of the attempt in progress (or the last one); 0 before the first."""
        return self._ledger.number

    def assistant_message(self) -> dict[str, Any]:
        """The reply, ready to append to the conversation of the next Chat Completions turn
        (tool calls with their ids): :meth:`AttemptInfo.assistant_message
        <sdk._records.AttemptInfo.assistant_message>` of the attempt that succeeded. Raises
        :class:`StreamUsageError` before the stream ended with success."""
        return self._succeeded("assistant_message").assistant_message()

    def output_items(self) -> list[dict[str, Any]]:
        """The reply as Responses API input items for the next turn (``function_call`` items
        with their ``call_id``): :meth:`AttemptInfo.output_items
        <sdk._records.AttemptInfo.output_items>` of the attempt that succeeded. Raises
        :class:`StreamUsageError` before the stream ended with success."""
        return self._succeeded("output_items").output_items()

    def _succeeded(self, what: str) -> AttemptInfo:
        records = self._ledger.records
        if not records or records[-1].error is not None or self._error is not None:
            raise StreamUsageError(
                f"{what}() is the reply of a stream that succeeded: read it to its end first "
                "(await s.result() / s.results())"
            )
        return records[-1]

    @property
    def attempts(self) -> list[AttemptInfo]:
        """The attempts that ended, in order: number, error (``None`` for the successful one),
        usage and the text received."""
        return list(self._ledger.records)

    @property
    def usage(self) -> Usage:
        """Token usage summed over every attempt, the one in progress included (live: counted
        from the deltas received until the backend reports its own)."""
        return self._ledger.usage

    @property
    def snapshot(self) -> Any:
        """The partial value of the attempt in progress (plain JSON; the final value once the
        stream is done); a list of the calls' snapshots for a tool-call stream; ``None``
        before any output."""
        return self._ledger.snapshot

    @property
    def partial(self) -> Partial[T]:
        """The value so far, for UIs, typed without lying (:class:`~sdk.Partial`): read it
        with selectors, ``stream.partial.get(lambda p: p.address.city)``, typed ``str |
        None`` (``None`` until it arrived; a model only once every field it requires has);
        ``.value`` is the whole value once complete; ``.view`` the untyped view (a model built
        without validation, fields that have not arrived ``None`` and absent from
        ``model_fields_set``, an open string as far as it arrived; the plain snapshot for a
        dict schema; ``None`` before any output). Not validated: use it to show progress, and
        :meth:`result` for the value.

        Raises :class:`StreamUsageError` for a stream with several tool calls (use
        :attr:`snapshot`)."""
        attempt = self._ledger.current
        tp = getattr(self._compiled, "python_type", None)
        view = None if attempt is None else attempt.view(tp)
        return Partial(view, self.snapshot)

    @property
    def called_tools(self) -> bool:
        """Whether the reply (of the attempt in progress, or the last one) called tools: its
        values are the calls' arguments, one per call. ``False`` for a document, and for a
        text answer under ``tool_choice="auto"`` or ``"none"`` (the value is then the text).
        """
        attempt = self._ledger.current
        return attempt is not None and attempt.tool_mode

    @property
    def error(self) -> BaseException | None:
        """The error the stream failed with, if it did."""
        return self._error

    async def result(self) -> T:
        """The validated value: the model instance (or plain value) of the document, or of the
        single tool call. Reads the rest of the stream first (dispatching its fields) if it was
        not read to the end; raises the stream's error if it failed.

        Raises :class:`StreamUsageError` outside ``async with``, after the block was left
        before the stream ended, while another task reads the stream, or for a stream with
        several tool calls (use :meth:`results`).
        """
        values = await self.results()
        if len(values) != 1:
            raise StreamUsageError(
                f"the stream has {len(values)} tool calls; use `await s.results()` for the list"
            )
        return values[0]

    async def results(self) -> list[T]:
        """The validated values, one per tool call in index order (one element for a plain
        document). Same rules as :meth:`result`."""
        if self._state == _NEW:
            raise StreamUsageError("enter the stream with `async with` before reading it")
        if self._state == _CLOSED:
            raise StreamUsageError("the stream was closed before it ended; nothing to return")
        self._claim()
        self._iterated = True  # the events are consumed here; iterating later is misuse
        try:
            while self._state == _OPEN:
                self._events.clear()
                await self._advance()
            self._events.clear()
        finally:
            self._busy = False
        if self._state == _FAILED:
            assert self._error is not None
            raise self._error
        assert self._values is not None
        return list(self._values)

    def __aiter__(self) -> Stream[T]:
        if self._state == _NEW:
            raise StreamUsageError("enter the stream with `async with` before iterating it")
        if self._iterated:
            raise StreamUsageError("a stream can be iterated once (it was already read)")
        self._iterated = True
        return self

    async def fields(self) -> AsyncIterator[FieldEvent]:
        """Iterate the stream for its :class:`~sdk.FieldEvent` values only (typed so), leaving
        out text deltas and progress events; the same one-shot iteration as ``async for ev in
        s`` (its errors are raised the same way)."""
        async for event in self:
            if isinstance(event, FieldEvent):
                yield event

    async def __anext__(self) -> Event:
        if not self._iterated:
            raise StreamUsageError("iterate the stream with `async for`")
        self._claim()
        try:
            events = self._events
            while not events:
                if self._state == _OPEN:
                    await self._advance()
                elif self._state == _DONE:
                    raise StopAsyncIteration
                elif self._state == _FAILED:
                    assert self._error is not None
                    raise self._error
                else:
                    raise StreamUsageError("the stream was closed")
            return events.popleft()
        finally:
            self._busy = False

    async def __aenter__(self) -> Stream[T]:
        if self._state != _NEW:
            raise StreamUsageError("a stream can be entered once")
        if self._dispatcher.has_async:  # async callbacks run as tasks of the stream's group
            tg = anyio.create_task_group()
            await tg.__aenter__()
            self._tg = tg
            self._dispatcher.start(tg, self._source.interrupt)  # a failed one: stop at once
        self._state = _OPEN
        self._trace = stream_trace(self._trace_attributes)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        tg = self._tg
        unreported: CallbackError | None = None
        try:
            await self._source.close()
            if self._state == _OPEN:
                self._state = _CLOSED
            cancelled = exc is not None and isinstance(exc, anyio.get_cancelled_exc_class())
            policy = self._config.pending_callbacks
            await self._dispatcher.settle(cancel=cancelled or policy == "cancel")
            failure = self._dispatcher.failure
            if failure is not None and failure is not self._error:
                if exc is None:
                    unreported = failure
                elif not cancelled:
                    exc.add_note(f"also, while the stream was being left: {failure}")
        finally:
            # The body's exception is not handed to the task group: it would wrap it in an
            # ExceptionGroup. Callbacks never raise into the group (the dispatcher catches).
            if tg is not None:
                await tg.__aexit__(None, None, None)
        if self._trace is not None:
            trace, self._trace = self._trace, None
            trace.ended(
                attempts=len(self._ledger.records),
                usage=self.usage,
                error=self._error or unreported or exc,
            )
        if unreported is not None:
            # An async callback failed after the caller stopped reading: never swallowed.
            raise unreported
        return False

    # -- the attempt loop -------------------------------------------------------------------

    def _claim(self) -> None:
        if self._busy:
            raise StreamUsageError("another task is reading this stream")
        self._busy = True

    def _begin(self) -> None:
        attempt = self._ledger.begin()
        if self._trace is not None:
            self._trace.attempt_started(attempt.number)
        if self._progress:
            self._events.append(AttemptStarted(attempt.number))
        self._source.start(attempt)
        state = self._ledger.current
        if state is not None:
            state.prompt_estimate = self._source.prompt_estimate
            state.server_policy = self._source.server_policy

    async def _advance(self) -> None:
        """One step: start an attempt, or pull one chunk and process it, or end the attempt.
        Afterwards ``_state`` says where the stream is (its errors are recorded, not raised)."""
        dispatcher = self._dispatcher
        if dispatcher.failure is not None:
            await self._fail(dispatcher.failure)
            return
        source = self._source
        try:
            if not source.started:
                self._begin()  # calls a callable source: its errors are the attempt's
            # While async callbacks run, one may fail during the wait: it interrupts the pull.
            chunk = await source.pull(interruptible=bool(dispatcher.running))
        except Exception as exc:
            await self._attempt_failed(exc)
            return
        except BaseException:
            # Cancelled (or KeyboardInterrupt): the generation must stop too.
            await source.close()
            raise
        if chunk is Pulled.END:
            await self._end_attempt()
            return
        if chunk is Pulled.INTERRUPTED:  # by a callback's failure
            assert dispatcher.failure is not None
            await self._fail(dispatcher.failure)
            return
        attempt = self._ledger.current
        assert attempt is not None
        try:
            new = attempt.feed(chunk)
        except Exception as exc:
            await self._attempt_failed(exc)
            return
        # Text that made no event (a string or a number growing, a key being read): pull the
        # next chunk here rather than go back to the caller first, while nothing may
        # interrupt the pull (the per-chunk path of a field-dense document). The source's
        # own __anext__ is awaited (what pull(interruptible=False) does), not a coroutine of
        # pull() around each chunk.
        if not new and type(chunk) is str and not dispatcher.running:
            pull = source.puller()
            while not new and type(chunk) is str and not dispatcher.running:
                try:
                    chunk = await pull()
                except StopAsyncIteration:
                    source.ended()
                    await self._end_attempt()
                    return
                except Exception as exc:
                    await self._attempt_failed(exc)
                    return
                except BaseException:
                    await source.close()
                    raise
                try:
                    new = attempt.feed(chunk)
                except Exception as exc:
                    await self._attempt_failed(exc)
                    return
        if self._progress and type(chunk) is Delta and chunk.usage is not None:
            self._events.append(UsageReported(attempt.number, attempt.usage))
        if new:
            try:
                await dispatcher.dispatch_all(new, self._events)
            except CallbackError as exc:
                await self._fail(exc)
                return
        if (
            self._backtrack
            and type(chunk) is Delta
            and chunk.finish_reason is not None
            and source.rewindable
        ):
            # Read no further: a generation that finished can still be rewound, one asked for
            # more cannot.
            await self._end_attempt()

    async def _end_attempt(self) -> None:
        """The source ended: finish and validate the attempt's documents, finish or retry."""
        attempt = self._ledger.current
        assert attempt is not None
        try:
            last = attempt.finish()
        except Exception as exc:
            await self._attempt_failed(exc)
            return
        try:
            await self._dispatcher.dispatch_all(last, self._events)
        except CallbackError as exc:
            await self._fail(exc)
            return
        try:
            values = attempt.close()
        except Exception as exc:
            await self._attempt_failed(exc)
            return
        # Done reading; the stream has succeeded once its async callbacks have too.
        await self._dispatcher.wait()
        if self._dispatcher.failure is not None:
            await self._fail(self._dispatcher.failure)
            return
        info = self._ledger.record(None)
        if self._trace is not None:
            self._trace.attempt_ended(info)
        self._values = values
        self._state = _DONE
        if self._config.progress:
            self._events.append(StreamEnded(len(self._ledger.records), self.usage))

    async def _attempt_failed(self, exc: Exception) -> None:
        """Rewind the generation (``Retry(backtrack=True)``), or close the source at once, then
        start the next attempt or fail the stream. (A source that has ended cannot rewind, and
        closing it does nothing.)"""
        current = self._ledger.current
        if current is not None and self._ledger.in_progress:
            exc = current.diagnose(exc)  # the server's fault, not the model's?
        if self._backtrack and await self._rewind(exc):
            return
        await self._source.close()
        info = self._ledger.record(exc)
        number = info.number
        retry = self._config.retry
        records = self._ledger.records
        wait = (
            next_try(exc, records, retry=retry, max_retries=self._config.max_retries)
            if self._source.retryable
            else None
        )
        retrying = wait is not None
        if self._trace is not None:
            self._trace.attempt_ended(info, retrying=retrying)
        if self._config.progress:
            self._events.append(AttemptFailed(number, exc, retrying, info.usage))
        if wait is None:
            await self._fail(exc if retry is None else retry.final_error(exc, records))
            return
        if retry is not None:
            self._ledger.learn(retry, info)
        if wait > 0:
            await (retry or NO_RETRY).sleep(wait)
        # The next _advance() starts the next attempt.

    async def _rewind(self, exc: Exception) -> bool:
        """Go back to where the offending value began, in the same generation, and go on as a
        new attempt that starts with what was kept. False when that cannot be done here (then
        the caller starts afresh)."""
        attempt, retry = self._ledger.current, self._config.retry
        assert attempt is not None and retry is not None
        start = exc.start if isinstance(exc, SchemaViolation) else None
        if (
            start is None
            or not attempt.rewindable
            or not self._source.rewindable
            or not retry.should_retry(exc, answers(self._ledger.records) + 1)
        ):
            return False
        try:
            rewound = await self._source.rewind(start)
        except Exception:  # no continuation left, or an offset the engine refuses
            logger.debug("could not rewind; starting afresh", exc_info=True)
            return False
        assert isinstance(exc, SchemaViolation)
        text = attempt.text
        kept = text[: rewound.offset]
        info = self._ledger.record(exc)
        number = self._ledger.resume(kept, info)
        if self._trace is not None:
            self._trace.attempt_ended(info, retrying=True)
            self._trace.attempt_started(number)
        if self._progress:
            rejected = _rejected(text, start, exc.offset)
            self._events.append(AttemptFailed(info.number, exc, True, info.usage))
            self._events.append(Backtracked(exc.path, rejected, exc, rewound.offset, info.number))
            self._events.append(AttemptStarted(number))
        return True

    async def _fail(self, error: BaseException) -> None:
        """Fail the stream with ``error`` (sticky); the attempt in progress, if not recorded
        yet, is recorded with it. The iterator raises it after the events already queued."""
        await self._source.close()
        if self._ledger.in_progress:
            info = self._ledger.record(error)
            if self._trace is not None:
                self._trace.attempt_ended(info, retrying=False)
        if self._state == _OPEN:
            self._state = _FAILED
            self._error = error
            # No callback of a failed stream is still running when it raises.
            await self._dispatcher.settle(cancel=self._config.pending_callbacks == "cancel")


def _rejected(text: str, start: int, offset: int | None) -> str:
    """The offending value's text in the output ``text``: from ``start`` to the character at
    ``offset`` where the violation became certain. A number (or ``true``...) is final only at
    the character after it: that delimiter is not the value's."""
    end = len(text) if offset is None else min(len(text), offset + 1)
    piece = text[start:end]
    if piece[:1] not in ('"', "[", "{"):
        piece = piece.rstrip(" \t\r\n,]}") or piece
    return piece
