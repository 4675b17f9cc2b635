"""jsonschema behind a typed face: the one module of the sdk that imports it.

The tracker checks documents itself; jsonschema is used for two things only: vetting a schema
against its dialect's meta-schema when the caller asks for strictness (``unknown="refuse"``),
and its format checkers (when the
caller asks for ``format`` to be asserted). jsonschema ships no type information; this module
states the little used of it so that the rest stays checked by mypy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import regex
from jsonschema import exceptions as _exceptions

from sdk._errors import SchemaError

__all__ = ["check_schema", "format_conforms", "known_formats"]

_CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER

# The meta-schema's only format check that matters here: patterns are compiled with ``regex``
# (which takes ``\p{L}``, unlike ``re``), so that is what decides whether one is valid.
_META_CHECKER = jsonschema.FormatChecker(formats=())
_META_CHECKER.checks("regex", raises=regex.error)(lambda value: bool(regex.compile(value)))


_VALIDATORS = {
    "draft-04": jsonschema.Draft4Validator,
    "draft-06": jsonschema.Draft6Validator,
    "draft-07": jsonschema.Draft7Validator,
    "2019-09": jsonschema.Draft201909Validator,
    "2020-12": jsonschema.Draft202012Validator,
}


def check_schema(schema: Mapping[str, Any] | bool, dialect: str = "2020-12") -> None:
    """Raise :class:`~sdk.SchemaError` unless ``schema`` is valid against ``dialect``'s
    meta-schema (slow on a large schema: the compiler runs it only when asked to be strict)."""
    try:
        _VALIDATORS[dialect].check_schema(schema, format_checker=_META_CHECKER)
    except _exceptions.SchemaError as exc:
        where = "".join(f"/{p}" for p in exc.absolute_path)
        raise SchemaError(
            f"not a valid JSON Schema: {exc.message} (at {where or '/'})",
            keyword=str(exc.validator),
            pointer=where,
        ) from None


def known_formats() -> frozenset[str]:
    """The formats jsonschema can check here (some need the ``jsonschema[format]`` extras)."""
    return frozenset(_CHECKER.checkers)


def format_conforms(value: str, name: str) -> bool:
    """Whether ``value`` conforms to format ``name`` by jsonschema's checker."""
    return bool(_CHECKER.conforms(value, name))
