"""The dispatcher: runs ``on_field`` callbacks, once per (part, path, value) per stream, where the
part is which tool call or tagged segment holds the field (``FieldEvent.part``).

Sync callbacks run inline, in the stream's task, before the event reaches the iterator (a
sync callback that returns an awaitable, such as ``lambda ev: send(ev)``, has it awaited there
too). ``async def`` callbacks run as tasks in the stream's task group, at most
``max_concurrency`` at a time (the rest wait their turn in order); the stream does not wait for
them while it reads, only at its end.

A callback error is an error of the stream unless the caller chose otherwise
(``on_callback_error``): ``"raise"`` (the default) fails the stream with
:class:`~sdk.CallbackError` (its ``__cause__`` is the callback's exception); ``"log"`` logs it
on the ``fieldstream`` logger and goes on; ``"ignore"`` goes on. Nothing is swallowed unless asked.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, MutableSequence
from typing import Any, Literal, TypeAlias

import anyio
from anyio.abc import TaskGroup

from sdk._constants import DEFAULT_CALLBACK_CONCURRENCY
from sdk._errors import CallbackError, Path, pointer
from sdk._events import FieldEvent
from sdk._stream._path_patterns import PatternSet

__all__ = ["Callback", "CallbackErrorPolicy", "Dispatcher", "OnField", "idempotency_key"]

logger = logging.getLogger("fieldstream")

Callback: TypeAlias = Callable[[FieldEvent], Any]
"""A field callback: ``def cb(ev) -> None`` or ``async def cb(ev) -> None``."""
OnField: TypeAlias = Mapping[str, Callback] | Callback | None
"""``on_field``: patterns mapped to callbacks, or one callback for every field (``"/**"``)."""
CallbackErrorPolicy: TypeAlias = Literal["raise", "log", "ignore"]


def idempotency_key(tool_call: Hashable, path: Path, value: Any) -> tuple[Hashable, Path, str]:
    """The identity of a field for exactly-once dispatch: its part (the tool call, or
    ``FieldEvent.part``: the call, its tool, the tagged segment), the path, and the value
    as canonical JSON (sorted keys, no spaces), so ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}``
    are the same field value. ``1`` and ``1.0`` are different (their JSON differs)."""
    try:
        canon = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        canon = repr(value)
    return (tool_call, path, canon)


def _is_async(cb: Callback) -> bool:
    if inspect.iscoroutinefunction(cb):
        return True
    call = getattr(cb, "__call__", None)  # noqa: B004 - an object with `async def __call__`
    return call is not None and inspect.iscoroutinefunction(call)


class Dispatcher:
    """Routes field events to the callbacks whose pattern matches, exactly once per field.

    Use: ``start(task_group, on_failure)`` once the task group runs (a stream opens one only
    when :attr:`has_async`); ``admit(ev)`` to ask whether an event is new; ``await
    dispatch(ev)`` for each new one (``dispatch_all`` does both); at the end ``await wait()``
    (all async callbacks done) or ``cancel()`` (cancel those still running).
    ``on_error`` and ``max_concurrency`` come checked (:class:`~sdk._options.StreamConfig`).
    """

    def __init__(
        self,
        on_field: OnField,
        *,
        on_error: CallbackErrorPolicy = "raise",
        max_concurrency: int = DEFAULT_CALLBACK_CONCURRENCY,
    ) -> None:
        self._patterns: PatternSet[tuple[Callback, bool]] = PatternSet()
        if on_field is None:
            pairs: list[tuple[str, Any]] = []
        elif isinstance(on_field, Mapping):
            pairs = list(on_field.items())
        elif callable(on_field):
            pairs = [("/**", on_field)]
        else:
            raise TypeError(
                "on_field must be a mapping of path patterns to callbacks, or a callable"
            )
        self.has_async = False
        """Whether any callback is async (only then does the stream need a task group)."""
        for pattern, cb in pairs:
            if not callable(cb):
                raise TypeError(f"on_field[{pattern!r}] is not callable: {cb!r}")
            is_async = _is_async(cb)
            self.has_async |= is_async
            self._patterns.add(pattern, (cb, is_async))
        self.has_callbacks = len(self._patterns) > 0
        """Whether any callback was given (else :meth:`dispatch_all` only admits)."""
        self.running: set[anyio.CancelScope] = set()
        """The async callbacks started and not finished (waiting for the limiter included)."""
        self._on_error = on_error
        self._max_concurrency = max_concurrency
        # The values fired at each (tool call, path). Canonical JSON is computed only when a
        # field repeats (a retry, a duplicate key): encoding every value, containers included,
        # would re-serialize each subtree once per level on the per-chunk path.
        self._fired: dict[tuple[Hashable, Path], list[Any]] = {}
        self._tg: TaskGroup | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._on_failure: Callable[[], None] | None = None
        self._idle: anyio.Event | None = None
        self.failure: CallbackError | None = None
        """The first callback error (policy ``"raise"``), sticky."""

    def start(self, tg: TaskGroup, on_failure: Callable[[], None]) -> None:
        """Attach to the stream's task group; ``on_failure()`` is called when an async
        callback fails under policy ``"raise"`` (the error is :attr:`failure`), so the stream
        can stop at once. (The stream passes its source's ``interrupt``, not a method of its
        own: a stream that refers to itself through its dispatcher would be freed only by the
        garbage collector, with all it holds.)"""
        self._tg = tg
        self._limiter = anyio.CapacityLimiter(self._max_concurrency)
        self._on_failure = on_failure

    def admit(self, event: FieldEvent) -> bool:
        """True the first time this (part, path, value) is seen in the stream, across attempts;
        False for a repeat. The part is ``event.part`` (a tool call, a tagged segment)."""
        tool_call = event.part
        field = (tool_call, event.path)
        seen = self._fired.get(field)
        if seen is None:
            self._fired[field] = [event.value]
            return True
        key = idempotency_key(tool_call, event.path, event.value)
        if any(idempotency_key(tool_call, event.path, v) == key for v in seen):
            return False
        seen.append(event.value)
        return True

    async def dispatch_all(self, events: Iterable[Any], into: MutableSequence[Any]) -> None:
        """Append to ``into`` each of ``events`` that is new: every event but a
        :class:`~sdk.FieldEvent` that :meth:`admit` calls a repeat; each new field event is
        dispatched (:meth:`dispatch`) before it is appended."""
        callbacks = self.has_callbacks
        for ev in events:
            if type(ev) is FieldEvent:
                if not self.admit(ev):
                    continue
                if callbacks:
                    await self.dispatch(ev)
            into.append(ev)

    async def dispatch(self, event: FieldEvent) -> None:
        """Run the callbacks matching ``event.path``: sync ones now (raising
        :class:`CallbackError` under policy ``"raise"``), async ones as tasks."""
        for cb, is_async in self._patterns.match(event.path):
            if is_async:
                self._spawn(cb, event)
                continue
            try:
                result = cb(event)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                error = self._handle(exc, event.path)
                if error is not None:
                    raise error from exc

    def _spawn(self, cb: Callback, event: FieldEvent) -> None:
        if self._tg is None:
            raise RuntimeError("Dispatcher.start() was not called")
        scope = anyio.CancelScope()
        self.running.add(scope)
        self._tg.start_soon(self._run, cb, event, scope, name=f"on_field {event.pointer or '/'}")

    async def _run(self, cb: Callback, event: FieldEvent, scope: anyio.CancelScope) -> None:
        assert self._limiter is not None
        try:
            with scope:
                async with self._limiter:
                    try:
                        await cb(event)
                    except Exception as exc:
                        error = self._handle(exc, event.path)
                        if error is not None and self._on_failure is not None:
                            self._on_failure()
        finally:
            self.running.discard(scope)
            if not self.running and self._idle is not None:
                self._idle.set()

    def _handle(self, exc: Exception, path: Path) -> CallbackError | None:
        """Apply the policy to a callback's exception; the error to raise, if any."""
        where = pointer(path) or "/"
        if self._on_error == "raise":
            error = CallbackError(f"the on_field callback for {where} raised {exc!r}", path=path)
            error.__cause__ = exc
            if self.failure is None:
                self.failure = error
            return error
        if self._on_error == "log":
            logger.error("on_field callback for %s raised", where, exc_info=exc)
        return None

    async def wait(self) -> None:
        """Wait until every async callback started so far has finished."""
        while self.running:
            self._idle = anyio.Event()
            await self._idle.wait()

    def cancel(self) -> None:
        """Cancel the async callbacks still running or waiting for their turn."""
        for scope in list(self.running):
            scope.cancel()

    async def settle(self, *, cancel: bool) -> None:
        """End the async callbacks still running: ``cancel`` them, or wait for them. Either
        way none is running when this returns."""
        if cancel:
            self.cancel()
        await self.wait()
