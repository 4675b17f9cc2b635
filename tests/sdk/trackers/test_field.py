"""FieldTracker: events, results, errors, snapshot, forced characters, attempts."""

from __future__ import annotations

from typing import Literal

import pydantic
import pytest

import partial
from sdk._errors import (
    OutputSyntaxError,
    SchemaViolation,
    StreamUsageError,
    TruncatedError,
    ValidationFailed,
)
from sdk._events import FieldEvent, TrackerEvent
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import feed_chunks


class Item(pydantic.BaseModel):
    name: str
    qty: int = pydantic.Field(ge=1)


class Order(pydantic.BaseModel):
    id: str
    status: Literal["open", "shipped"]
    items: list[Item]

    @pydantic.model_validator(mode="after")
    def _not_empty_when_shipped(self) -> Order:
        if self.status == "shipped" and not self.items:
            raise ValueError("a shipped order has items")
        return self


ORDER = (
    '{"id": "o1", "status": "open", '
    '"items": [{"name": "pen", "qty": 2}, {"name": "ink", "qty": 1}]}'
)


def fields(events: list[TrackerEvent]) -> list[FieldEvent]:
    return [e for e in events if isinstance(e, FieldEvent)]


def test_every_value_fires_once_children_first() -> None:
    t = FieldTracker(Order, dispatch="eager")
    events = fields(feed_chunks(t, list(ORDER)))
    paths = [e.path for e in events]
    assert paths == [
        ("id",), ("status",),
        ("items", 0, "name"), ("items", 0, "qty"), ("items", 0),
        ("items", 1, "name"), ("items", 1, "qty"), ("items", 1),
        ("items",), (),
    ]  # fmt: skip
    assert events[2].pointer == "/items/0/name"
    assert events[2].value == "pen"
    assert events[-1].value["items"][1] == {"name": "ink", "qty": 1}
    assert ORDER[events[0].offset] == '"'  # a string is final at its closing quote
    result = t.close()
    assert isinstance(result, Order)
    assert result.items[1].name == "ink"


def test_events_do_not_depend_on_chunking() -> None:
    whole = FieldTracker(Order).feed(ORDER)
    by_char = feed_chunks(FieldTracker(Order), list(ORDER))
    assert whole == by_char


def test_a_root_model_validator_holds_every_event_until_the_document_passed_it() -> None:
    t = FieldTracker(Order)
    assert fields(feed_chunks(t, list(ORDER))) == []  # Order has a model validator
    events = fields(t.finish())
    eager = FieldTracker(Order, dispatch="eager")
    assert events == fields([*feed_chunks(eager, list(ORDER)), *eager.finish()])
    assert isinstance(t.close(), Order)


def test_a_root_model_validator_that_fails_lets_no_event_out() -> None:
    t = FieldTracker(Order)
    assert t.feed('{"id": "o1", "status": "shipped", "items": []}') == []
    with pytest.raises(ValidationFailed, match="a shipped order has items"):
        t.finish()
    with pytest.raises(ValidationFailed):
        t.close()


def test_attempt_is_stamped() -> None:
    events = FieldTracker(Order, attempt=3, dispatch="eager").feed(ORDER)
    assert {e.attempt for e in events} == {3}


def test_forced_counts_the_value_characters_fed_forced() -> None:
    t = FieldTracker({"type": "object"})
    events = t.feed('{"a": "')
    events += t.feed('xy", "n": 12')
    events += t.feed("34", forced=True)
    events += t.feed("}", forced=True)
    by_path = {e.path: e for e in fields(events)}
    assert by_path[("a",)].forced == 0
    assert by_path[("n",)].forced == 2  # "1234": the last two
    assert by_path[()].forced == 3
    t2 = FieldTracker({"type": "object"})
    ev = t2.feed('{"a": "', forced=True) + t2.feed('xy"}')
    assert {e.path: e.forced for e in fields(ev)} == {("a",): 1, (): 7}


