"""The checks that only a final value can answer, each on the value alone.

A container's checks here read its own keys or length, never its members' subtrees (members
were checked when they closed); ``enum``/``const`` on a container is one exception, and it
costs the container's size once; ``unevaluatedProperties``/``unevaluatedItems`` is the other: it
depends on what every applicator of its subschema evaluated, so that whole subschema is judged
on the final value (by jsonschema, :class:`~sdk._schema._validators.SubschemaJudge`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk._schema._states import Frame, Reason, State
from sdk._schema._values import Canon, multiple_of, scalar_key

__all__ = ["check_close"]


def check_close(
    s: State, frame: Frame, value: Any, offset: int, canon: Callable[[], Canon]
) -> Reason | None:
    """The first close-time failure of ``s`` on ``frame``'s final ``value``, or ``None``."""
    conj = s.conj
    kind = frame.kind
    fail: tuple[str, str] | None = None
    if kind == "string":
        fail = _string(s, value)
    elif kind == "number":
        fail = _number(s, value)
    elif kind == "object":
        fail = _object(s, value)
    elif kind == "array":
        fail = _array(s, value)
    if fail is None and conj.choices:
        fail = _choices(s, value, canon)
    if fail is None and conj.unevaluated and (kind == "object" or kind == "array"):
        fail = _unevaluated(s, value, kind == "object")
    if fail is None:
        return None
    return Reason(frame.path, fail[0], fail[1], value, offset, frame.start)


def _string(s: State, value: str) -> tuple[str, str] | None:
    conj = s.conj
    least = conj.min_length
    if least is not None and len(value) < least:
        return ("minLength", f"expected at least {least} characters, got {len(value)}")
    for pattern, source in conj.patterns:
        if not pattern.search(value):
            return ("pattern", f"{value!r} does not match {source!r}")
    for fmt in conj.formats:
        if not fmt.check(value):
            return ("format", f"{value!r} is not a valid {fmt.name}")
    return None


def _number(s: State, value: int | float) -> tuple[str, str] | None:
    conj = s.conj
    if conj.integer and type(value) is float:
        if not value.is_integer():
            return ("type", f"{value!r} is not an integer")
        if conj.draft4_integer:
            return (
                "type",
                f"{value!r} is not an integer: it is written with a fraction or an exponent, "
                "which draft-04 counts as a number that is not an integer",
            )
    for keyword, limit in conj.numbers:
        if keyword == "minimum":
            if value < limit:
                return (keyword, f"{value!r} is less than the minimum of {limit!r}")
        elif keyword == "maximum":
            if value > limit:
                return (keyword, f"{value!r} is greater than the maximum of {limit!r}")
        elif keyword == "exclusiveMinimum":
            if value <= limit:
                return (keyword, f"{value!r} is not greater than {limit!r}")
        elif keyword == "exclusiveMaximum":
            if value >= limit:
                return (keyword, f"{value!r} is not less than {limit!r}")
        elif not multiple_of(value, limit):
            return (keyword, f"{value!r} is not a multiple of {limit!r}")
    return None


def _object(s: State, value: dict[str, Any]) -> tuple[str, str] | None:
    conj = s.conj
    for key in conj.required:
        if key not in value:
            return ("required", f"{key!r} is a required property")
    least = conj.min_props
    if least is not None and len(value) < least:
        return ("minProperties", f"expected at least {least} properties, got {len(value)}")
    for key, needed in conj.dep_required:
        if key in value:
            for other in needed:
                if other not in value:
                    return ("dependentRequired", f"{other!r} is required when {key!r} is present")
    return None


def _array(s: State, value: list[Any]) -> tuple[str, str] | None:
    conj = s.conj
    least = conj.min_items
    if least is not None and len(value) < least:
        return ("minItems", f"expected at least {least} items, got {len(value)}")
    counts = s.counts
    for i, (_, fewest, _) in enumerate(conj.contains):
        found = counts[i] if counts is not None else 0
        if found < fewest:
            keyword = "contains" if fewest == 1 else "minContains"
            return (keyword, f"expected at least {fewest} items that match 'contains', got {found}")
    return None


def _unevaluated(s: State, value: Any, is_object: bool) -> tuple[str, str] | None:
    for u in s.conj.unevaluated:
        if u.props if is_object else u.items:
            message = u.judge(value)
            if message is not None:
                return ("unevaluatedProperties" if is_object else "unevaluatedItems", message)
    return None


def _choices(s: State, value: Any, canon: Callable[[], Canon]) -> tuple[str, str] | None:
    container = type(value) is list or type(value) is dict
    key = canon().key(value) if container else scalar_key(value)
    for choice in s.conj.choices:
        if container:
            c = canon()
            if key not in {c.key(m) for m in choice.containers}:
                return (choice.keyword, f"expected {choice.shown}")
        elif key not in choice.scalars:
            return (choice.keyword, f"expected {choice.shown}")
    return None
