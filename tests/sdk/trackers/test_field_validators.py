"""Pydantic validators judge a field before its event (``dispatch="validated"``, the default):
field-level validators when the field is final, a model validator's fields held until it
passed. Tracker level; the stream's side is in test_stream_validated.py."""

from __future__ import annotations

import contextlib
import datetime
import io
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
import pytest
from pydantic import (
    AfterValidator,
    AliasChoices,
    BeforeValidator,
    Field,
    PlainValidator,
    WrapValidator,
    field_validator,
    model_validator,
)

from sdk._errors import SchemaViolation, ValidationFailed
from sdk._events import FieldEvent
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import feed_chunks


def run(schema: Any, doc: str, **kw: Any) -> tuple[list[FieldEvent], BaseException | None]:
    """Feed ``doc`` one character at a time, then finish and close: the field events in the
    order they came, and the error that stopped it (``None`` when it passed)."""
    t = FieldTracker(schema, **kw)
    out: list[FieldEvent] = []
    try:
        for ch in doc:
            out.extend(e for e in t.feed(ch) if isinstance(e, FieldEvent))
        out.extend(e for e in t.finish() if isinstance(e, FieldEvent))
        t.close()
    except (SchemaViolation, ValidationFailed) as exc:
        return out, exc
    return out, None


def pointers(events: list[FieldEvent]) -> list[str]:
    return [e.pointer for e in events]


# ---------------------------------------------------------------- the table


