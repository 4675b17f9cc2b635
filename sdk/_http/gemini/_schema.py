"""A JSON Schema rewritten to the subset Gemini's ``responseJsonSchema`` and
``parametersJsonSchema`` apply (sans-I/O).

Gemini's structured output documents the keywords it applies; :func:`gemini_schema` keeps
those and leaves the rest to fieldstream, which checks the caller's whole schema as it streams
(so the schema sent may allow more than the caller's, never less):

==========================================  =============================================
The caller's schema                         What Gemini is sent
==========================================  =============================================
``type`` (one, or a list), ``title``,       as they are
``description``, ``properties``,
``required``, ``additionalProperties``,
``items``, ``prefixItems``, ``minItems``,
``maxItems``, ``minimum``, ``maximum``,
``anyOf``, ``$ref``, ``$defs``, ``$id``,
``$anchor``, ``propertyOrdering``
``oneOf``                                   as ``anyOf``
``enum`` of strings and numbers             as it is (another ``enum``: left out)
``format`` date-time, date, time            as it is (another format: left out)
anything else (``const``, ``pattern``,      left out, and said in the ``description``, so
``minLength``, ``maxLength``,               the model still reads it; fieldstream checks it
``exclusiveMinimum``, ``multipleOf``,
``uniqueItems``, ``allOf``, ``not``, ...)
==========================================  =============================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FORMATS", "KEPT", "gemini_schema"]

FORMATS = frozenset({"date-time", "date", "time"})
"""The string formats Gemini applies."""

KEPT = frozenset(
    {
        "type",
        "title",
        "description",
        "required",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "$ref",
        "$id",
        "$anchor",
        "propertyOrdering",
    }
)
"""Keywords sent as they are (besides those that hold schemas)."""

_SCHEMA_MAPS = ("properties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties")
_DROPPED_SILENTLY = frozenset({"$schema", "$comment", "default", "examples"})


def gemini_schema(schema: Any) -> Any:
    """``schema`` in Gemini's subset (a new value; see the module docstring)."""
    if not isinstance(schema, Mapping):
        return schema  # true / false
    out: dict[str, Any] = {}
    left: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: gemini_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            target = "anyOf" if key == "oneOf" and "anyOf" not in schema else key
            out[target] = [gemini_schema(sub) for sub in value]
        elif key in _SCHEMA_ONE:
            out[key] = gemini_schema(value)
        elif key in KEPT:
            out[key] = value
        elif key == "enum" and isinstance(value, list) and all(_enumerable(v) for v in value):
            out[key] = value
        elif key == "format" and value in FORMATS:
            out[key] = value
        elif key not in _DROPPED_SILENTLY:
            left[key] = value
    if left:
        said = ", ".join(f"{k}: {v!r}" for k, v in left.items())
        description = out.get("description")
        out["description"] = (
            (description + "\n\n" if isinstance(description, str) and description else "")
            + "{"
            + said
            + "}"
        )
    return out


def _enumerable(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)
