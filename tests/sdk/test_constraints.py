"""Constraints as values: checked when built, with errors that name what is wrong."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from sdk import Choice, Grammar, Regex, SchemaError, StructuralTag, Tag, Tool
from sdk._constraints import tools_of


class Weather(BaseModel):
    """The weather in a city."""

    city: str


def test_choice_keeps_its_choices_as_a_tuple_and_is_frozen() -> None:
    choice = Choice(["positive", "negative"])
    assert choice.choices == ("positive", "negative")
    assert choice == Choice(("positive", "negative"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        choice.choices = ("x",)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("choices", "error", "match"),
    [
        ([], SchemaError, "at least one"),
        (["a", "a"], SchemaError, "'a' is listed twice"),
        (["a", ""], SchemaError, r"choices\[1\] must be a non-empty str"),
        (["a", 3], SchemaError, r"choices\[1\]"),
        ("ab", TypeError, "list of strings"),
    ],
)
def test_a_bad_choice_raises_naming_it(choices: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Choice(choices)  # type: ignore[arg-type]


def test_a_bad_regex_raises_at_the_call_naming_it() -> None:
    with pytest.raises(
        SchemaError, match=r"Regex\('\[0-9'\) is not a valid regular expression"
    ) as info:
        Regex("[0-9")
    assert info.value.keyword == "pattern"
    assert Regex(r"\d{3}").compiled.fullmatch("123") is not None


@pytest.mark.parametrize(
    ("text", "syntax"),
    [
        ('root ::= "yes" | "no"', "gbnf"),
        ("root ::= item+\nitem ::= [a-z]", "gbnf"),
        ("start: /[0-9]+/", "lark"),
        ("%llguidance {}\nstart: NUM\nNUM: /[0-9]+/", "lark"),
        ('?start: a\na: "x"', "lark"),
    ],
)
def test_grammar_syntax_is_detected(text: str, syntax: str) -> None:
    assert Grammar(text).syntax == syntax


def test_a_named_syntax_is_kept() -> None:
    assert Grammar('root ::= "a"', syntax="ebnf").syntax == "ebnf"


@pytest.mark.parametrize(
    ("text", "syntax", "match"),
    [
        ("just words", None, "no rule definitions"),
        ('root ::= a\na: "x"', None, r"both `name ::=` and `name:`"),
        ('item ::= "x"', None, r"no `root ::= \.\.\.` rule"),
        ('item: "x"', None, "no `start:` rule"),
        ('root ::= "x"', "lark", "no `start:` rule"),
    ],
)
def test_a_grammar_without_its_start_rule_or_syntax_raises(
    text: str, syntax: str | None, match: str
) -> None:
    with pytest.raises(SchemaError, match=match):
        Grammar(text, syntax=syntax)  # type: ignore[arg-type]


def test_an_unknown_syntax_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="'gbnf', 'ebnf' or 'lark'"):
        Grammar('root ::= "a"', syntax="peg")  # type: ignore[arg-type]


def test_tag_names_default_to_the_schema_name_else_the_begin() -> None:
    assert Tag("<w>", Weather, "</w>").name == "Weather"
    assert Tag("<w>", {"type": "object"}, "</w>").name == "<w>"
    assert Tag("<w>", {"type": "object", "title": "W"}, "</w>", name="weather").name == "weather"


def test_a_tag_with_an_unusable_schema_raises_at_the_call() -> None:
    with pytest.raises(SchemaError):
        Tag("<w>", {"type": "strnig"}, "</w>")


def test_triggers_default_to_the_begins() -> None:
    tag = StructuralTag(
        [Tag("<a>", Weather, "</a>", name="a"), Tag("<b>", Weather, "</b>", name="b")]
    )
    assert tag.triggers == ("<a>", "<b>")


@pytest.mark.parametrize(
    ("tags", "triggers", "match"),
    [
        ([], None, "non-empty list"),
        ([Tag("<f=a>", Weather, "</f>")], ["<g"], "must start with exactly one trigger, not 0"),
        ([Tag("<f=a>", Weather, "</f>")], ["<f", "<f="], "exactly one trigger, not 2"),
        (
            [Tag("<f=a>", Weather, "</f>"), Tag("<f=a>", Weather, "</f>", name="b")],
            ["<f"],
            "two tags begin",
        ),
        (
            [Tag("<a>", Weather, "</a>"), Tag("<b>", Weather, "</b>")],
            None,
            "two tags are named 'Weather'",
        ),
        (
            [Tag("<f=a", Weather, "</f>", name="a"), Tag("<f=ab", Weather, "</f>", name="b")],
            ["<f="],
            "is the start of",
        ),
        ([Tag("<f=a>", Weather, "</f>")], ["<f", "<g"], "the trigger '<g' starts no tag"),
    ],
)
def test_a_bad_structural_tag_raises_naming_it(
    tags: list[Tag], triggers: list[str] | None, match: str
) -> None:
    with pytest.raises(SchemaError, match=match):
        StructuralTag(tags, triggers)


def test_tool_description_defaults_to_the_schemas() -> None:
    assert Tool("get_weather", Weather).description == "The weather in a city."
    assert Tool("get_weather", Weather, description="Look it up").description == "Look it up"
    assert Tool("f", {"type": "object"}).description is None


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "ünïcode"])
def test_a_bad_tool_name_raises(name: str) -> None:
    with pytest.raises(ValueError, match="Tool name must match"):
        Tool(name, Weather)


def test_tools_are_a_list_of_tools_or_a_mapping_of_names_to_schemas() -> None:
    listed = tools_of([Tool("a", Weather), Tool("b", {"type": "object"})])
    mapped = tools_of({"a": Weather, "b": {"type": "object"}})
    assert [t.name for t in listed] == [t.name for t in mapped] == ["a", "b"]
    with pytest.raises(ValueError, match="repeated: a"):
        tools_of([Tool("a", Weather), Tool("a", Weather)])
    with pytest.raises(ValueError, match="at least one"):
        tools_of([])
    with pytest.raises(TypeError, match=r"tools\[0\] must be a sdk.Tool"):
        tools_of([Weather])  # type: ignore[list-item]
