"""Pattern matching under a time budget: every check of a compiled pattern against a model's
text runs here.

A backtracking engine can take exponential time on a pattern such as ``^(a|aa)+$`` and a
string that almost matches, and the tracker runs on the caller's event loop: one hostile
pattern would block every other stream. So each match is given ``timeout`` seconds of its own
thread's CPU time (:func:`_timed`): what other threads in the process spend (the local engine's
llama.cpp threads decoding, another stream's work) is not counted, and the load of other
processes stretches the wall-clock time, not the budget. The ``regex`` package's own
``timeout=`` stops the engine mid-match but counts the whole process's CPU time; a match it
stops early because other threads spent that clock is run again with the allowance scaled to
this thread's share of it:

- a **final** check (:func:`search`, :func:`fullmatch`) goes to RE2 when it can decide the
  pattern exactly (:mod:`sdk._regex._linear`, the ``re2`` extra): linear time, no budget
  needed; otherwise it runs in the ``regex`` package, and one that runs out raises
  :class:`BudgetSpent`; the tracker turns it into :class:`~sdk.PatternTimeout`, naming the
  path and the pattern (the verdict is unknown: it is neither a pass nor a violation);
- a **prefix** check (:func:`could`) that runs out answers "maybe" (``True``), so that the
  final check decides: never a false reject. The pattern is then not checked on prefixes again
  in the same tracker (:class:`Budget` remembers it), so a hostile pattern costs one budget per
  tracker for its prefixes, not one per chunk.

The budget in force is a context variable that each tracker sets around its own work
(:func:`enter`/:func:`leave`), so that compiled schemas, shared between streams, stay
immutable and one stream's option never leaks into another's. Outside a tracker,
:data:`sdk._constants.DEFAULT_REGEX_TIMEOUT` applies.

A pattern the *model* wrote (``format: "regex"``) is compiled, not matched, and the ``regex``
package writes counted repetitions out when it compiles: the format check compiles one only
when its size (:func:`sdk._regex._ecma.pattern_size`) is at most :data:`MAX_EXPANSION`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any, TypeVar

import regex

from sdk._constants import DEFAULT_REGEX_TIMEOUT
from sdk._errors import Path, PatternTimeout
from sdk._regex._linear import LinearProgram

__all__ = [
    "MAX_EXPANSION",
    "Budget",
    "BudgetSpent",
    "could",
    "enter",
    "fullmatch",
    "leave",
    "search",
    "validate_timeout",
]

MAX_EXPANSION = 20_000
"""The largest pattern (:func:`sdk._regex._ecma.pattern_size`) the ``regex`` package compiles
from a model's text (``format: "regex"``); a larger valid one is judged on its syntax. The
package writes counted repetitions out when it compiles: ~0.5 s for a million elements
(``a{1000000}``), and ``((a{1000}){1000}){1000}`` does not finish. A developer's schema has a
limit of its own (``sdk._constants.DEFAULT_MAX_PATTERN_SIZE``)."""


class BudgetSpent(Exception):
    """A final check ran out of its budget: ``pattern`` (as written), ``timeout`` (seconds)
    and ``length`` (of the text). Internal: the tracker re-raises it as
    :class:`~sdk.PatternTimeout` with the path."""

    def __init__(self, pattern: str, timeout: float, length: int) -> None:
        super().__init__(f"the pattern {pattern!r} ran out of its {timeout:g} s budget")
        self.pattern = pattern
        self.timeout = timeout
        self.length = length

    def at(self, path: Path, value: Any, offset: int | None) -> PatternTimeout:
        """The public error: this check, of ``value`` at ``path``."""
        return PatternTimeout(
            f"the pattern {self.pattern!r} could not be judged on this {self.length}-character "
            f"string within regex_timeout={self.timeout:g} s (catastrophic backtracking?); "
            "whether it matches is unknown",
            path=path,
            pattern=self.pattern,
            value=value,
            timeout=self.timeout,
            offset=offset,
        )


class Budget:
    """One tracker's budget: ``timeout`` seconds per check, and the prefix patterns that
    already ran out (not checked on prefixes again)."""

    __slots__ = ("spent", "timeout")

    def __init__(self, timeout: float = DEFAULT_REGEX_TIMEOUT) -> None:
        self.timeout = validate_timeout(timeout)
        self.spent: set[regex.Pattern[str]] = set()


def validate_timeout(timeout: object) -> float:
    """``timeout`` as a float, or a ``ValueError``/``TypeError`` naming ``regex_timeout``."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"regex_timeout must be a number of seconds, not {timeout!r}")
    if not 0 < timeout < float("inf"):
        raise ValueError(f"regex_timeout must be a finite number of seconds > 0, not {timeout!r}")
    return float(timeout)