def test_text_deltas_only_when_asked() -> None:
    doc = '{"id": "o1", "status": "open", "items": []}'
    assert not [e for e in FieldTracker(Order).feed(doc) if not isinstance(e, FieldEvent)]
    t = FieldTracker(Order, deltas=True, attempt=2)
    events = feed_chunks(t, [doc[:9], doc[9:]])
    deltas = [e for e in events if not isinstance(e, FieldEvent)]
    assert [(d.path, d.text) for d in deltas] == [
        (("id",), "o"), (("id",), "1"), (("status",), "open"),
    ]  # fmt: skip
    assert deltas[0].attempt == 2
    assert t.deltas is True


def test_snapshot_and_open_paths() -> None:
    t = FieldTracker(Order)
    assert t.snapshot is None
    assert t.open_paths == []
    t.feed('{"id": "o1", "items": [{"name": "pe')
    assert t.snapshot == {"id": "o1", "items": [{"name": "pe"}]}
    assert t.open_paths == [(), ("items",), ("items", 0), ("items", 0, "name")]
    t.feed('n", "qty":')
    assert t.open_paths == [(), ("items",), ("items", 0), ("items", 0, "qty")]


def test_truncated_carries_snapshot_and_open_paths() -> None:
    t = FieldTracker(Order)
    t.feed('{"id": "o1", "items": [{"name": "pe')
    with pytest.raises(TruncatedError) as info:
        t.close()
    assert info.value.snapshot == {"id": "o1", "items": [{"name": "pe"}]}
    assert info.value.open_paths[-1] == ("items", 0, "name")
    assert info.value.reason == "eof"
    assert isinstance(info.value.__cause__, partial.IncompleteJSONError)
    with pytest.raises(TruncatedError):  # sticky
        t.close()


def test_empty_output_is_truncated() -> None:
    with pytest.raises(TruncatedError) as info:
        FieldTracker(Order).close()
    assert info.value.snapshot is None
    assert info.value.open_paths == []


def test_syntax_error_chains_the_parser_error() -> None:
    t = FieldTracker({"type": "object"})
    t.feed('{"a": 1')
    with pytest.raises(OutputSyntaxError) as info:
        t.feed(" x")
    assert info.value.offset == 8
    assert isinstance(info.value.__cause__, partial.JSONSyntaxError)
    with pytest.raises(OutputSyntaxError):  # sticky
        t.feed("}")


def test_a_violation_before_a_syntax_error_in_one_chunk_wins() -> None:
    t = FieldTracker({"properties": {"a": {"type": "string"}}})
    with pytest.raises(SchemaViolation) as info:
        t.feed('{"a": 1 x')
    assert info.value.path == ("a",)


def test_limits_are_syntax_errors() -> None:
    t = FieldTracker({}, max_depth=2)
    with pytest.raises(OutputSyntaxError) as info:
        t.feed("[[[")
    assert isinstance(info.value.__cause__, partial.JSONLimitError)


def test_violation_is_sticky_and_detailed() -> None:
    t = FieldTracker(Order)
    with pytest.raises(SchemaViolation) as info:
        t.feed('{"id": "o1", "status": "cl')
    exc = info.value
    assert (exc.path, exc.pointer, exc.keyword, exc.offset) == (("status",), "/status", "enum", 24)
    assert exc.value == "cl"  # the prefix that no member starts with
    assert "open" in exc.message
    assert str(exc).startswith("/status: ")
    with pytest.raises(SchemaViolation) as again:
        t.feed("osed")
    assert again.value is exc
    with pytest.raises(SchemaViolation):
        t.close()


def test_pydantic_validators_run_at_close() -> None:
    t = FieldTracker(Order)
    t.feed('{"id": "o1", "status": "shipped", "items": []}')
    with pytest.raises(ValidationFailed) as info:
        t.close()
    assert "a shipped order has items" in info.value.message
    assert info.value.errors and info.value.errors[0][0] == ()
    assert info.value.keyword == "value_error"


def test_field_constraints_fire_early_from_the_model_schema() -> None:
    t = FieldTracker(Order)
    with pytest.raises(SchemaViolation) as info:
        t.feed('{"id": "o1", "status": "open", "items": [{"name": "pen", "qty": 0}')
    assert (info.value.path, info.value.keyword) == (("items", 0, "qty"), "minimum")


