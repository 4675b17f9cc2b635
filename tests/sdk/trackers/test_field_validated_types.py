"""Validated, then dispatched, where pydantic is not a BaseModel with plain fields (issue 29.4):
roots that are not models, RootModel fields, patterns pydantic-core reads its own way, types
stricter than their JSON Schema, documents pydantic accepts, unions of validated types."""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
import pytest
from pydantic import AfterValidator, Field, RootModel, StrictInt, field_validator

from sdk._errors import SchemaViolation, ValidationFailed
from sdk._events import FieldEvent
from sdk._schema._compile import compile_schema
from sdk._structured import stream_structured
from sdk._trackers._field import FieldTracker
from tests.sdk.stream._stream_support import Scripted, chunks
from tests.sdk.trackers.test_field_validators import pointers, run


def lower(s: str) -> str:
    if s != s.lower():
        raise ValueError("lower case only")
    return s


def small(n: int) -> int:
    if n > 5:
        raise ValueError("at most 5")
    return n


Lowers = list[Annotated[str, AfterValidator(lower)]]


class LowerRoot(RootModel[Lowers]):
    pass


class HasRoot(pydantic.BaseModel):
    r: LowerRoot
    n: int = 0


# ---------------------------------------------------------------- 1. roots that are not models


@pytest.mark.parametrize("schema", [Lowers, LowerRoot], ids=["list", "RootModel"])
def test_an_item_validator_of_a_root_that_is_not_a_model_runs_before_the_item_event(
    schema: Any,
) -> None:
    events, error = run(schema, '["a", "B", "c"]')
    assert isinstance(error, SchemaViolation)  # at the item, not at close()
    assert (error.path, error.keyword) == ((1,), "value_error") and "lower case" in str(error)
    assert pointers(events) == ["/0"]  # neither /1 nor the root went out
    events, error = run(schema, '["a", "b"]')
    assert error is None and pointers(events) == ["/0", "/1", ""]


def test_the_items_of_a_root_list_still_stream_one_by_one() -> None:
    t = FieldTracker(Lowers)
    assert pointers([e for e in t.feed('["a", "b",') if isinstance(e, FieldEvent)]) == [
        "/0",
        "/1",
    ]


def test_an_annotated_scalar_root_goes_out_only_after_pydantic_passed_it() -> None:
    schema = Annotated[str, AfterValidator(lower)]
    events, error = run(schema, '"B"')
    assert isinstance(error, ValidationFailed) and events == []
    t = FieldTracker(schema)
    assert t.feed('"b"') == []  # the root's event waits for the final validation
    assert pointers([e for e in t.finish() if isinstance(e, FieldEvent)]) == [""]


def test_a_validator_around_a_root_list_holds_its_items() -> None:
    schema = Annotated[list[str], AfterValidator(lambda v: v if len(v) < 3 else lower("X"))]
    events, error = run(schema, '["a", "b", "c"]')
    assert isinstance(error, ValidationFailed) and events == []
    events, error = run(schema, '["a", "b"]')
    assert error is None and pointers(events) == ["/0", "/1", ""]


def test_a_rootmodel_field_judges_its_items_before_their_events() -> None:
    events, error = run(HasRoot, '{"r": ["a", "B"], "n": 1}')
    assert isinstance(error, SchemaViolation) and error.path == ("r", 1)
    assert pointers(events) == ["/r/0"]


# ---------------------------------------------------------------- 2. patterns, pydantic's engine


class Spaced(pydantic.BaseModel):
    a: str = Field(pattern=r"^\s$")


class Bounded(pydantic.BaseModel):
    a: str = Field(pattern=r"^a\b")


@pytest.mark.parametrize(
    ("schema", "doc"),
    [(Spaced, '{"a": "\\ufeff"}'), (Bounded, '{"a": "a\u00e9"}')],
    ids=["s-and-bom", "b-before-non-ascii"],
)
def test_a_pattern_pydantic_core_refuses_is_refused_before_the_event(schema: Any, doc: str) -> None:
    events, error = run(schema, doc)
    assert isinstance(error, SchemaViolation) and not isinstance(error, ValidationFailed)
    assert (error.path, error.keyword) == (("a",), "string_pattern_mismatch")
    assert events == []