_OWN = 0.9
"""A run stopped by the ``regex`` package's process clock after its own thread spent this share
of the budget ran out by itself (the clocks' reading costs a few microseconds, and the two
clocks do not tick together): it is not run again."""
_MIN_SHARE = 1 / 8
"""The smallest share of the process's CPU time a rerun is sized for: its allowance on the
process clock is at most eight budgets."""
_RUNS = 3
"""Runs of one check at most (the first, and reruns while other threads keep taking most of the
process clock)."""

R = TypeVar("R")


def _timed(match: Callable[[float], R], timeout: float) -> R:
    """``match(allowance)`` (a ``regex`` call given ``timeout=allowance``), held to ``timeout``
    seconds of this thread's own CPU time; ``TimeoutError`` when the check ran out of it.

    The ``regex`` package's clock is the process's CPU time, which every thread advances: beside
    two busy threads, a match stops after a third of the budget of its own work. When a run is
    stopped before its own thread has spent :data:`_OWN` of the budget, the check runs again
    with the allowance on the process clock set to what gives this thread a whole budget at the
    share it had (``timeout / share``, the share floored at :data:`_MIN_SHARE`), at most
    :data:`_RUNS` runs. A check that needs less than ``timeout`` of its own thread's CPU time
    therefore completes beside busy threads (its thread spends up to about two budgets: the
    first run's share, then the rerun); on a process with no other busy thread, one run, as
    before. The thread's clock is read once per check (``time.thread_time()``, about 1.4 us on
    this project's virtual machine) and again only when a run is stopped."""
    allowance = timeout
    for _ in range(_RUNS):
        begun = time.thread_time()
        try:
            return match(allowance)
        except TimeoutError:
            own = time.thread_time() - begun
        if own >= _OWN * timeout:
            break
        allowance = timeout / max(own / allowance, _MIN_SHARE)
    raise TimeoutError


_DEFAULT = Budget()
_current: ContextVar[Budget] = ContextVar("fieldstream_regex_budget", default=_DEFAULT)


# The context variable's own methods, not functions around them: a tracker enters and leaves
# its budget once per chunk that makes events, and a Python call each way is most of the cost.
enter: Callable[[Budget], Token[Budget]] = _current.set
"""Make ``budget`` the one in force (a tracker, around its checks); :func:`leave` with the
token it returns restores the one before, in a ``finally``."""

leave: Callable[[Token[Budget]], None] = _current.reset
"""Undo the :func:`enter` that returned ``token``."""


def search(
    pattern: regex.Pattern[str], source: str, text: str, linear: LinearProgram | None = None
) -> bool:
    """Whether ``pattern`` (written ``source``) matches somewhere in ``text``: by ``linear``
    (RE2's program for the same pattern, :mod:`sdk._regex._linear`) when given and it can read
    ``text``, else by ``pattern`` under the budget (:class:`BudgetSpent` when it runs out)."""
    if linear is not None:
        try:
            return bool(linear.search(text))
        except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only
            pass
    timeout = _current.get().timeout
    try:
        return (
            _timed(lambda allowance: pattern.search(text, timeout=allowance), timeout) is not None
        )
    except TimeoutError:
        raise BudgetSpent(source, timeout, len(text)) from None


def fullmatch(
    pattern: regex.Pattern[str], source: str, text: str, linear: LinearProgram | None = None
) -> bool:
    """Whether ``pattern`` (written ``source``) matches the whole of ``text``, as
    :func:`search` decides it."""
    if linear is not None:
        try:
            return bool(linear.fullmatch(text))
        except UnicodeEncodeError:
            pass
    timeout = _current.get().timeout
    try:
        return (
            _timed(lambda allowance: pattern.fullmatch(text, timeout=allowance), timeout)
            is not None
        )
    except TimeoutError:
        raise BudgetSpent(source, timeout, len(text)) from None


def could(
    pattern: regex.Pattern[str],
    prefix: str,
    *,
    whole: bool,
    linear: LinearProgram | None = None,
) -> bool:
    """Whether some text that starts with ``prefix`` may match ``pattern`` (``whole``: as a
    full match, else somewhere), with ``partial=True``. ``True`` ("maybe") when the budget runs
    out, and from then on for this pattern in this budget: the final check decides.

    ``linear`` (RE2's program for the exact pattern) answers first when it can: a prefix that
    itself matches is its own witness (the relaxed ``pattern`` accepts at least as much). That
    spares the ``regex`` package's ``timeout``, whose CPU clock costs a system call per match
    (~15 us a check where that call is slow, in a virtual machine), in the common case of a
    valid value streaming."""
    budget = _current.get()
    if budget.spent and pattern in budget.spent:
        return True
    if linear is not None:
        try:
            if linear.fullmatch(prefix) if whole else linear.search(prefix):
                return True
        except UnicodeEncodeError:
            pass
    run = pattern.fullmatch if whole else pattern.search
    try:
        return (
            _timed(lambda allowance: run(prefix, partial=True, timeout=allowance), budget.timeout)
            is not None
        )
    except TimeoutError:
        if budget is not _DEFAULT:  # the shared default keeps no memory between callers
            budget.spent.add(pattern)
        return True
