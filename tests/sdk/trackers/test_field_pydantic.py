"""A pydantic type is judged by pydantic: never by a stricter reading of its JSON Schema, at any
depth it accepts; and nested models are validated by pydantic the moment their object closes."""

from __future__ import annotations

import datetime
import json
import uuid
from collections import Counter
from typing import Annotated, Literal

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._errors import OutputSyntaxError, SchemaViolation, StreamError, ValidationFailed
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import assert_valid, feed_chunks

# ---------------------------------------------------------------------- never stricter


class Stamped(pydantic.BaseModel):
    id: uuid.UUID
    at: datetime.datetime
    day: datetime.date
    n: int
    ratio: float
    flag: bool
    level: Literal[1, 2]
    on: Literal[True]


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(
            '{"id": "a8098c1af86e11dabd1a00112444be1e", "at": "2024-01-01T10:00:00", '
            '"day": "2024-01-01", "n": 1, "ratio": 1, "flag": true, "level": 1, "on": true}',
            id="uuid-32-hex-and-naive-datetime",
        ),
        pytest.param(
            '{"id": "{a8098c1a-f86e-11da-bd1a-00112444be1e}", "at": 1700000000, "day": 0, '
            '"n": "5", "ratio": " 1.5 ", "flag": "yes", "level": true, "on": 1}',
            id="lax-forms",
        ),
        pytest.param(
            '{"id": "urn:uuid:a8098c1a-f86e-11da-bd1a-00112444be1e", "at": "2024-01-01 10:00", '
            '"day": "2024-01-01", "n": 5.0, "ratio": "inf", "flag": 0, "level": 2.0, "on": 1.0}',
            id="more-lax-forms",
        ),
    ],
)
def test_what_pydantic_accepts_passes_under_every_chunking(doc: str) -> None:
    expected = pydantic.TypeAdapter(Stamped).validate_json(doc)
    assert assert_valid(Stamped, doc) == expected


def test_formats_are_pydantics_even_when_asserted() -> None:
    t = FieldTracker(Stamped, formats="assert")
    doc = (
        '{"id": "a8098c1af86e11dabd1a00112444be1e", "at": "2024-01-01T10:00:00", '
        '"day": "2024-01-01", "n": 1, "ratio": 1, "flag": true, "level": 1, "on": true}'
    )
    t.feed(doc)
    assert isinstance(t.close(), Stamped)
    bad = doc.replace("a8098c1af86e11dabd1a00112444be1e", "not-a-uuid")
    with pytest.raises(SchemaViolation) as early:  # pydantic's verdict, when the field is final
        FieldTracker(Stamped).feed(bad)
    assert early.value.path == ("id",) and early.value.keyword == "uuid_parsing"
    with pytest.raises(ValidationFailed) as info:  # eager: pydantic's verdict, at close
        t = FieldTracker(Stamped, dispatch="eager")
        t.feed(bad)
        t.close()
    assert info.value.path == ("id",)


def test_lax_strings_are_still_refused_when_no_number_could_come_of_them() -> None:
    doc = '{"id": "a8098c1af86e11dabd1a00112444be1e", "at": 0, "day": 0, "n": "5x'
    with pytest.raises(SchemaViolation) as info:
        FieldTracker(Stamped).feed(doc)
    assert (info.value.path, info.value.keyword) == (("n",), "pattern")
    assert info.value.offset == doc.index("5x") + 1 and info.value.value == "5x"