def test_results_by_schema_kind() -> None:
    t = FieldTracker(list[int])
    t.feed("[1, 2.0]")
    assert t.close() == [1, 2]
    t = FieldTracker({"type": "array"})
    t.feed("[1, 2.0]")
    value = t.close()
    assert value == [1, 2.0] and isinstance(value[1], float)
    assert t.close() is value  # idempotent
    adapter = pydantic.TypeAdapter(dict[str, Item])
    t = FieldTracker(adapter)
    t.feed('{"a": {"name": "x", "qty": 3}}')
    assert t.close() == {"a": Item(name="x", qty=3)}


def test_strict_models_validate_as_json() -> None:
    class Pair(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(strict=True)
        p: tuple[int, int]

    t = FieldTracker(Pair)
    t.feed('{"p": [1, 2]}')
    assert t.close() == Pair(p=(1, 2))


def test_root_number_fires_at_finish() -> None:
    t = FieldTracker({"type": "integer"})
    assert t.feed("42") == []
    events = t.finish()
    assert [(e.path, e.value, e.offset) for e in fields(events)] == [((), 42, 2)]
    assert t.close() == 42


def test_feed_after_close_is_misuse() -> None:
    t = FieldTracker({})
    t.feed("{}")
    t.close()
    with pytest.raises(StreamUsageError):
        t.feed(" ")


def test_lenient_skips_prose_and_fences() -> None:
    t = FieldTracker(Item, lenient=True)
    events = t.feed('Sure! ```json\n{"name": "x", "qty": 2}\n``` done')
    assert [e.path for e in fields(events)] == [("name",), ("qty",), ()]
    assert t.close() == Item(name="x", qty=2)
    with pytest.raises(OutputSyntaxError):
        FieldTracker(Item).feed("Sure! {")


def test_schema_properties() -> None:
    t = FieldTracker(Order)
    assert t.schema_name == "Order"
    schema = t.json_schema
    assert schema["title"] == "Order" and "$defs" in schema
    schema["title"] = "changed"
    assert t.json_schema["title"] == "Order"  # a fresh copy each time
    assert FieldTracker({"title": "my schema!"}).schema_name == "my_schema"
    assert FieldTracker({}).schema_name == "response"
    assert FieldTracker(True).json_schema == {}
    assert t.offset == 0 and not t.done
    t.feed(ORDER)
    assert t.offset == len(ORDER) and t.done


@pytest.mark.parametrize("schema", [{}, {"properties": {"n": {"type": "integer"}}}, Item])
def test_a_duplicate_key_is_refused_at_its_closing_quote(schema: object) -> None:
    doc = '{"name": "a", "qty": 1, "name": "b"}'
    at = doc.rindex('"name"') + len('"name"') - 1
    for chunks in ([doc], list(doc)):
        t = FieldTracker(schema)
        with pytest.raises(SchemaViolation) as info:
            feed_chunks(t, chunks)
        exc = info.value
        assert (exc.path, exc.keyword, exc.value) == (("name",), "duplicateKey", "name")
        assert (exc.offset, exc.start) == (at, doc.rindex('"name"'))
    # The same key in different objects is no duplicate.
    FieldTracker({}).feed('{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}')


@pytest.mark.parametrize(
    ("schema", "doc", "start_at"),
    [
        pytest.param({"items": {"maxLength": 2}}, '[1, "abc"]', '"abc"', id="string"),
        pytest.param({"items": {"type": "string"}}, '["a", {"b": 1}]', "{", id="type"),
        pytest.param({"items": {"minimum": 5}}, "[7, 3]", "3]", id="number"),
        pytest.param(
            {"properties": {"o": {"required": ["x"]}}}, '{"o": {"y": 1}}', '{"y"', id="required"
        ),
        pytest.param({"additionalProperties": False}, '{"k": 1}', '"k"', id="key"),
        pytest.param({"maxItems": 1}, "[1, 2]", ", 2", id="comma"),
    ],
)
def test_a_violation_says_where_the_offending_value_began(
    schema: object, doc: str, start_at: str
) -> None:
    with pytest.raises(SchemaViolation) as info:
        FieldTracker(schema).feed(doc)
    assert info.value.start == doc.index(start_at)
