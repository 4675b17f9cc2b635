"""JSON values as JSON Schema sees them: kinds, equality, numeric checks. Nothing recursive.

JSON Schema equality is not Python's: ``1`` and ``1.0`` are equal, ``true`` and ``1`` are not,
and an object's key order does not matter. :class:`Canon` maps a value to a hashable key with
exactly that equality, in one iterative pass (a deep value costs memory, never the C stack), so
``uniqueItems`` is a set lookup per item and ``enum``/``const`` a set membership.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

__all__ = ["Canon", "describe_types", "kind_of", "multiple_of", "scalar_key"]

_TRUE = ("true",)
_FALSE = ("false",)
_NULL = ("null",)


def kind_of(value: Any) -> str:
    """The JSON kind of a Python value as ``json.loads`` builds it."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def describe_types(types: frozenset[str]) -> str:
    order = ("object", "array", "string", "integer", "number", "boolean", "null")
    return " or ".join(t for t in order if t in types)


def scalar_key(value: Any) -> Any:
    """The equality key of a string, number, boolean or null (see :class:`Canon`)."""
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    if value is None:
        return _NULL
    return value


class Canon:
    """Equality keys for JSON values, with JSON Schema's equality: two values get equal keys
    exactly when JSON Schema calls them equal.

    A string or number is its own key (``1 == 1.0``, and their hashes agree); ``true``,
    ``false`` and ``null`` get tagged keys (so ``true`` is not ``1``); a container gets
    ``("#", n)``, where ``n`` numbers the distinct containers this object has seen: an array is
    known by its members' keys in order, an object by its set of (key, member key) pairs. Keys
    are shallow, so hashing one never recurses into a deep value; :meth:`key` costs O(size of
    the value), iteratively. One per document: the numbering grows with what it is shown.
    """

    __slots__ = ("_ids",)

    def __init__(self) -> None:
        self._ids: dict[Any, tuple[str, int]] = {}

    def key(self, value: Any) -> Any:
        """The equality key of ``value``."""
        t = type(value)
        if t is not list and t is not dict:
            return scalar_key(value)
        ids = self._ids
        # Post-order over an explicit stack: a container is keyed once its members are.
        # Each entry: (is_list, member values, keys or None, member keys so far, parent's list).
        root: list[Any] = []
        stack: list[tuple[bool, list[Any], list[str] | None, list[Any], list[Any]]] = []
        _push(value, root, stack)
        while stack:
            is_list, members, names, done, out = stack[-1]
            i = len(done)
            n = len(members)
            while i < n:
                child = members[i]
                ct = type(child)
                if ct is list or ct is dict:
                    break
                done.append(child if ct is str else scalar_key(child))
                i += 1
            if i < n:
                _push(members[i], done, stack)
                continue
            stack.pop()
            if is_list:
                shape: Any = ("[", tuple(done))
            else:
                assert names is not None
                shape = ("{", frozenset(zip(names, done, strict=True)))
            found = ids.get(shape)
            if found is None:
                found = ids[shape] = ("#", len(ids))
            out.append(found)
        return root[0]


def _push(
    node: Any,
    out: list[Any],
    stack: list[tuple[bool, list[Any], list[str] | None, list[Any], list[Any]]],
) -> None:
    if type(node) is list:
        stack.append((True, node, None, [], out))
    else:
        stack.append((False, list(node.values()), list(node), [], out))


def multiple_of(value: int | float, divisor: int | float) -> bool:
    """``multipleOf``, exactly: the quotient of the two numbers as written (each float by its
    shortest decimal form, the text that reads back as it: ``0.3`` is ``3/10``, not the binary
    ``0.299999...``) is an integer. So ``0.3`` is a multiple of ``0.1`` and ``1e-17`` is not,
    as the JSON-Schema-Test-Suite expects; huge quotients never overflow."""
    if type(divisor) is int and type(value) is int:
        return not value % divisor
    if not math.isfinite(value):
        return False  # (1e400 reads as infinity: a multiple of nothing)
    return (_exact(value) / _exact(divisor)).denominator == 1


def _exact(number: int | float) -> Fraction:
    if type(number) is int:
        return Fraction(number)
    return Fraction(repr(number))
