"""The tracker's fast FieldEvent constructor builds the same object FieldEvent's own __init__
does (sdk._events.new_field_event: the slots filled through their descriptors)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel

from sdk._events import _UNCHANGED, FieldEvent, new_field_event
from sdk._trackers._field import FieldTracker


@pytest.mark.parametrize(
    "args",
    [
        (("a", 0), 1, 5, 1, 0, None, None, None, None, _UNCHANGED),
        ((), {"x": [1]}, 12, 3, 2, 0, "lookup", "call_1", object(), "changed"),
    ],
)
def test_the_same_event_as_the_dataclass_builds(args: tuple[Any, ...]) -> None:
    path, value, offset, attempt, forced, call, name, call_id, instance, validated = args
    fast = new_field_event(*args)
    slow = FieldEvent(
        path,
        value,
        offset,
        attempt,
        forced,
        call,
        name,
        call_id,
        instance=instance,
        _validated=validated,
    )
    assert type(fast) is FieldEvent
    assert fast == slow
    assert repr(fast) == repr(slow)
    assert hash(fast.path) == hash(slow.path)
    for f in dataclasses.fields(FieldEvent):
        assert getattr(fast, f.name) is getattr(slow, f.name), f.name
    assert fast.validated == slow.validated
    assert fast.changed == slow.changed
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.value = 2  # type: ignore[misc]


class Item(BaseModel):
    id: int
    tags: list[str]


def test_the_tracker_events_equal_those_built_by_the_dataclass() -> None:
    tracker = FieldTracker(Item)
    events = [e for ch in '{"id": 7, "tags": ["a", "b"]}' for e in tracker.feed(ch)]
    events += tracker.finish()
    assert [e.path for e in events] == [("id",), ("tags", 0), ("tags", 1), ("tags",), ()]
    for event in events:
        assert isinstance(event, FieldEvent)
        rebuilt = FieldEvent(
            event.path,
            event.value,
            event.offset,
            event.attempt,
            event.forced,
            event.tool_call,
            event.tool_name,
            event.tool_call_id,
            instance=event.instance,
            _validated=event._validated,
        )
        assert event == rebuilt
        assert repr(event) == repr(rebuilt)
