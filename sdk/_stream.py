"""The stream: reads a source of text deltas, tracks fields, dispatches, aborts and retries.

:func:`stream_structured` is the async shell around the sans-I/O :class:`~sdk.FieldTracker`. It
only moves data: it pulls one delta at a time from the source, feeds the tracker, hands new
field events to the dispatcher and the iterator, and on a failed attempt closes the source at
once and either starts the next attempt or raises.

What a :class:`~sdk.Delta` means here: ``text`` goes to the tracker of its ``tool_call``
(``None``: the message's document; an index: that tool call's arguments, one tracker each);
``usage`` is added to the attempt's usage; ``refusal`` pieces are joined into a
:class:`~sdk.RefusedError`; ``finish_reason`` ends the parsing (later deltas only add usage):
``"length"`` makes an unfinished document a :class:`~sdk.TruncatedError` (reason
``"length"``), ``"content_filter"`` is a :class:`~sdk.ContentFilteredError`. Both are raised
when the source ends, so that usage sent after the finish reason is counted.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any, Literal, NoReturn, TypeAlias

import anyio
from anyio.abc import TaskGroup

from sdk._backend import Delta, Message, Usage
from sdk._dispatch import CallbackErrorPolicy, Dispatcher, OnField
from sdk._errors import (
    CallbackError,
    ContentFilteredError,
    RefusedError,
    RetriesExhausted,
    StreamError,
    StreamUsageError,
    TruncatedError,
)
from sdk._events import FieldEvent, StreamEvent
from sdk._retry import Attempt, AttemptInfo, Retry, ToolCallText
from sdk._tracker import FieldTracker

__all__ = ["PendingCallbacks", "Source", "Stream", "stream_structured"]

Chunk: TypeAlias = str | Delta
Source: TypeAlias = AsyncIterable[Chunk] | Callable[[Attempt], AsyncIterable[Chunk]]
"""An async iterable of text (``str``) or :class:`~sdk.Delta` values, or a callable that
starts one for an :class:`~sdk.Attempt` (only a callable source can be retried)."""
PendingCallbacks: TypeAlias = Literal["cancel", "wait"]

# How long closing a source may take while cancelled or failing; closing is shielded from
# cancellation (the generation must stop), but a source that hangs in aclose() must not hang
# the caller forever.
_CLOSE_TIMEOUT = 10.0

logger = logging.getLogger("sdk")

_NEW, _OPEN, _DONE, _FAILED, _CLOSED = "new", "open", "done", "failed", "closed"


def stream_structured(
    source: Source,
    *,
    schema: Any,
    on_field: OnField = None,
    retry: Retry | None = None,
    on_callback_error: CallbackErrorPolicy = "raise",
    max_concurrency: int = 8,
    pending_callbacks: PendingCallbacks = "cancel",
    lenient: bool = False,
    deltas: bool = False,
) -> Stream:
    """Stream a structured document from ``source``; use the result with ``async with``.

    - ``source``: an async iterable of ``str`` / :class:`~sdk.Delta`, or a callable taking an
      :class:`~sdk.Attempt` and returning one (needed for ``retry``).
    - ``schema``: a pydantic model class, a ``TypeAdapter``-able type, or a JSON Schema dict.
    - ``on_field``: ``{pattern: callback}`` (see :mod:`sdk._patterns`), or one callback for every
      field. Callbacks take the :class:`~sdk.FieldEvent`; they may be ``async``.
    - ``retry``: a :class:`~sdk.Retry` policy; ``None`` means one attempt.
    - ``on_callback_error``: ``"raise"`` (fail the stream with :class:`~sdk.CallbackError`),
      ``"log"`` or ``"ignore"``.
    - ``max_concurrency``: how many async callbacks may run at once.
    - ``pending_callbacks``: when the stream fails or is left before its end, ``"cancel"`` the
      async callbacks still running, or ``"wait"`` for them. (A cancelled consumer always
      cancels them: waiting would defeat the caller's timeout.) On success the stream always
      waits for them, so their errors are the stream's.
    - ``lenient``: accept prose or a code fence around the document (unconstrained servers).
    - ``deltas``: also yield :class:`~sdk.TextDelta` events as string fields stream.

    Raises ``TypeError``/``ValueError`` at once for bad arguments (an invalid pattern, a schema
    the tracker cannot compile, ``retry`` with a source that is not callable).
    """
    return Stream(
        source,
        schema=schema,
        on_field=on_field,
        retry=retry,
        on_callback_error=on_callback_error,
        max_concurrency=max_concurrency,
        pending_callbacks=pending_callbacks,
        lenient=lenient,
        deltas=deltas,
    )


class Stream:
    """A structured stream: an async context manager and a one-shot async iterator.

    ``async for ev in s`` yields each :class:`~sdk.FieldEvent` once per stream (and
    :class:`~sdk.TextDelta` events if asked for), then ends when the document is complete,
    valid, and every async callback has finished; it raises the stream's error otherwise.
    ``await s.result()`` gives the validated value (a model instance, or the plain value for a
    dict schema), reading whatever is left first. Leaving the ``async with`` block closes the
    source (the generation stops) whatever state the stream is in.

    Exactly once: a field is identified by its tool call, its path and its value (as canonical
    JSON). When a retry writes a field with the same value as an earlier attempt, it is not
    yielded or dispatched again; when the value differs it is, with ``ev.attempt`` saying
    which attempt wrote it. ``TextDelta`` events are live text and are not deduplicated: a
    retry streams its strings again, under the new ``attempt`` number.
    """

    def __init__(
        self,
        source: Source,
        *,
        schema: Any,
        on_field: OnField = None,
        retry: Retry | None = None,
        on_callback_error: CallbackErrorPolicy = "raise",
        max_concurrency: int = 8,
        pending_callbacks: PendingCallbacks = "cancel",
        lenient: bool = False,
        deltas: bool = False,
    ) -> None:
        if isinstance(source, AsyncIterable):
            self._plain: AsyncIterable[Chunk] | None = source
            self._factory: Callable[[Attempt], AsyncIterable[Chunk]] | None = None
        elif callable(source):
            self._plain = None
            self._factory = source
        else:
            raise TypeError(
                "source must be an async iterable of str/Delta, or a callable taking an Attempt"
            )
        if retry is not None and not isinstance(retry, Retry):
            raise TypeError(f"retry must be a Retry, not {type(retry).__name__}")
        if retry is not None and retry.max_attempts > 1 and self._factory is None:
            raise ValueError(
                "a plain async iterable cannot be read twice, so it cannot be retried: pass a "
                "callable that takes an Attempt and returns a fresh iterable"
            )
        if pending_callbacks not in ("cancel", "wait"):
            raise ValueError(
                f"pending_callbacks must be 'cancel' or 'wait', not {pending_callbacks!r}"
            )
        self._schema = schema
        self._lenient = lenient
        self._deltas = deltas
        self._retry = retry
        self._pending_policy = pending_callbacks
        self._dispatcher = Dispatcher(
            on_field, on_error=on_callback_error, max_concurrency=max_concurrency
        )
        # Compiles the schema now, so a bad schema fails at the call, not mid-stream; the
        # first attempt's document uses it.
        self._first_tracker: FieldTracker | None = self._new_tracker(1)
        self._json_schema: dict[str, Any] = self._first_tracker.json_schema
        self._schema_name: str = self._first_tracker.schema_name

        self._state = _NEW
        self._tg: TaskGroup | None = None
        self._events: deque[StreamEvent] = deque()
        self._iterated = False
        self._busy = False
        self._error: BaseException | None = None
        self._values: list[Any] | None = None
        self._attempts: list[AttemptInfo] = []
        self._feedback: list[Message] = []
        self._pull_scope: anyio.CancelScope | None = None
        # The attempt in progress.
        self._number = 0
        self._it: AsyncIterator[Chunk] | None = None
        self._trackers: dict[int | None, FieldTracker] = {}
        self._texts: dict[int | None, list[str]] = {}
        self._names: dict[int, str | None] = {}
        self._refusal: list[str] = []
        self._finish: str | None = None
        self._usage = Usage()

    # -- public surface ---------------------------------------------------------------------

    @property
    def json_schema(self) -> dict[str, Any]:
        """The resolved JSON Schema of ``schema`` (what a backend sends)."""
        return self._json_schema

    @property
    def schema_name(self) -> str:
        """A name for the schema (the model's class name, for a model)."""
        return self._schema_name

    @property
    def attempt(self) -> int:
        """The number of the attempt in progress (or the last one); 0 before the first."""
        return self._number

    @property
    def attempts(self) -> list[AttemptInfo]:
        """The attempts that ended, in order: number, error (``None`` for the successful one),
        usage and the text received."""
        return list(self._attempts)

    @property
    def usage(self) -> Usage:
        """Token usage summed over every attempt, the one in progress included."""
        total = self._usage if self._in_progress() else Usage()
        for info in self._attempts:
            total = total + info.usage
        return total

    @property
    def snapshot(self) -> Any:
        """The partial value of the attempt in progress (plain JSON; the final value once the
        stream is done); a list of the calls' snapshots for a tool-call stream; ``None``
        before any output."""
        trackers = self._trackers
        if not trackers:
            return None
        if self._is_tool_stream():
            return [trackers[k].snapshot for k in self._tool_keys()]
        tracker = trackers.get(None)
        return None if tracker is None else tracker.snapshot

    @property
    def error(self) -> BaseException | None:
        """The error the stream failed with, if it did."""
        return self._error

    async def result(self) -> Any:
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

    async def results(self) -> list[Any]:
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

    def __aiter__(self) -> Stream:
        if self._state == _NEW:
            raise StreamUsageError("enter the stream with `async with` before iterating it")
        if self._iterated:
            raise StreamUsageError("a stream can be iterated once (it was already read)")
        self._iterated = True
        return self

    async def __anext__(self) -> StreamEvent:
        if not self._iterated:
            raise StreamUsageError("iterate the stream with `async for`")
        self._claim()
        try:
            if self._state == _OPEN and self._dispatcher.failure is not None:
                await self._fail(self._dispatcher.failure)
            while not self._events:
                if self._state == _DONE:
                    raise StopAsyncIteration
                if self._state == _FAILED:
                    assert self._error is not None
                    raise self._error
                if self._state != _OPEN:
                    raise StreamUsageError("the stream was closed")
                await self._advance()
            return self._events.popleft()
        finally:
            self._busy = False

    async def __aenter__(self) -> Stream:
        if self._state != _NEW:
            raise StreamUsageError("a stream can be entered once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._dispatcher.start(tg, self._on_callback_failure)
        self._state = _OPEN
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        tg = self._tg
        assert tg is not None
        unreported: CallbackError | None = None
        try:
            await self._close_source()
            if self._state == _OPEN:
                self._state = _CLOSED
            cancelled = exc is not None and isinstance(exc, anyio.get_cancelled_exc_class())
            if cancelled or self._pending_policy == "cancel":
                self._dispatcher.cancel()
            else:
                await self._dispatcher.wait()
            failure = self._dispatcher.failure
            if failure is not None and failure is not self._error:
                if exc is None:
                    unreported = failure
                elif not cancelled:
                    exc.add_note(f"also, while the stream was being left: {failure}")
        finally:
            # The body's exception is not handed to the task group: it would wrap it in an
            # ExceptionGroup. Callbacks never raise into the group (the dispatcher catches).
            await tg.__aexit__(None, None, None)
        if unreported is not None:
            # An async callback failed after the caller stopped reading: never swallowed.
            raise unreported
        return False

    # -- the attempt loop -------------------------------------------------------------------

    def _in_progress(self) -> bool:
        """An attempt has begun and is not recorded in ``_attempts`` yet."""
        return self._number > 0 and (
            not self._attempts or self._attempts[-1].number != self._number
        )

    def _claim(self) -> None:
        if self._busy:
            raise StreamUsageError("another task is reading this stream")
        self._busy = True

    def _new_tracker(self, attempt: int) -> FieldTracker:
        return FieldTracker(
            self._schema, lenient=self._lenient, attempt=attempt, deltas=self._deltas
        )

    def _is_tool_stream(self) -> bool:
        return any(k is not None for k in self._trackers)

    def _tool_keys(self) -> list[int]:
        return sorted(k for k in self._trackers if k is not None)

    def _begin(self) -> None:
        self._number += 1
        self._trackers = {}
        self._texts = {}
        self._names = {}
        self._refusal = []
        self._finish = None
        self._usage = Usage()
        if self._factory is not None:
            previous = self._attempts[-1].error if self._attempts else None
            attempt = Attempt(self._number, tuple(self._feedback), previous)
            self._it = aiter(self._factory(attempt))
        else:
            assert self._plain is not None
            self._it = aiter(self._plain)

    async def _advance(self) -> None:
        """One step: pull one chunk and process it, or end the attempt. Raises the stream's
        error when it fails; afterwards ``_state`` says where the stream is."""
        if self._dispatcher.failure is not None:
            await self._fail(self._dispatcher.failure)
        interrupted = ended = False
        failure: Exception | None = None
        try:
            if self._it is None:
                self._begin()  # calls a callable source: its errors are the attempt's
            it = self._it
            assert it is not None
            if self._dispatcher.running:
                # An async callback may fail while we wait on the source: it cancels this
                # scope so the failure is seen at once, not at the next chunk. (Only then:
                # a cancel scope per read is not free.)
                with anyio.CancelScope() as scope:
                    self._pull_scope = scope
                    chunk = await it.__anext__()
                interrupted = scope.cancelled_caught
            else:
                chunk = await it.__anext__()
        except StopAsyncIteration:
            ended = True
        except Exception as exc:
            failure = exc
        except BaseException:
            # Cancelled (or KeyboardInterrupt): the generation must stop too.
            await self._close_source()
            raise
        finally:
            self._pull_scope = None
        # Handled out here, so that the errors raised do not chain to StopAsyncIteration.
        if ended:
            await self._end_attempt()
            return
        if failure is not None:
            await self._attempt_failed(failure)
            return
        if interrupted:
            assert self._dispatcher.failure is not None
            await self._fail(self._dispatcher.failure)
        try:
            key, new = self._take(chunk)
            if new:
                await self._dispatch_new(key, new)
        except CallbackError as exc:
            await self._fail(exc)
        except Exception as exc:
            await self._attempt_failed(exc)

    def _take(self, chunk: Chunk) -> tuple[int | None, Sequence[StreamEvent]]:
        """Feed one chunk to its tracker: its tool-call index and the tracker's new events."""
        if isinstance(chunk, str):
            text, forced, key = chunk, False, None
        elif not isinstance(chunk, Delta):
            raise TypeError(f"a source must yield str or Delta, not {type(chunk).__name__}")
        else:
            if chunk.usage is not None:
                self._usage = self._usage + chunk.usage
            if chunk.refusal:
                self._refusal.append(chunk.refusal)
            if chunk.tool_call is not None and chunk.tool_name is not None:
                self._names[chunk.tool_call] = chunk.tool_name
            if chunk.finish_reason is not None and self._finish is None:
                self._finish = chunk.finish_reason
                # Nothing is parsed after the end of the generation (the source may still
                # send usage).
                if chunk.text:
                    return chunk.tool_call, self._feed(chunk.text, chunk.forced, chunk.tool_call)
                return None, ()
            text, forced, key = chunk.text, chunk.forced, chunk.tool_call
        if text and self._finish is None:
            return key, self._feed(text, forced, key)
        return None, ()

    def _feed(self, text: str, forced: bool, key: int | None) -> Sequence[StreamEvent]:
        texts = self._texts.get(key)
        if texts is None:
            texts = self._texts[key] = []
        texts.append(text)
        tracker = self._trackers.get(key)
        if tracker is None:
            if key is None and self._is_tool_stream():
                return ()  # prose next to tool calls: kept in the attempt's text, not parsed
            if key is not None:
                # The first tool call: any message text before it was prose, not the document.
                self._trackers.pop(None, None)
            tracker = self._take_tracker()
            tracker.tool_call = key  # stamped on its events, so parallel calls stay apart
            self._trackers[key] = tracker
        return tracker.feed(text, forced=forced)

    def _take_tracker(self) -> FieldTracker:
        if self._first_tracker is not None and self._number == 1:
            tracker, self._first_tracker = self._first_tracker, None
            return tracker
        return self._new_tracker(self._number)

    async def _dispatch_new(self, key: int | None, new: Sequence[StreamEvent]) -> None:
        dispatcher = self._dispatcher
        callbacks = dispatcher.has_callbacks
        for ev in new:
            if isinstance(ev, FieldEvent):
                if not dispatcher.admit(key, ev):
                    continue
                if callbacks:
                    await dispatcher.dispatch(ev)
            self._events.append(ev)

    async def _end_attempt(self) -> None:
        """The source ended: check why, validate the whole document(s), finish or retry."""
        self._it = None
        if self._refusal:
            await self._attempt_failed(RefusedError("".join(self._refusal)), closed=True)
            return
        if self._finish == "content_filter":
            error = ContentFilteredError(snapshot=self.snapshot)
            await self._attempt_failed(error, closed=True)
            return
        if not self._trackers:
            self._trackers[None] = self._take_tracker()
        keys: list[int | None] = list(self._tool_keys()) if self._is_tool_stream() else [None]
        try:
            for key in keys:
                # A root number is final only at the end of the input.
                last = self._trackers[key].finish()
                if last:
                    await self._dispatch_new(key, last)
            values = [self._trackers[key].close() for key in keys]
        except CallbackError as exc:
            await self._fail(exc)
        except TruncatedError as exc:
            if self._finish == "length":
                exc = TruncatedError(
                    "the output hit the token limit (finish_reason 'length') before the "
                    "document ended",
                    snapshot=exc.snapshot,
                    open_paths=exc.open_paths,
                    reason="length",
                )
            await self._attempt_failed(exc, closed=True)
            return
        except Exception as exc:
            await self._attempt_failed(exc, closed=True)
            return
        # Done reading; the stream has succeeded once its async callbacks have too.
        await self._dispatcher.wait()
        if self._dispatcher.failure is not None:
            await self._fail(self._dispatcher.failure)
        self._record(None)
        self._values = values
        self._state = _DONE

    def _record(self, error: BaseException | None) -> AttemptInfo:
        tool_calls = tuple(
            ToolCallText(k, self._names.get(k), "".join(self._texts.get(k, ())))
            for k in sorted(k for k in self._texts if k is not None)
        )
        info = AttemptInfo(
            number=self._number,
            error=error,
            usage=self._usage,
            text="".join(self._texts.get(None, ())),
            tool_calls=tool_calls,
        )
        self._attempts.append(info)
        return info

    async def _attempt_failed(self, exc: Exception, *, closed: bool = False) -> None:
        """Close the source at once, then start the next attempt or fail the stream."""
        if not closed:
            await self._close_source()
        self._it = None
        info = self._record(exc)
        retry = self._retry
        if retry is None or self._factory is None or not retry.should_retry(exc, self._number):
            if (
                retry is not None
                and retry.max_attempts > 1
                and self._number >= retry.max_attempts
                and isinstance(exc, StreamError)
                and exc.retryable
            ):
                error = RetriesExhausted([a.error for a in self._attempts if a.error is not None])
                error.__cause__ = exc
                await self._fail(error)
            await self._fail(exc)
        self._feedback.extend(retry.feedback(info))
        delay = retry.delay(exc, self._number)
        if delay > 0:
            await retry.sleep(delay)
        # The next _advance() starts the next attempt.

    async def _fail(self, error: BaseException) -> NoReturn:
        """Fail the stream with ``error`` (sticky) and raise it; the attempt in progress, if
        not recorded yet, is recorded with it."""
        await self._close_source()
        if self._in_progress():
            self._record(error)
        if self._state == _OPEN:
            self._state = _FAILED
            self._error = error
            if self._pending_policy == "cancel":
                self._dispatcher.cancel()
            # Either way, no callback of a failed stream is still running when it raises.
            await self._dispatcher.wait()
        raise error

    def _on_callback_failure(self, error: CallbackError) -> None:
        scope = self._pull_scope
        if scope is not None:
            scope.cancel()

    async def _close_source(self) -> None:
        it, self._it = self._it, None
        if it is None:
            return
        aclose = getattr(it, "aclose", None)
        if aclose is None:
            return
        try:
            with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True):
                await aclose()
        except Exception:
            # The generation is being abandoned; a failure to close it must not hide the
            # error that made us close it. Logged, not raised.
            logger.warning("closing the stream's source failed", exc_info=True)
