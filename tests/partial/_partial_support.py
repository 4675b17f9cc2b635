"""Helpers shared by the ``partial`` tests: strict value comparison, the (path, value) walk that
the parser's ``ValueDone`` events must reproduce, chunkers and the snapshot consistency rule.

Named ``_partial_support`` (not ``helpers``) so that pytest's rootdir-based imports cannot confuse
it with another test folder's helper module.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path as FsPath
from typing import Any, TypeVar

import partial

ROOT = FsPath(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
"""Vendored test corpora (see ``tests/data/README.md``)."""

JsonPath = tuple[str | int, ...]
T = TypeVar("T", str, bytes)


def same(a: Any, b: Any) -> bool:
    """Deep equality that is exact about types (``1``, ``1.0`` and ``True`` differ), about the
    sign of zero, about dict key order, and treats NaN as equal to NaN. Iterative: deep
    documents must be comparable."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, float):
            if math.isnan(x) or math.isnan(y):
                if not (math.isnan(x) and math.isnan(y)):
                    return False
            elif x != y or math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def walk(value: Any, path: JsonPath = ()) -> list[tuple[JsonPath, Any]]:
    """Every (path, value) in ``value``, containers included, children before their container,
    in document order: exactly the ``ValueDone`` sequence a document without duplicate keys
    must produce. Iterative, so deep values do not hit the recursion limit."""
    out: list[tuple[JsonPath, Any]] = []
    # (path, value, children_pushed)
    stack: list[tuple[JsonPath, Any, bool]] = [(path, value, False)]
    while stack:
        p, v, expanded = stack.pop()
        if expanded or not isinstance(v, dict | list):
            out.append((p, v))
            continue
        stack.append((p, v, True))
        items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
        stack.extend(((*p, k), child, False) for k, child in reversed(items))
    return out


def kind_of(value: Any) -> partial.Kind:
    """The ``Kind`` a value's ``ValueStart`` must carry."""
    if value is None:
        return partial.Kind.NULL
    if isinstance(value, bool):
        return partial.Kind.BOOLEAN
    if isinstance(value, int | float):
        return partial.Kind.NUMBER
    if isinstance(value, str):
        return partial.Kind.STRING
    if isinstance(value, list):
        return partial.Kind.ARRAY
    return partial.Kind.OBJECT


def has_duplicate_keys(text: str) -> bool:
    found = False

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal found
        if len({k for k, _ in pairs}) != len(pairs):
            found = True
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return found


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def reference(text: str) -> Any:
    """``json.loads`` restricted to standard JSON (no NaN/Infinity); raises ``ValueError``."""
    return json.loads(text, parse_constant=reject_constant)


def reference_bytes(data: bytes) -> Any:
    """What the parser must give for bytes input: UTF-8 only, one leading BOM skipped."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return reference(data.decode("utf-8"))


def random_chunks(doc: T, rng: random.Random, max_len: int = 8) -> list[T]:
    """``doc`` cut at random places into pieces of 1..max_len (empty pieces included now and
    then: feeding ``""`` must be harmless)."""
    out: list[T] = []
    i = 0
    while i < len(doc):
        n = rng.randint(0, max_len)
        out.append(doc[i : i + n])
        i += n
    return out


def singles(doc: T) -> list[T]:
    return [doc[i : i + 1] for i in range(len(doc))]


def feed_all(parser: partial.Parser, chunks: Sequence[str | bytes]) -> list[partial.Event]:
    events: list[partial.Event] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events


def done_pairs(events: Sequence[partial.Event]) -> list[tuple[JsonPath, Any]]:
    return [(e.path, e.value) for e in events if isinstance(e, partial.ValueDone)]


def same_pairs(a: Sequence[tuple[JsonPath, Any]], b: Sequence[tuple[JsonPath, Any]]) -> bool:
    return len(a) == len(b) and all(
        pa == pb and same(va, vb) for (pa, va), (pb, vb) in zip(a, b, strict=True)
    )


def lookup(value: Any, path: JsonPath) -> Any:
    for step in path:
        value = value[step]
    return value


class OpenStrings:
    """Follows the events to know which string value is open (started, not done) right now."""

    def __init__(self) -> None:
        self.open: set[JsonPath] = set()

    def update(self, events: Sequence[partial.Event]) -> None:
        for e in events:
            if isinstance(e, partial.ValueStart) and e.kind is partial.Kind.STRING:
                self.open.add(e.path)
            elif isinstance(e, partial.ValueDone):
                self.open.discard(e.path)

    @property
    def current(self) -> JsonPath | None:
        assert len(self.open) <= 1, f"more than one open string: {self.open}"
        return next(iter(self.open), None)


def consistent(snap: Any, final: Any, open_path: JsonPath | None) -> bool:
    """A snapshot agrees with the final value: dicts show a subset of the keys, lists a prefix
    of the items, each consistent; the open string (at ``open_path``) a prefix of its final
    text; everything else is equal, type included. ``MISSING`` is allowed only at the root."""
    if snap is partial.MISSING:
        return True
    # An explicit stack instead of recursion (deep snapshots must be checkable), and no path
    # tuples (that would be quadratic in depth): each entry knows its depth and whether it
    # lies on the open string's path.
    target = open_path
    stack: list[tuple[Any, Any, int, bool]] = [(snap, final, 0, target is not None)]
    while stack:
        s, f, depth, on_path = stack.pop()
        if s is partial.MISSING:
            return False
        if isinstance(s, dict):
            if not isinstance(f, dict) or not set(s) <= set(f):
                return False
            for k in s:
                nxt = on_path and depth < len(target or ()) and (target or ())[depth] == k
                stack.append((s[k], f[k], depth + 1, nxt))
        elif isinstance(s, list):
            if not isinstance(f, list) or len(s) > len(f):
                return False
            for i, x in enumerate(s):
                nxt = on_path and depth < len(target or ()) and (target or ())[depth] == i
                stack.append((x, f[i], depth + 1, nxt))
        elif isinstance(s, str) and on_path and depth == len(target or ()):
            if not isinstance(f, str) or not f.startswith(s):
                return False
        elif not same(s, f):
            return False
    return True


def suite_files(prefix: str) -> Iterator[FsPath]:
    """The JSONTestSuite files whose names start with ``prefix``, sorted."""
    folder = DATA / "JSONTestSuite" / "test_parsing"
    yield from sorted(folder.glob(f"{prefix}*.json"))
