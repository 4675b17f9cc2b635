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

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from sdk._local._mask_schema import Relaxation, pointer, subschemas

__all__ = [
    "PLAN_BUILD_BUDGET",
    "SKELETONS",
    "SMALL_SCHEMA",
    "CompileBudget",
    "build_budget",
    "forget_plans",
    "in_thread",
    "plan_ready",
    "plan_wait",
    "planned",
    "remember_root",
    "skeleton",
    "skeleton_text",
    "without_patterns",
]

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


PLAN_BUILD_BUDGET = 0.5
"""The longest xgrammar grammar build its plan (``_xgr_schema.xgr_plan``) waits for before it
masks the schema without its patterns for good (a 30 s build is not worth waiting for on a
later request either); the time to the first mask is bounded apart from it (:func:`planned`)."""


def build_budget(seconds: float | None) -> float | None:
    """The budget ``xgr_plan`` is given under a compile budget of ``seconds``: at least
    :data:`PLAN_BUILD_BUDGET` (None: no limit)."""
    return None if seconds is None else max(seconds, PLAN_BUILD_BUDGET)


SMALL_SCHEMA = 4096
"""The longest schema text (bytes of its compact JSON) whose plan the request's check always
waits for, whatever the budget: its plan takes milliseconds, and a malformed schema is then
refused at the check every time, not only on a quiet machine."""


def plan_wait(text: str, seconds: float | None) -> float | None:
    """How long the request's check waits for the plan of the schema ``text``: ``seconds``,
    or as long as it takes (None) for a schema of at most :data:`SMALL_SCHEMA` bytes."""
    return None if len(text) <= SMALL_SCHEMA else seconds


_PLANS: OrderedDict[Hashable, Future[Any]] = OrderedDict()
_PLANS_LOCK = threading.Lock()
_PLAN_CACHE = 64
"""How many plans (running or done) :func:`planned` keeps."""


def planned(key: Hashable, make: Callable[[], T], seconds: float | None) -> T | None:
    """``make()``'s result, shared by ``key``: the first ask starts it in a thread of its own
    (later asks, from any thread, join that one), and each ask waits at most ``seconds``
    (None: as long as it takes; 0: not at all). None when it is not ready by then: it goes on
    and is kept for the next ask (the last :data:`_PLAN_CACHE` keys). Its exception, if it
    raised one, is raised to every ask."""
    with _PLANS_LOCK:
        future = _PLANS.get(key)
        if future is None:
            future = _PLANS[key] = in_thread(make)
            while len(_PLANS) > _PLAN_CACHE:
                _PLANS.popitem(last=False)
        else:
            _PLANS.move_to_end(key)
    try:
        result: T = future.result(timeout=seconds)
    except FutureTimeout:
        return None
    return result


def plan_ready(key: Hashable) -> bool:
    """True when the plan :func:`planned` keeps under ``key`` has ended (starts nothing)."""
    with _PLANS_LOCK:
        future = _PLANS.get(key)
    return future is not None and future.done()


def forget_plans() -> None:
    """Forget every plan :func:`planned` keeps (benchmarks: the next plan of each is cold)."""
    with _PLANS_LOCK:
        _PLANS.clear()


_ROOTS: OrderedDict[str, str] = OrderedDict()
_ROOTS_LOCK = threading.Lock()


def remember_root(text: str, schema: Any) -> None:
    """Note the skeleton of the schema ``text`` (``schema``, already parsed: the request's
    check has it), so that a fallback need not parse a large schema again."""
    wide = json.dumps(skeleton(schema, "")[0], separators=(",", ":"))
    with _ROOTS_LOCK:
        _ROOTS[text] = wide
        while len(_ROOTS) > _PLAN_CACHE:
            _ROOTS.popitem(last=False)


def skeleton_text(text: str) -> str:
    """:func:`skeleton` of the schema ``text`` as compact JSON text (one of :data:`SKELETONS`),
    noted by the check (:func:`remember_root`) or parsed here."""
    with _ROOTS_LOCK:
        wide = _ROOTS.get(text)
    if wide is None:
        wide = json.dumps(skeleton(json.loads(text), "")[0], separators=(",", ":"))
    return wide


SKELETONS = ('{"type":"object"}', '{"type":"array"}', "{}")
"""Every mask :func:`skeleton` gives, as compact JSON text (an engine may compile them ahead)."""


def skeleton(schema: Any, reason: str) -> tuple[Any, tuple[Relaxation, ...]]:
    """The widest mask short of any value, built in microseconds whatever the schema's size:
    ``{"type": "object"}`` or ``{"type": "array"}`` where the root's ``type`` says so (every
    document the schema admits is one, whatever else it says), else any value (``{}``); and
    the relaxation that says so, for ``reason``."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind in ("object", "array"):
        return {"type": kind}, (Relaxation("/", "*", f"{reason}: any {kind}"),)
    return {}, (Relaxation("/", "*", f"{reason}: any value"),)


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
        planned_yet: Callable[[], bool] = lambda: True,
    ) -> tuple[T, bool]:
        """``(compile_exact(), True)`` if it ends within the budget; else
        ``(compile_wider(1), False)`` (the schema without its patterns) within a quarter of
        the budget more, where ``planned_yet()`` (the plan it needs is ready), else
        ``(compile_wider(2), False)`` (the root's type alone, at once). A late exact compile
        is handed to ``on_late`` (to cache it) when it ends."""
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
        if not planned_yet():
            return compile_wider(2), False
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
