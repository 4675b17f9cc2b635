"""jsonschema behind a typed face: the one module of the sdk that imports it.

The tracker checks documents itself; jsonschema is used for one thing only: vetting a schema
against its dialect's meta-schema when the caller asks for strictness (``unknown="refuse"``;
asserted formats have their own checkers, in ``_formats.py``). jsonschema ships no type
information; this module
states the little used of it so that the rest stays checked by mypy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from jsonschema import exceptions as _exceptions

from sdk._ecma_regex import EcmaRegexError, compile_ecma
from sdk._errors import SchemaError

__all__ = ["check_schema"]

# The meta-schema's only format check that matters here: patterns are ECMA-262, compiled by
# sdk._ecma_regex, so that is what decides whether one is valid.
_META_CHECKER = jsonschema.FormatChecker(formats=())
_META_CHECKER.checks("regex", raises=EcmaRegexError)(lambda value: bool(compile_ecma(value)))


_NO_FORMATS = jsonschema.FormatChecker(formats=())

_VALIDATORS = {
    "draft-04": jsonschema.Draft4Validator,
    "draft-06": jsonschema.Draft6Validator,
    "draft-07": jsonschema.Draft7Validator,
    "2019-09": jsonschema.Draft201909Validator,
    "2020-12": jsonschema.Draft202012Validator,
}


def check_schema(
    schema: Mapping[str, Any] | bool, dialect: str = "2020-12", *, ecma_patterns: bool = True
) -> None:
    """Raise :class:`~sdk.SchemaError` unless ``schema`` is valid against ``dialect``'s
    meta-schema (slow on a large schema: the compiler runs it only when asked to be strict);
    with ``ecma_patterns`` (a schema the user wrote), its patterns must be ECMA-262. A pydantic
    type's schema holds patterns in pydantic's dialect, which pydantic itself judges."""
    checker = _META_CHECKER if ecma_patterns else _NO_FORMATS
    try:
        _VALIDATORS[dialect].check_schema(schema, format_checker=checker)
    except _exceptions.SchemaError as exc:
        where = "".join(f"/{p}" for p in exc.absolute_path)
        raise SchemaError(
            f"not a valid JSON Schema: {exc.message} (at {where or '/'})",
            keyword=str(exc.validator),
            pointer=where,
        ) from None
