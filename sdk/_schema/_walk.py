"""Parser events into checker calls: one dispatch loop, shared by the tracker's callers.

:func:`dispatch` hands one parser event to a :class:`SchemaChecker`; :func:`check_value` runs a
complete value through the same checks (serialised and parsed again, so it sees exactly the
events a stream would, and nothing recurses).
"""

from __future__ import annotations

import json
from typing import Any

import partial
from partial import Comma, Key, KeyDelta, KeyStart, StringDelta, ValueDone, ValueStart
from sdk._errors import SchemaViolation
from sdk._schema._checker import SchemaChecker
from sdk._schema._conj import Conj

__all__ = ["check_value", "dispatch"]


def dispatch(checker: SchemaChecker, ev: partial.Event) -> None:
    """Hand one event of a ``Parser(detail=True)`` to ``checker``."""
    t = type(ev)
    if t is StringDelta:
        assert isinstance(ev, StringDelta)
        checker.string_delta(ev.path, ev.offset, ev.text)
    elif t is ValueDone:
        assert isinstance(ev, ValueDone)
        checker.value_done(ev.path, ev.offset, ev.value)
    elif t is ValueStart:
        assert isinstance(ev, ValueStart)
        checker.value_start(ev.path, ev.offset, ev.kind.value)
    elif t is Key:
        checker.key(ev.path, ev.offset)
    elif t is KeyDelta:
        assert isinstance(ev, KeyDelta)
        checker.key_delta(ev.offset, ev.text)
    elif t is KeyStart:
        checker.key_start(ev.offset)
    elif t is Comma:
        checker.comma(ev.offset)


def check_value(
    root: Conj, value: Any, *, early_models: bool = False, max_depth: int = 512
) -> None:
    """Raise :class:`~sdk.SchemaViolation` unless ``value`` passes the checks of ``root`` (a
    compiled schema's root conjunction).

    A value nested deeper than ``max_depth`` containers is refused (``keyword="depth"``) on
    every Python version: the limit is this one, not the interpreter's recursion limit (which
    ``json.dumps`` meets first on some versions and not on others)."""
    too_deep = SchemaViolation(
        f"the value is nested deeper than max_depth={max_depth}", keyword="depth"
    )
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise too_deep from None
    except (TypeError, ValueError) as exc:
        raise SchemaViolation(f"the value is not JSON: {exc}", keyword="type") from None
    parser = partial.Parser(detail=True, max_depth=max_depth)
    try:
        events = parser.feed(text) + parser.finish()
    except partial.JSONLimitError:
        raise too_deep from None
    checker = SchemaChecker(root, early_models=early_models)
    for ev in events:
        dispatch(checker, ev)
