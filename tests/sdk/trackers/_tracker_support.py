"""Helpers for the tracker tests: feed a document in chosen ways and see where it fails."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import regex

from sdk._errors import SchemaViolation, ValidationFailed
from sdk._events import FieldEvent, TrackerEvent
from sdk._trackers._field import FieldTracker

MARK = "¦"
"""Put before the character at which a violation must be raised (it is removed)."""


def split_mark(marked: str) -> tuple[str, int]:
    at = marked.index(MARK)
    return marked[:at] + marked[at + 1 :], at


def feed_chunks(tracker: FieldTracker, chunks: list[str]) -> list[TrackerEvent]:
    out: list[TrackerEvent] = []
    for chunk in chunks:
        out.extend(tracker.feed(chunk))
    return out


def first_violation(schema: Any, doc: str) -> tuple[int, SchemaViolation] | None:
    """Feed ``doc`` one character at a time: the index of the character whose feed raised
    (``len(doc)`` when only the end of input did), or ``None`` if nothing did."""
    tracker = FieldTracker(schema)
    for i, ch in enumerate(doc):
        try:
            tracker.feed(ch)
        except SchemaViolation as exc:
            return i, exc
    try:
        tracker.close()
    except ValidationFailed:
        return None  # only the whole-value validation failed: not an early check
    except SchemaViolation as exc:
        return len(doc), exc
    return None


def assert_fires(schema: Any, marked: str, path: tuple[str | int, ...], keyword: str) -> None:
    """The violation is raised exactly at the marked character: not one character earlier,
    whatever the chunking; and jsonschema agrees that the document is invalid."""
    doc, at = split_mark(marked)
    found = first_violation(schema, doc)
    assert found is not None, f"no violation for {doc!r}"
    index, exc = found
    assert (index, exc.path, exc.keyword) == (at, path, keyword), str(exc)
    assert exc.offset == at
    assert exc.message
    # One character earlier nothing is raised, fed in one piece or two.
    FieldTracker(schema).feed(doc[:at])
    tracker = FieldTracker(schema)
    feed_chunks(tracker, [doc[: at // 2], doc[at // 2 : at]])
    if at < len(doc):
        with pytest.raises(SchemaViolation) as again:
            tracker.feed(doc[at:])
        assert (again.value.path, again.value.keyword) == (path, keyword)
    # Early checks never disagree with the final validation.
    try:
        value = json.loads(doc)
    except json.JSONDecodeError:
        return  # the document is cut short on purpose
    assert not oracle(FieldTracker(schema).json_schema).is_valid(value)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if isinstance(instance, str) and regex.search(pattern, instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


Oracle = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _pattern})
"""jsonschema, with patterns matched by ``regex`` (as the tracker does, so ``\\p{L}`` works)."""


def oracle(schema: Any) -> Any:
    """An independent judge of a complete document: jsonschema with its format checkers."""
    return Oracle(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def assert_valid(schema: Any, doc: str) -> Any:
    """No violation however the document is cut; returns ``close()``'s result."""
    whole = FieldTracker(schema)
    whole.feed(doc)
    result = whole.close()
    tracker = FieldTracker(schema)
    events = feed_chunks(tracker, list(doc))
    events += tracker.finish()
    tracker.close()
    assert [e for e in events if isinstance(e, FieldEvent)]
    return result
