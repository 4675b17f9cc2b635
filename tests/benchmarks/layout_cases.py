"""The prompts and schemas of ``bench_layout.py`` and ``bench_prefill.py``: answers that should
fill arrays and fields (``maxItems``-bounded arrays, nested objects, enums, numbers), and the
schemas of the examples (``examples/models.py``), which a layout must serve too."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from models import Person, Review, Trip

__all__ = ["CASES"]


def _obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


STR = {"type": "string"}
CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "tags",
        _obj({"tags": {"type": "array", "items": STR}}),
        "List eight tags for a blog post about cooking.",
    ),
    (
        "tags-max5",
        _obj({"tags": {"type": "array", "items": STR, "maxItems": 5}}),
        "Give five tags for a photo of a beach at sunset.",
    ),
    (
        "planets",
        _obj({"planets": {"type": "array", "items": STR, "maxItems": 8}}),
        "Name the planets of the solar system.",
    ),
    (
        "person",
        _obj(
            {
                "name": STR,
                "age": {"type": "integer", "minimum": 0, "maximum": 120},
                "hobbies": {"type": "array", "items": STR, "maxItems": 4},
            }
        ),
        "Invent a person with a name, an age and some hobbies.",
    ),
    (
        "recipe",
        _obj(
            {
                "name": STR,
                "servings": {"type": "integer", "minimum": 1, "maximum": 12},
                "ingredients": {
                    "type": "array",
                    "items": _obj({"item": STR, "grams": {"type": "number", "minimum": 0}}),
                    "maxItems": 6,
                },
                "steps": {"type": "array", "items": STR, "maxItems": 5},
            }
        ),
        "Write a recipe for pancakes.",
    ),
    (
        "book",
        _obj(
            {
                "title": STR,
                "year": {"type": "integer", "minimum": 1000, "maximum": 2100},
                "author": _obj({"first": STR, "last": STR}),
                "genres": {
                    "type": "array",
                    "items": {"enum": ["fiction", "science", "history", "poetry", "fantasy"]},
                    "maxItems": 3,
                },
            }
        ),
        "Describe the novel Pride and Prejudice.",
    ),
    (
        "movie",
        _obj(
            {
                "title": STR,
                "rating": {"type": "number", "minimum": 0, "maximum": 10},
                "genre": {"enum": ["action", "comedy", "drama", "science fiction"]},
                "cast": {"type": "array", "items": STR, "maxItems": 4},
            }
        ),
        "Rate the movie The Matrix and list its main actors.",
    ),
    (
        "weather",
        _obj(
            {
                "city": STR,
                "days": {
                    "type": "array",
                    "items": _obj(
                        {
                            "day": {"enum": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]},
                            "high": {"type": "number"},
                            "low": {"type": "number"},
                        }
                    ),
                    "maxItems": 3,
                },
            }
        ),
        "Give a three-day weather forecast for Paris.",
    ),
    (
        "team",
        _obj(
            {
                "members": {
                    "type": "array",
                    "items": _obj(
                        {
                            "name": STR,
                            "role": {"enum": ["lead", "developer", "designer", "tester"]},
                            "years": {"type": "integer", "minimum": 0, "maximum": 40},
                        }
                    ),
                    "minItems": 1,
                    "maxItems": 4,
                }
            }
        ),
        "List the members of a small software team.",
    ),
]


# The examples' schemas (the review prompt is the one live_text.py used when measured).
CASES += [
    ("review", Review.model_json_schema(), "Write a short review of a coffee mug."),
    ("fictional", Person.model_json_schema(), "Describe a fictional person."),
    ("trip", Trip.model_json_schema(), "Plan a short trip through three cities in Europe."),
    (
        "ticket",
        _obj({"priority": {"enum": ["low", "normal", "high"]}, "title": STR}),
        "File a ticket: the login page is down.",
    ),
    (
        "character",
        _obj(
            {
                "name": {"type": "string", "maxLength": 30},
                "age": {"type": "integer", "minimum": 0, "maximum": 120},
                "city": {"type": "string", "maxLength": 30},
            }
        ),
        "Describe a fictional person as JSON: name, age, city.",
    ),
]