class Hobby(pydantic.BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def _lower(cls, v: str) -> str:
        if v != v.lower():
            raise ValueError("a hobby is lower case")
        return v


class Person(pydantic.BaseModel):
    name: str
    hobbies: list[Hobby] = []

    @field_validator("name")
    @classmethod
    def _no_bob(cls, v: str) -> str:
        if v == "Bob":
            raise ValueError("no Bob")
        return v


def _lower(s: str) -> str:
    if s != s.lower():
        raise ValueError("a tag is lower case")
    return s


class Tagged(pydantic.BaseModel):
    tag: Annotated[str, AfterValidator(_lower)]
    n: int


class Range(pydantic.BaseModel):
    lo: int
    hi: int

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.lo > self.hi:
            raise ValueError("lo > hi")
        return self


class Ranges(pydantic.BaseModel):
    ranges: list[Range]


TABLE = [
    (Person, '{"name": "Bob", "hobbies": [{"name": "chess"}]}', "/name", "no Bob"),
    (Person, '{"name": "ann", "hobbies": [{"name": "Chess"}]}', "/hobbies/0/name", "lower case"),
    (Tagged, '{"tag": "ABC", "n": 1}', "/tag", "a tag is lower case"),
    (Ranges, '{"ranges": [{"lo": 5, "hi": 1}]}', "/ranges/0/lo", "lo > hi"),
]


@pytest.mark.parametrize(("schema", "doc", "refused", "message"), TABLE)
def test_no_event_carries_a_value_a_validator_refuses(
    schema: Any, doc: str, refused: str, message: str
) -> None:
    events, error = run(schema, doc)
    assert isinstance(error, SchemaViolation) and message in str(error)
    assert refused not in pointers(events)


@pytest.mark.parametrize(("schema", "doc", "refused", "message"), TABLE)
def test_eager_dispatch_sends_the_value_before_the_error_as_before(
    schema: Any, doc: str, refused: str, message: str
) -> None:
    events, error = run(schema, doc, dispatch="eager")
    assert isinstance(error, SchemaViolation) and message in str(error)
    assert refused in pointers(events)


def test_what_each_mode_dispatches_before_the_error() -> None:
    """The table of docs/events.md."""
    got = {}
    for schema, doc, _, _ in TABLE:
        for mode in ("eager", "validated"):
            events, error = run(schema, doc, dispatch=mode)
            assert isinstance(error, SchemaViolation)
            got[schema.__name__, doc[:12], mode] = (pointers(events), error.path)
    assert got == {
        ("Person", '{"name": "Bo', "eager"): (
            ["/name", "/hobbies/0/name", "/hobbies/0", "/hobbies", ""],
            ("name",),  # at the end: the root's validators ran only there
        ),
        ("Person", '{"name": "Bo', "validated"): ([], ("name",)),
        ("Person", '{"name": "an', "eager"): (["/name", "/hobbies/0/name"], ("hobbies", 0, "name")),
        ("Person", '{"name": "an', "validated"): (["/name"], ("hobbies", 0, "name")),
        ("Tagged", '{"tag": "ABC', "eager"): (["/tag", "/n", ""], ("tag",)),
        ("Tagged", '{"tag": "ABC', "validated"): ([], ("tag",)),
        ("Ranges", '{"ranges": [', "eager"): (["/ranges/0/lo"], ("ranges", 0)),
        ("Ranges", '{"ranges": [', "validated"): ([], ("ranges", 0)),
    }


def test_the_error_is_raised_where_the_field_ends() -> None:
    doc = '{"name": "Bob", "hobbies": []}'
    t = FieldTracker(Person)
    with pytest.raises(SchemaViolation) as info:
        t.feed(doc)
    exc = info.value
    assert (exc.path, exc.keyword, exc.value) == (("name",), "value_error", "Bob")
    assert exc.offset == doc.index('",') and exc.start == doc.index('"Bob"')


# ---------------------------------------------------------------- field validator variants


def _double(v: Any) -> Any:
    return v * 2 if isinstance(v, int) else v


def _wrap(v: Any, handler: Any) -> Any:
    out = handler(v)
    if out < 0:
        raise ValueError("negative")
    return out + 1


def _plain(v: Any) -> int:
    if not isinstance(v, int) or v > 10:
        raise ValueError("at most 10")
    return v * 100


class Modes(pydantic.BaseModel):
    before: int = 0
    after: int = 0
    wrap: int = 0
    plain: int = 0

    @field_validator("before", mode="before")
    @classmethod
    def _b(cls, v: Any) -> Any:
        return int(v.strip()) if isinstance(v, str) else v

    @field_validator("after", mode="after")
    @classmethod
    def _a(cls, v: int) -> int:
        if v % 2:
            raise ValueError("even only")
        return v // 2

    @field_validator("wrap", mode="wrap")
    @classmethod
    def _w(cls, v: Any, handler: Any) -> int:
        return int(_wrap(v, handler))

    @field_validator("plain", mode="plain")
    @classmethod
    def _p(cls, v: Any) -> int:
        return _plain(v)


def test_field_validator_modes_give_the_validated_value_on_the_event() -> None:
    events, error = run(Modes, '{"before": " 7 ", "after": 4, "wrap": 1, "plain": 3}')
    assert error is None
    got = {e.pointer: (e.value, e.validated, e.changed) for e in events if e.path}
    assert got == {
        "/before": (" 7 ", 7, True),
        "/after": (4, 2, True),
        "/wrap": (1, 2, True),
        "/plain": (3, 300, True),
    }
    root = events[-1]
    assert root.path == () and not root.changed and root.validated is root.value


@pytest.mark.parametrize(
    ("doc", "refused"),
    [
        ('{"after": 3, "wrap": 1}', "/after"),
        ('{"wrap": -5, "after": 2}', "/wrap"),
        ('{"plain": 11, "after": 2}', "/plain"),
        ('{"before": "x", "after": 2}', "/before"),
    ],
)
def test_each_mode_refuses_before_the_event(doc: str, refused: str) -> None:
    events, error = run(Modes, doc)
    assert isinstance(error, SchemaViolation) and error.path == (refused[1:],)
    assert pointers(events) == []  # the refused field was the first


class Annotated4(pydantic.BaseModel):
    a: Annotated[int, AfterValidator(_double)] = 0
    b: Annotated[int, BeforeValidator(lambda v: len(v) if isinstance(v, str) else v)] = 0
    w: Annotated[int, WrapValidator(_wrap)] = 0
    p: Annotated[int, PlainValidator(_plain)] = 0


def test_annotated_validators_run_before_the_event() -> None:
    events, error = run(Annotated4, '{"a": 2, "b": "abc", "w": 3, "p": 1}')
    assert error is None
    assert {e.pointer: e.validated for e in events if e.path} == {
        "/a": 4,
        "/b": 3,
        "/w": 4,
        "/p": 100,
    }
    events, error = run(Annotated4, '{"a": 1, "p": 99}')
    assert isinstance(error, SchemaViolation) and error.path == ("p",)
    assert pointers(events) == ["/a"]


def test_a_field_without_a_validator_is_not_marked_changed() -> None:
    events, error = run(Tagged, '{"tag": "abc", "n": 1}')
    assert error is None
    assert [(e.pointer, e.changed) for e in events] == [("/tag", False), ("/n", False), ("", False)]


class Aliased(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    first: Annotated[str, AfterValidator(_lower)] = Field(default="", alias="First")
    second: Annotated[str, AfterValidator(_lower)] = Field(
        default="", validation_alias=AliasChoices("Second", "snd")
    )


@pytest.mark.parametrize(
    ("doc", "refused"),
    [
        ('{"First": "A"}', "/First"),
        ('{"first": "A"}', "/first"),  # by name (populate_by_name)
        ('{"Second": "A"}', "/Second"),
        ('{"snd": "A"}', "/snd"),
    ],
)
def test_a_field_is_found_under_its_alias_its_alias_choices_and_its_name(
    doc: str, refused: str
) -> None:
    events, error = run(Aliased, doc)
    assert isinstance(error, SchemaViolation) and "a tag is lower case" in str(error)
    assert error.path == (refused[1:],)
    assert events == []


class Cat(pydantic.BaseModel):
    kind: Literal["cat"]
    name: Annotated[str, AfterValidator(_lower)]


class Dog(pydantic.BaseModel):
    kind: Literal["dog"]
    name: str


class Pets(pydantic.BaseModel):
    pets: list[Annotated[Cat | Dog, Field(discriminator="kind")]]
    best: Cat | Dog | None = None
    maybe: Annotated[str, AfterValidator(_lower)] | None = None


def test_a_discriminated_union_judges_by_the_branch_it_picked() -> None:
    events, error = run(Pets, '{"pets": [{"kind": "dog", "name": "Rex"}]}')
    assert error is None and "/pets/0/name" in pointers(events)
    events, error = run(Pets, '{"pets": [{"kind": "cat", "name": "Tom"}]}')
    assert isinstance(error, SchemaViolation) and error.path == ("pets", 0, "name")
    assert "/pets/0/name" not in pointers(events)


def test_a_plain_union_fails_only_when_no_branch_takes_the_value() -> None:
    events, error = run(Pets, '{"pets": [], "best": {"kind": "dog", "name": "Rex"}}')
    assert error is None and "/best/name" in pointers(events)
    events, error = run(Pets, '{"pets": [], "best": {"kind": "cat", "name": "Tom"}}')
    assert isinstance(error, SchemaViolation)
    assert "/best/name" not in pointers(events)


def test_an_optional_field_with_a_validator() -> None:
    events, error = run(Pets, '{"pets": [], "maybe": null}')
    assert error is None and "/maybe" in pointers(events)
    events, error = run(Pets, '{"pets": [], "maybe": "X"}')
    assert isinstance(error, SchemaViolation) and error.path == ("maybe",)
    assert "/maybe" not in pointers(events)


class Listed(pydantic.BaseModel):
    tags: Annotated[list[str], AfterValidator(lambda v: [_lower(t) for t in v])]
    n: int = 0


def test_a_container_field_holds_its_items_until_its_validators_passed() -> None:
    t = FieldTracker(Listed)
    assert t.feed('{"tags": ["a", "b"') == []  # /tags/0 waits for /tags
    events = [e.pointer for e in t.feed("]")]
    assert events == ["/tags/0", "/tags/1", "/tags"]
    events_bad, error = run(Listed, '{"tags": ["a", "B"], "n": 1}')
    assert isinstance(error, SchemaViolation) and events_bad == []


class Seen(pydantic.BaseModel):
    a: int
    b: int

    @field_validator("b")
    @classmethod
    def _more(cls, v: int, info: pydantic.ValidationInfo) -> int:
        if v <= info.data["a"]:
            raise ValueError("b > a")
        return v


class Seens(pydantic.BaseModel):
    seen: list[Seen]
    n: int = 0


def test_info_data_shows_the_fields_that_came_before() -> None:
    events, error = run(Seen, '{"a": 2, "b": 1}')
    assert isinstance(error, SchemaViolation) and error.path == ("b",)
    assert pointers(events) == ["/a"]
    # b before a: its validator cannot judge alone; the final validation does, and b (and
    # what follows it in its object) waits for it.
    events, error = run(Seen, '{"b": 1, "a": 2}')
    assert isinstance(error, ValidationFailed) and events == []
    events, error = run(Seen, '{"b": 3, "a": 2}')
    assert error is None and pointers(events) == ["/b", "/a", ""]


def test_a_field_that_cannot_be_judged_alone_waits_for_its_object() -> None:
    t = FieldTracker(Seens)
    assert t.feed('{"seen": [{"b": 3, "a": 2') == []
    assert pointers(fields_of(t.feed("}"))) == ["/seen/0/b", "/seen/0/a", "/seen/0"]
    events, error = run(Seens, '{"seen": [{"b": 1, "a": 2}], "n": 1}')
    assert isinstance(error, SchemaViolation) and error.path == ("seen", 0, "b")
    assert events == []


def fields_of(events: list[Any]) -> list[FieldEvent]:
    return [e for e in events if isinstance(e, FieldEvent)]


# ---------------------------------------------------------------- model validators hold


class Outer(pydantic.BaseModel):
    first: int
    ranges: list[Range]
    last: int


def test_held_events_go_out_in_document_order_when_the_object_passed() -> None:
    t = FieldTracker(Outer)
    pieces = [
        '{"first": 1, "ranges": [{"lo": 1,',
        ' "hi": 2}',
        ', {"lo": 3, "hi": 4}]',
        ', "last": 9}',
    ]
    seen = [[e.pointer for e in t.feed(piece) if isinstance(e, FieldEvent)] for piece in pieces]
    seen.append([e.pointer for e in t.finish() if isinstance(e, FieldEvent)])
    assert seen == [
        ["/first"],  # /ranges/0/lo waits for its Range
        ["/ranges/0/lo", "/ranges/0/hi", "/ranges/0"],
        ["/ranges/1/lo", "/ranges/1/hi", "/ranges/1", "/ranges"],
        ["/last", ""],
        [],
    ]
    eager = FieldTracker(Outer, dispatch="eager")
    doc = '{"first": 1, "ranges": [{"lo": 1, "hi": 2}, {"lo": 3, "hi": 4}], "last": 9}'
    assert [e.pointer for e in feed_chunks(eager, list(doc)) + eager.finish()] == [
        p for step in seen for p in step
    ]


def test_a_model_validator_failure_never_lets_its_fields_out() -> None:
    doc = '{"first": 1, "ranges": [{"lo": 1, "hi": 2}, {"lo": 5, "hi": 1}], "last": 9}'
    events, error = run(Outer, doc)
    assert isinstance(error, SchemaViolation) and error.path == ("ranges", 1)
    assert pointers(events) == ["/first", "/ranges/0/lo", "/ranges/0/hi", "/ranges/0"]


class Box(pydantic.BaseModel):
    inner: Range
    size: int

    @model_validator(mode="wrap")
    @classmethod
    def _fits(cls, data: Any, handler: Any) -> Box:
        box = handler(data)
        if box.inner.hi > box.size:
            raise ValueError("does not fit")
        return box  # type: ignore[no-any-return]


class Boxes(pydantic.BaseModel):
    boxes: list[Box]


def test_nested_holds_release_only_when_the_outermost_passed() -> None:
    t = FieldTracker(Boxes)
    assert t.feed('{"boxes": [{"inner": {"lo": 1, "hi": 2},') == []  # Range passed; Box holds
    assert [e.pointer for e in t.feed(' "size": 3}')] == [
        "/boxes/0/inner/lo",
        "/boxes/0/inner/hi",
        "/boxes/0/inner",
        "/boxes/0/size",
        "/boxes/0",
    ]
    events, error = run(Boxes, '{"boxes": [{"inner": {"lo": 1, "hi": 5}, "size": 3}]}')
    assert isinstance(error, SchemaViolation) and "does not fit" in str(error)
    assert events == []


# ---------------------------------------------------------------- docs/events.md

DOCS = Path(__file__).resolve().parents[3] / "docs" / "events.md"
SNIPPETS = [
    b
    for b in re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    if "Client.local()" not in b
]


@pytest.mark.parametrize("code", SNIPPETS)
def test_the_docs_snippets_run_and_print_what_they_say(code: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOCS), "exec", dont_inherit=True), {"__name__": "__docs__"})
    for line in code.splitlines():
        if line.lstrip().startswith("print(") and "  # " in line:
            expected = line.split("  # ", 1)[1].split(", judged")[0]
            assert expected in out.getvalue()


