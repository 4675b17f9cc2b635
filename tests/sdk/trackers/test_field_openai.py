"""The OpenAI captures in tests/data/openai_sse, replayed through the tracker as text.

The models are those of openai-python's ``tests/lib/chat/test_completions_streaming.py``,
declared again here. Each capture's content (or tool-call argument) deltas are fed one delta at
a time, exactly as they came over the wire.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pydantic
import pytest

from sdk._errors import OutputSyntaxError, SchemaViolation, TruncatedError
from sdk._events import FieldEvent
from sdk._trackers._field import FieldTracker

CORPUS = Path(__file__).resolve().parents[2] / "data" / "openai_sse"


class Location(pydantic.BaseModel):
    city: str
    temperature: float
    units: Literal["c", "f"]


class GetWeatherArgs(pydantic.BaseModel):
    """Get the temperature for the given country/city combo"""

    city: str
    country: str
    units: Literal["c", "f"] = "c"


class GetStockPrice(pydantic.BaseModel):
    ticker: str
    exchange: str


STRICT_WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "state": {"type": "string"}},
    "required": ["city", "state"],
    "additionalProperties": False,
}


def deltas(name: str, *, choice: int = 0, tool: int | None = None) -> list[str]:
    """The text deltas of one choice's content, or of one tool call's arguments."""
    out: list[str] = []
    for line in (CORPUS / name).read_text().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[len("data: ") :])
        for c in chunk["choices"]:
            if c["index"] != choice:
                continue
            delta = c.get("delta") or {}
            if tool is None:
                if delta.get("content"):
                    out.append(delta["content"])
            else:
                out.extend(
                    call["function"]["arguments"]
                    for call in delta.get("tool_calls") or []
                    if call["index"] == tool and call.get("function", {}).get("arguments")
                )
    return out


def replay(schema: Any, pieces: list[str]) -> tuple[list[FieldEvent], Any]:
    t = FieldTracker(schema)
    events: list[FieldEvent] = []
    for piece in pieces:
        events.extend(e for e in t.feed(piece) if isinstance(e, FieldEvent))
    return events, t.close()


@pytest.mark.parametrize(
    ("name", "choice", "temperature"),
    [
        ("test_parse_pydantic_model.sse", 0, 61),
        ("test_parse_pydantic_model_multiple_choices.sse", 0, 65),
        ("test_parse_pydantic_model_multiple_choices.sse", 1, 61),
        ("test_parse_pydantic_model_multiple_choices.sse", 2, 59),
    ],
)
def test_response_format_model(name: str, choice: int, temperature: float) -> None:
    pieces = deltas(name, choice=choice)
    assert len(pieces) > 5
    events, result = replay(Location, pieces)
    assert result == Location(city="San Francisco", temperature=temperature, units="f")
    assert [e.pointer for e in events] == ["/city", "/temperature", "/units", ""]


@pytest.mark.parametrize(
    ("name", "tool", "schema", "expected"),
    [
        ("test_parse_pydantic_tool.sse", 0, GetWeatherArgs,
         GetWeatherArgs(city="Edinburgh", country="UK", units="c")),
        ("test_parse_multiple_pydantic_tools.sse", 0, GetWeatherArgs,
         GetWeatherArgs(city="Edinburgh", country="GB", units="c")),
        ("test_parse_multiple_pydantic_tools.sse", 1, GetStockPrice,
         GetStockPrice(ticker="AAPL", exchange="NASDAQ")),
        ("test_parse_strict_tools.sse", 0, STRICT_WEATHER,
         {"city": "San Francisco", "state": "CA"}),
        ("test_allows_non_strict_tools_but_no_parsing.sse", 0,
         {"type": "object", "properties": {"city": {"type": "string"}}},
         {"city": "New York City"}),
    ],
)  # fmt: skip
def test_tool_call_arguments(name: str, tool: int, schema: Any, expected: Any) -> None:
    events, result = replay(schema, deltas(name, tool=tool))
    assert result == expected
    assert events[-1].path == ()


def test_free_json_object_with_a_schema_that_does_not_fit() -> None:
    # response_format json_object: any JSON came back, with layout whitespace around it.
    pieces = deltas("test_non_pydantic_response_format.sse")
    events, result = replay({"type": "object"}, pieces)
    assert result["location"] == "San Francisco, CA"
    assert len(events) > 10
    with pytest.raises(SchemaViolation) as info:
        replay(Location, pieces)  # extra keys are ignored; the missing ones are not
    assert (info.value.path, info.value.keyword) == ((), "required")

    class ClosedLocation(Location):
        model_config = pydantic.ConfigDict(extra="forbid")

    with pytest.raises(SchemaViolation) as info:
        replay(ClosedLocation, pieces)  # refused at the first key's first letter
    assert (info.value.path, info.value.keyword) == (("l",), "additionalProperties")
    text = "".join(pieces)
    assert info.value.offset == text.index('"location"') + 1
    assert info.value.start == text.index('"location"')


def test_max_tokens_reached_is_truncated() -> None:
    t = FieldTracker(Location)
    for piece in deltas("test_parse_max_tokens_reached.sse"):
        t.feed(piece)
    with pytest.raises(TruncatedError) as info:
        t.close()
    assert info.value.snapshot == {}


def test_prose_is_a_syntax_error() -> None:
    pieces = deltas("test_parse_nothing.sse")
    with pytest.raises(OutputSyntaxError):
        replay(Location, pieces)


def test_a_wrong_enum_value_is_caught_on_its_first_character() -> None:
    pieces = deltas("test_parse_pydantic_model.sse")
    text = "".join(pieces).replace('"units":"f"', '"units":"k"')
    t = FieldTracker(Location)
    with pytest.raises(SchemaViolation) as info:
        for i in range(0, len(text), 4):
            t.feed(text[i : i + 4])
    assert info.value.path == ("units",)
    assert info.value.offset == text.index('"k"') + 1