def test_a_pattern_both_engines_accept_still_passes() -> None:
    events, error = run(Spaced, '{"a": " "}')
    assert error is None and pointers(events) == ["/a", ""]


# ---------------------------------------------------------------- 3. stricter than the schema


class Strict1(pydantic.BaseModel):
    a: StrictInt
    b: bytes = Field(default=b"", max_length=2)


def test_a_strict_int_given_a_float_is_refused_before_its_event() -> None:
    events, error = run(Strict1, '{"a": 1.0}')
    assert isinstance(error, SchemaViolation) and error.path == ("a",)
    assert events == []
    assert run(Strict1, '{"a": 1}')[1] is None


def test_bytes_are_bounded_in_bytes_before_the_event() -> None:
    events, error = run(Strict1, '{"a": 1, "b": "\u00e9\u00e9"}')
    assert isinstance(error, SchemaViolation) and error.path == ("b",)
    assert error.keyword == "bytes_too_long" and pointers(events) == ["/a"]
    assert run(Strict1, '{"a": 1, "b": "\u00e9"}')[1] is None  # 1 character, 2 bytes: fine


def test_a_lax_int_given_a_string_is_judged_by_pydantic() -> None:
    class Even(pydantic.BaseModel):
        n: int = Field(multiple_of=2)

    events, error = run(Even, '{"n": "7"}')
    assert isinstance(error, SchemaViolation) and error.path == ("n",) and events == []
    events, error = run(Even, '{"n": "8"}')
    assert error is None and pointers(events) == ["/n", ""]


# ---------------------------------------------------------------- 4. documents pydantic accepts


class Tenths(pydantic.BaseModel):
    f: float = Field(multiple_of=0.1)


class Sets(pydantic.BaseModel):
    s: set[str] = set()
    f: frozenset[int] = frozenset()
    two: Annotated[set[int], Field(max_length=2)] = set()


@pytest.mark.parametrize("number", ["0.3", "0.7", "1e-17", "0.1", "2"])
def test_a_float_multiple_of_is_judged_as_pydantic_does(number: str) -> None:
    doc = f'{{"f": {number}}}'
    pydantic.TypeAdapter(Tenths).validate_json(doc)  # pydantic accepts it
    events, error = run(Tenths, doc)
    assert error is None and pointers(events) == ["/f", ""]


def test_a_float_pydantic_refuses_as_a_multiple_is_refused_before_its_event() -> None:
    events, error = run(Tenths, '{"f": 0.35}')
    assert isinstance(error, SchemaViolation) and error.path == ("f",) and events == []


@pytest.mark.parametrize(
    "doc",
    ['{"s": ["a", "a"]}', '{"f": [1, 1]}', '{"two": [1, 1, 2, 2, 1]}'],
)
def test_a_set_with_a_repeated_item_is_not_aborted(doc: str) -> None:
    expected = pydantic.TypeAdapter(Sets).validate_json(doc)
    events, error = run(Sets, doc)
    assert error is None and pointers(events)[-1] == ""
    t = FieldTracker(Sets)
    t.feed(doc)
    assert t.close() == expected


def test_a_set_bounded_in_distinct_items_is_refused_before_its_event() -> None:
    events, error = run(Sets, '{"two": [1, 2, 3], "s": []}')
    assert isinstance(error, SchemaViolation) and error.path == ("two",)
    assert "/two" not in pointers(events)


@pytest.mark.parametrize(
    ("number", "valid"),
    [("0.3", True), ("0.7", True), ("1e-17", False), ("0.30000000000000004", False)],
)
def test_a_dict_schema_judges_multiple_of_exactly(number: str, valid: bool) -> None:
    t = FieldTracker({"type": "number", "multipleOf": 0.1})
    try:
        t.feed(number)
        t.close()
    except SchemaViolation as exc:
        assert not valid and exc.keyword == "multipleOf"
    else:
        assert valid


