"""A time budget for compiling a JSON Schema's mask: past it, the widened schema's mask.

A grammar engine's compile of a real-world schema is usually milliseconds, yet unbounded: the
corpus of issue 42 had xgrammar compiles of 2 to 30 s and more (a pattern of nested counts and
lookarounds), each stalling the first generation of that schema. :class:`CompileBudget` runs
the compile in a daemon thread of its own (both engines release the GIL while they compile, so
nothing else in the process waits on it) and waits at most ``seconds``
(``LocalBackend(mask_compile_budget=...)``, :data:`~sdk._constants.DEFAULT_MASK_COMPILE_BUDGET`
by default; None waits as long as it takes). Past it the generation goes on under the mask of
the widened schema (:func:`without_patterns`, then any JSON value if that takes over a quarter
of the budget more: the tracker checks the caller's schema as the text streams either way),
and the slow compile finishes in the background and is cached: the next request of that
schema gets the exact mask. Each fallback is logged at WARNING on the ``fieldstream`` logger.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from sdk._local._mask_schema import Relaxation, pointer, subschemas

__all__ = ["CompileBudget", "in_thread", "without_patterns"]

logger = logging.getLogger("fieldstream")

T = TypeVar("T")


def in_thread(fn: Callable[[], T]) -> Future[T]:
    """``fn()`` run in a daemon thread of its own: its future (never joined at exit)."""
    future: Future[T] = Future()

    def work() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to whoever waits, or dropped when late
            future.set_exception(exc)

    threading.Thread(target=work, name="fieldstream-mask-compile", daemon=True).start()
    return future


def without_patterns(schema: Any) -> tuple[Any, tuple[Relaxation, ...]]:
    """``schema`` with every ``pattern`` and ``patternProperties`` pattern dropped (any string,
    any name: the compile time of a mask goes mostly to patterns), and what that relaxed."""
    notes: list[Relaxation] = []

    def walk(node: Any, path: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return node
        out = dict(node)
        changed = False
        for step, sub in list(subschemas(node)):
            new = walk(sub, path + step)
            if new is not sub:
                changed = True
                if len(step) == 1:
                    out[step[0]] = new
                else:
                    key, at = step
                    if isinstance(out[key], list):
                        items = list(out[key])
                        items[int(at)] = new
                        out[key] = items
                    else:
                        out[key] = {**out[key], at: new}
        if isinstance(out.get("pattern"), str):
            changed = True
            del out["pattern"]
            notes.append(Relaxation(pointer(path), "pattern", "the compile ran past its budget"))
        named = out.get("patternProperties")
        if isinstance(named, dict) and named:
            changed = True
            del out["patternProperties"]
            extra = out.get("additionalProperties")
            values = [*named.values(), *([extra] if isinstance(extra, dict) else [])]
            out["additionalProperties"] = True if extra is True else {"anyOf": values}
            notes.append(
                Relaxation(pointer(path), "patternProperties", "the compile ran past its budget")
            )
        return out if changed else node

    return walk(schema, ()), tuple(notes)


class CompileBudget:
    """Compiles within ``seconds`` or falls back (see the module docstring); ``fallbacks``
    counts the compiles that ran past it."""

    def __init__(self, seconds: float | None) -> None:
        if seconds is not None and not seconds > 0:
            raise ValueError(f"mask_compile_budget must be > 0 seconds or None, not {seconds!r}")
        self.seconds = seconds
        self.fallbacks = 0

    def run(
        self,
        compile_exact: Callable[[], T],
        compile_wider: Callable[[int], T],
        on_late: Callable[[T], object],
        what: str,
    ) -> tuple[T, bool]:
        """``(compile_exact(), True)`` if it ends within the budget; else
        ``(compile_wider(1), False)`` (the schema without its patterns) within a quarter of
        the budget more, else
        ``(compile_wider(2), False)`` (any value). A late exact compile is handed to
        ``on_late`` (to cache it) when it ends."""
        if self.seconds is None:
            return compile_exact(), True
        future = in_thread(compile_exact)
        try:
            return future.result(timeout=self.seconds), True
        except FutureTimeout:
            pass

        def late(done: Future[T]) -> None:
            if done.exception() is None:
                on_late(done.result())

        future.add_done_callback(late)
        self.fallbacks += 1
        logger.warning(
            "the mask of %s took over its %.2f s budget to compile: decoding under the "
            "widened schema's mask (the tracker checks the schema itself); the exact mask "
            "is cached for the next request when its compile ends",
            what,
            self.seconds,
        )
        wider = in_thread(lambda: compile_wider(1))
        try:  # a quarter of the budget more, at most: then any value (milliseconds)
            return wider.result(timeout=self.seconds / 4), False
        except FutureTimeout:
            return compile_wider(2), False

    @staticmethod
    def taken(grammars: Any) -> int:
        """The fallbacks of ``grammars``' budget since the last call (benchmarks)."""
        budget: CompileBudget = grammars.budget
        count, budget.fallbacks = budget.fallbacks, 0
        return count