def test_a_strict_model_is_held_to_strict_json() -> None:
    class Strict(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(strict=True)
        n: int
        when: datetime.date

    with pytest.raises(SchemaViolation) as info:
        FieldTracker(Strict).feed('{"n": "')
    assert (info.value.path, info.value.keyword) == (("n",), "type")
    assert_valid(Strict, '{"n": 5, "when": "2024-01-01"}')


def test_a_before_validator_may_take_anything() -> None:
    def parse(v: object) -> object:
        return {"five": 5}.get(v, v) if isinstance(v, str) else v

    class Loose(pydantic.BaseModel):
        n: Annotated[int, pydantic.BeforeValidator(parse)]

    assert assert_valid(Loose, '{"n": "five"}') == Loose(n=5)


def test_names_and_alias_choices_are_accepted() -> None:
    class Named(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid", populate_by_name=True)
        full_name: str = pydantic.Field(alias="fullName")
        age: int = pydantic.Field(validation_alias=pydantic.AliasChoices("age", "years"))

    assert assert_valid(Named, '{"full_name": "A", "years": 3}') == Named(fullName="A", age=3)
    with pytest.raises(SchemaViolation):  # still a number where one must be
        FieldTracker(Named).feed('{"fullName": "A", "full_name": [')


def test_transformed_strings_are_bounded_after_the_transform() -> None:
    class Code(pydantic.BaseModel):
        code: Annotated[str, pydantic.StringConstraints(strip_whitespace=True, max_length=3)]

    assert assert_valid(Code, '{"code": "   abc   "}') == Code(code="abc")


# ---------------------------------------------------------------------- depth


class Link(pydantic.BaseModel):
    v: int
    next: Link | None = None


def chain(n: int) -> str:
    node: dict[str, object] | None = None
    for i in range(n):
        node = {"v": i, "next": node}
    return json.dumps(node)


@pytest.mark.parametrize("depth", [164, 190])
def test_every_depth_pydantic_accepts_passes(depth: int) -> None:
    doc = chain(depth)
    expected = pydantic.TypeAdapter(Link).validate_json(doc)
    t = FieldTracker(Link)
    t.feed(doc)
    assert t.close() == expected


def test_past_pydantics_depth_the_error_is_a_stream_error() -> None:
    t = FieldTracker(Link)
    t.feed(chain(400))
    with pytest.raises(ValidationFailed):
        t.close()
    with pytest.raises(OutputSyntaxError) as info:  # past the tracker's own limit
        FieldTracker(Link, max_depth=100).feed(chain(101))
    assert isinstance(info.value, StreamError)


def test_a_deep_dict_schema_never_recurses() -> None:
    schema = {"$defs": {"n": {"properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}
    t = FieldTracker(schema, max_depth=5000)
    t.feed('{"next": ' * 4000 + "{}" + "}" * 4000)
    assert t.close()["next"]["next"] is not None


# ---------------------------------------------------------------------- early validators


calls: Counter[str] = Counter()


class Leaf(pydantic.BaseModel):
    name: str

    @pydantic.field_validator("name")
    @classmethod
    def _not_bad(cls, v: str) -> str:
        calls["leaf"] += 1
        if v == "bad":
            raise ValueError("a leaf must not be bad")
        return v


class Branch(pydantic.BaseModel):
    leaves: list[Leaf]

    @pydantic.model_validator(mode="after")
    def _some(self) -> Branch:
        calls["branch"] += 1
        if not self.leaves:
            raise ValueError("a branch has leaves")
        return self


class Tree(pydantic.BaseModel):
    branches: list[Branch]
    size: int

    @pydantic.model_validator(mode="after")
    def _size(self) -> Tree:
        calls["tree"] += 1
        if self.size != sum(len(b.leaves) for b in self.branches):
            raise ValueError("size is the number of leaves")
        return self


def first_error(doc: str) -> tuple[int, SchemaViolation]:
    t = FieldTracker(Tree)
    for i, ch in enumerate(doc):
        try:
            t.feed(ch)
        except SchemaViolation as exc:
            return i, exc
    raise AssertionError("no violation")


def test_a_nested_field_validator_raises_when_its_field_closes() -> None:
    doc = '{"branches": [{"leaves": [{"name": "ok"}, {"name": "bad"}, {"name": "x"}]}], "size": 3}'
    at, exc = first_error(doc)
    assert at == doc.index('"bad"}') + len('"bad"') - 1  # the string's closing quote
    assert (exc.path, exc.keyword) == (("branches", 0, "leaves", 1, "name"), "value_error")
    assert "a leaf must not be bad" in exc.message
    assert exc.offset == at and exc.start == doc.index('"bad"')


def test_eager_dispatch_runs_a_nested_field_validator_when_its_object_closes() -> None:
    doc = '{"branches": [{"leaves": [{"name": "ok"}, {"name": "bad"}, {"name": "x"}]}], "size": 3}'
    t = FieldTracker(Tree, dispatch="eager")
    with pytest.raises(SchemaViolation) as info:
        for ch in doc:
            t.feed(ch)
    assert info.value.offset == doc.index('"bad"}') + len('"bad"')  # the leaf's closing brace
    assert info.value.start == doc.index('{"name": "bad"')


def test_a_nested_model_validator_raises_when_its_object_closes() -> None:
    doc = '{"branches": [{"leaves": []}, {"leaves": [{"name": "a"}]}], "size": 1}'
    at, exc = first_error(doc)
    assert at == doc.index("[]}") + 2
    assert (exc.path, exc.keyword) == (("branches", 0), "value_error")


def test_the_roots_cross_field_validator_runs_at_close() -> None:
    t = FieldTracker(Tree)
    t.feed('{"branches": [{"leaves": [{"name": "a"}]}], "size": 2}')
    with pytest.raises(ValidationFailed) as info:
        t.close()
    assert "size is the number of leaves" in info.value.message


def test_each_nested_model_is_validated_once_before_close() -> None:
    doc = json.dumps(
        {"branches": [{"leaves": [{"name": f"n{i}{j}"} for j in range(3)]} for i in range(4)],
         "size": 12}
    )  # fmt: skip
    calls.clear()
    t = FieldTracker(Tree)
    feed_chunks(t, list(doc))
    # Each leaf's field validator twice: when its field is final (before its event) and when
    # its leaf is validated (a branch is validated with its leaves' instances, so their fields
    # are not validated again); each branch once; the root not yet.
    assert calls == Counter({"leaf": 24, "branch": 4})
    t.close()  # pydantic reads the whole document once more, as validate_json would
    assert calls == Counter({"leaf": 36, "branch": 8, "tree": 1})
    calls.clear()
    t = FieldTracker(Tree, dispatch="eager")  # no field checks: each leaf's validator once
    feed_chunks(t, list(doc))
    assert calls == Counter({"leaf": 12, "branch": 4})


def test_a_union_branch_refused_by_pydantic_leaves_the_other() -> None:
    class Even(pydantic.BaseModel):
        n: int

        @pydantic.field_validator("n")
        @classmethod
        def _even(cls, v: int) -> int:
            if v % 2:
                raise ValueError("odd")
            return v

    class Small(pydantic.BaseModel):
        n: int = pydantic.Field(lt=10)

    class Holder(pydantic.BaseModel):
        items: list[Even | Small]

    assert_valid(Holder, '{"items": [{"n": 3}, {"n": 12}]}')
    with pytest.raises(SchemaViolation) as info:
        FieldTracker(Holder).feed('{"items": [{"n": 3}, {"n": 13}')
    assert info.value.path[:2] == ("items", 1)


def test_a_discriminated_union_follows_its_tag() -> None:
    class Cat(pydantic.BaseModel):
        kind: Literal["cat"]
        lives: int = pydantic.Field(le=9)

    class Dog(pydantic.BaseModel):
        kind: Literal["dog"]
        bark: str

    class Owner(pydantic.BaseModel):
        pets: list[Annotated[Cat | Dog, pydantic.Field(discriminator="kind")]]

    assert_valid(Owner, '{"pets": [{"kind": "dog", "bark": "woof"}, {"kind": "cat", "lives": 9}]}')
    with pytest.raises(SchemaViolation) as info:
        FieldTracker(Owner).feed('{"pets": [{"kind": "cat", "lives": 10,')
    assert (info.value.path, info.value.keyword) == (("pets", 0, "lives"), "maximum")


@settings(max_examples=1500, deadline=None)
@given(
    kind=st.sampled_from([int, float, bool]),
    text=st.text(" \t\n0123456789_.+-eEinfatyINFATYrueolsn", max_size=8),
)
def test_the_strings_lax_pydantic_reads_pass_the_trackers_pattern(kind: type, text: str) -> None:
    adapter = pydantic.TypeAdapter(kind)
    doc = json.dumps(text)
    try:
        expected = adapter.validate_json(doc)
    except pydantic.ValidationError:
        return
    # pydantic reads this string as a(n) ``kind``: the tracker must let it through.
    t = FieldTracker(kind)
    feed_chunks(t, list(doc))
    assert repr(t.close()) == repr(expected)