def test_a_dict_schema_multiple_of_never_overflows() -> None:
    compiled = compile_schema({"type": "integer", "multipleOf": 0.5})
    assert compiled.validate(1e308) == 1e308
    with pytest.raises(ValidationFailed):
        compile_schema({"type": "integer", "multipleOf": 0.123456789}).validate(1e308)


# ---------------------------------------------------------------- 5. unions of validated types


class Either(pydantic.BaseModel):
    v: Annotated[int, AfterValidator(small)] | Annotated[str, AfterValidator(lower)]


class EitherItems(pydantic.BaseModel):
    items: list[Either]


def test_a_union_of_validated_types_names_the_document_path_and_every_branch() -> None:
    events, error = run(Either, '{"v": 7}')
    assert isinstance(error, SchemaViolation) and events == []
    assert error.path == ("v",) and error.keyword == "anyOf"
    assert "at most 5" in error.message and "valid string" in error.message


def test_a_union_outside_a_model_names_every_branch_too() -> None:
    schema = list[Annotated[int, AfterValidator(small)] | Annotated[str, AfterValidator(lower)]]
    events, error = run(schema, '[1, "a", "B"]')
    assert isinstance(error, SchemaViolation) and error.path == (2,)
    assert "lower case" in error.message and pointers(events) == ["/0", "/1"]


def test_a_union_failing_at_the_end_names_the_document_path() -> None:
    schema = Annotated[int, AfterValidator(small)] | Annotated[str, AfterValidator(lower)]
    events, error = run(schema, "7")
    assert isinstance(error, ValidationFailed) and error.path == () and events == []
    assert "at most 5" in error.message and "valid string" in error.message


def test_a_validator_that_reads_info_data_outside_a_model_waits_for_the_end() -> None:
    @pydantic.dataclasses.dataclass
    class Pair:
        a: int
        b: int

        @field_validator("b")
        @classmethod
        def _more(cls, v: int, info: pydantic.ValidationInfo) -> int:
            if v <= info.data["a"]:
                raise ValueError("b > a")
            return v

    events, error = run(list[Pair], '[{"a": 1, "b": 0}]')
    assert isinstance(error, ValidationFailed) and error.path == (0, "b")
    assert pointers(events) == ["/0/a"]  # b could not be judged alone: it waited, and failed
    events, error = run(list[Pair], '[{"a": 1, "b": 2}]')
    assert error is None and pointers(events) == ["/0/a", "/0/b", "/0", ""]


# ---------------------------------------------------------------- on the stream


@pytest.mark.anyio
async def test_no_callback_sees_an_item_a_root_list_validator_refuses() -> None:
    fired: list[str] = []
    async with stream_structured(
        Scripted(chunks('["a", "B", "c"]', 2)),
        schema=Lowers,
        on_field=lambda ev: fired.append(ev.pointer),
    ) as s:
        with pytest.raises(SchemaViolation) as info:
            await s.result()
    assert info.value.path == (1,) and fired == ["/0"]


# ---------------------------------------------------------------- recursive models


class Node(pydantic.BaseModel):
    name: Annotated[str, AfterValidator(lower)]
    kids: list[Node] = []


class Tree(RootModel[list[Node]]):
    pass


@pytest.mark.parametrize(
    ("schema", "doc", "refused"),
    [
        (Node, '{"name": "a", "kids": [{"name": "B"}]}', "/kids/0/name"),
        (Tree, '[{"name": "a", "kids": [{"name": "b", "kids": [{"name": "C"}]}]}]', None),
    ],
    ids=["model", "RootModel"],
)
def test_a_recursive_model_checks_its_fields_at_every_depth(
    schema: Any, doc: str, refused: str | None
) -> None:
    events, error = run(schema, doc)
    assert isinstance(error, SchemaViolation) and not isinstance(error, ValidationFailed)
    assert error.keyword == "value_error" and "lower case" in error.message
    bad = refused or "/0/kids/0/kids/0/name"
    assert error.pointer == bad and bad not in pointers(events)
