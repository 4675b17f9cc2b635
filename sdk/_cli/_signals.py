"""SIGTERM for the ``fieldstream`` command: it ends a run as Ctrl-C does, in order.

While the event loop runs, :func:`until_sigterm` turns SIGTERM into a cancellation of the run
(the stream or the batch closes as on any cancellation: generations stop, what was written
stays) followed by :class:`Terminated`; outside it (reading the schema, before the loop
starts), :func:`terminate_on_sigterm`'s handler raises :class:`Terminated` where the program
is. Either way the command catches it as it catches Ctrl-C's ``KeyboardInterrupt``: its last
line says so, and the exit status is 143.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TypeVar

import anyio

__all__ = ["Terminated", "terminate_on_sigterm", "until_sigterm"]

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """The command was sent SIGTERM (exit code 143). A ``KeyboardInterrupt``, so that what
    ends a run on Ctrl-C ends it the same way on SIGTERM."""

    def __init__(self) -> None:
        super().__init__("terminated (SIGTERM)")


def _can_handle() -> bool:
    return hasattr(signal, "SIGTERM") and threading.current_thread() is threading.main_thread()


def terminate_on_sigterm() -> Callable[[], None]:
    """From now on, SIGTERM raises :class:`Terminated` in the main thread; the function
    returned puts back the handler that was there. Does nothing off the main thread (where
    signal handlers cannot be set) or on a platform without SIGTERM."""
    if not _can_handle():
        return lambda: None

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, raise_terminated)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


async def until_sigterm(run: Callable[[], Awaitable[T]]) -> T:
    """``await run()``, unless SIGTERM comes first: then ``run`` is cancelled and
    :class:`Terminated` raised. Off the main thread, just ``await run()``."""
    if not _can_handle():
        return await run()
    previous = signal.getsignal(signal.SIGTERM)
    terminated = False
    outcome: list[T] = []

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal terminated
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                terminated = True
                scope.cancel()
                return

    error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            try:
                outcome.append(await run())
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # raised as it is below, not in a group
                error = exc
            tg.cancel_scope.cancel()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)  # the loop leaves SIG_DFL behind
    if error is not None:
        raise error
    if terminated or not outcome:
        raise Terminated
    return outcome[0]
