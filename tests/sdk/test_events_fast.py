"""The tracker's fast FieldEvent constructor builds the same object as the class."""

from __future__ import annotations

from sdk._events import FieldEvent, new_field_event


def test_new_field_event_equals_the_dataclass_built_one() -> None:
    args = (("items", 3, "id"), 1001, 40, 2, 5, 1, "lookup", "call_1")
    fast = new_field_event(*args, {"x": 1})
    slow = FieldEvent(*args, instance={"x": 1})
    assert fast == slow
    assert repr(fast) == repr(slow)
    assert hash(new_field_event(*args, None)) == hash(FieldEvent(*args))
    assert fast.segment is None and fast.tag is None
    assert fast.part == (1, "lookup", None, None)
    assert fast.pointer == "/items/3/id"