def test_the_docs_have_their_snippets() -> None:
    assert len(SNIPPETS) == 4


class Shifted(pydantic.BaseModel):
    lo: int
    hi: int

    @model_validator(mode="before")
    @classmethod
    def _swap(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("lo", 0) > data.get("hi", 0):
            raise ValueError("lo > hi")
        return data


class ShiftedList(pydantic.BaseModel):
    items: list[Shifted]


class WrappedRoot(pydantic.BaseModel):
    a: int

    @model_validator(mode="wrap")
    @classmethod
    def _check(cls, data: Any, handler: Any) -> WrappedRoot:
        out = handler(data)
        if out.a < 0:
            raise ValueError("a >= 0")
        return out  # type: ignore[no-any-return]


def test_a_before_model_validator_holds_its_fields_too() -> None:
    t = FieldTracker(ShiftedList)
    assert t.feed('{"items": [{"lo": 1, "hi": 2') == []
    assert [e.pointer for e in t.feed("}")] == ["/items/0/lo", "/items/0/hi", "/items/0"]
    events, error = run(ShiftedList, '{"items": [{"lo": 3, "hi": 2}]}')
    assert isinstance(error, SchemaViolation) and events == []


def test_a_root_wrap_model_validator_holds_until_the_end() -> None:
    events, error = run(WrappedRoot, '{"a": -1}')
    assert isinstance(error, ValidationFailed) and events == []
    t = FieldTracker(WrappedRoot)
    assert t.feed('{"a": 1}') == []
    assert [e.pointer for e in t.finish()] == ["/a", ""]


class Dated(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(str_to_lower=True)

    when: datetime.date
    code: Annotated[str, pydantic.StringConstraints(strip_whitespace=True, max_length=3)]
    name: str = ""
    n: int = 0


def test_pydantic_s_own_checks_on_a_field_run_before_its_event() -> None:
    events, error = run(Dated, '{"when": "2024-02-30", "code": "ab"}')
    assert isinstance(error, SchemaViolation) and error.path == ("when",)
    assert events == []
    events, error = run(Dated, '{"when": "2024-02-03", "code": "  abcd "}')
    assert isinstance(error, SchemaViolation) and error.path == ("code",)
    assert pointers(events) == ["/when"]
    events, error = run(Dated, '{"when": "2024-02-03", "code": " ab ", "name": "Ada", "n": 1}')
    assert error is None
    got = {e.pointer: (e.validated, e.changed) for e in events if e.path}
    assert got == {
        "/when": (datetime.date(2024, 2, 3), True),
        "/code": ("ab", True),
        "/name": ("ada", True),  # the model's str_to_lower
        "/n": (1, False),  # no pydantic call for a plain int
    }


class AliasSeen(pydantic.BaseModel):
    low: int = Field(alias="Low")
    high: int

    @field_validator("high")
    @classmethod
    def _above(cls, v: int, info: pydantic.ValidationInfo) -> int:
        if v <= info.data["low"]:
            raise ValueError("high > low")
        return v


def test_info_data_is_keyed_by_field_name_even_for_an_aliased_field() -> None:
    events, error = run(AliasSeen, '{"Low": 5, "high": 3}')
    assert isinstance(error, SchemaViolation) and error.path == ("high",)
    assert not isinstance(error, ValidationFailed)  # judged when /high closed, not at the end
    assert pointers(events) == ["/Low"]
