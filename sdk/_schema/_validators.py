"""jsonschema behind a typed face: the one module of the sdk that imports it.

The tracker checks documents itself; jsonschema is used for two things only: vetting a schema
against its dialect's meta-schema when the caller asks for strictness (``unknown="refuse"``;
asserted formats have their own checkers, in ``_formats.py``), and judging a final object or
array against a subschema with ``unevaluatedProperties``/``unevaluatedItems``
(:class:`SubschemaJudge`: those depend on the annotations of every applicator, which jsonschema
collects). jsonschema matches ``pattern`` and ``patternProperties`` with Python's ``re`` (not
ECMA-262, and with no bound on backtracking); while a judge runs, the ``re.search`` its keyword
modules call is :func:`_judge_search` instead: the pattern read as ECMA-262 and matched under
the tracker's time budget (:mod:`sdk._regex._budget`; outside a judge it is ``re.search``
itself). jsonschema ships no type information; this module states the little used of it so that
the rest stays checked by mypy.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from jsonschema import _keywords, _utils
from jsonschema import exceptions as _exceptions

from sdk._errors import SchemaError
from sdk._regex._ecma import EcmaRegexError, compile_ecma, pattern_limit
from sdk._schema._vocabulary import VOCABULARIES

__all__ = ["SubschemaJudge", "check_schema"]

# The meta-schema's only format check that matters here: patterns are ECMA-262, compiled by
# sdk._regex._ecma, so that is what decides whether one is valid.
_META_CHECKER = jsonschema.FormatChecker(formats=())
_META_CHECKER.checks("regex", raises=EcmaRegexError)(
    lambda value: bool(compile_ecma(value, max_size=pattern_limit.get()))
)


_NO_FORMATS = jsonschema.FormatChecker(formats=())

_judging: ContextVar[bool] = ContextVar("fieldstream_judging", default=False)
# The judge's patterns were vetted (and sized) when the schema was compiled.
_ecma = functools.lru_cache(maxsize=512)(functools.partial(compile_ecma, max_size=None))


def _judge_search(pattern: str, string: str, flags: int = 0) -> Any:
    """``re.search`` as jsonschema's keywords call it; inside a judge, ECMA-262 under the
    budget (a ``BudgetSpent`` goes up to the tracker, which names the path)."""
    if not _judging.get() or flags:
        return re.search(pattern, string, flags)
    try:
        compiled = _ecma(pattern)
    except EcmaRegexError:  # jsonschema joins patternProperties with "|": a name twice
        return re.search(pattern, string)
    return compiled.search(string) or None


class _ReForJsonschema:
    """What jsonschema's keyword modules see as ``re``: the real module but for ``search``."""

    search = staticmethod(_judge_search)

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)


for _module in (_keywords, _utils):
    if getattr(_module, "re", None) is re:
        _module.re = _ReForJsonschema()

# Each dialect's validator, named by its meta-schema's URI in the dialect's table.
_VALIDATORS = {
    name: jsonschema.validators.validator_for({"$schema": dialect.meta_schema})
    for name, dialect in VOCABULARIES.items()
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


class SubschemaJudge:
    """Judges values against subschemas of one canonical (Draft 2020-12) document, with
    jsonschema's validator for the whole document built once, when first needed, so that every
    ``$ref`` resolves (remote resources are embedded in the canonical form). Thread-safe."""

    __slots__ = ("_lock", "_root", "_validator")

    def __init__(self, root: Mapping[str, Any] | bool) -> None:
        self._root = root
        self._validator: Any = None
        self._lock = threading.Lock()

    def at(self, place: str) -> Callable[[Any], str | None]:
        """A check of the subschema at ``place`` (a reference that resolves from the root: URI,
        ``#``, JSON Pointer): the first error's message for a value, with where in the value
        it is, or ``None`` when the value is valid. A value nested too deeply for jsonschema
        (a few hundred levels) is not judged valid."""
        wrapper = {"$ref": place}
        evolved: Any = None

        def judge(value: Any) -> str | None:
            nonlocal evolved
            if evolved is None:
                evolved = self._root_validator().evolve(schema=wrapper)
            token = _judging.set(True)
            try:
                error = next(iter(evolved.iter_errors(value)), None)
            except RecursionError:  # jsonschema recurses a few frames per level of the value
                return "the value is nested too deeply for jsonschema to judge it"
            finally:
                _judging.reset(token)
            if error is None:
                return None
            where = "".join(f"/{p}" for p in error.absolute_path)
            return f"{error.message} (at {where})" if where else str(error.message)

        return judge

    def _root_validator(self) -> Any:
        with self._lock:
            if self._validator is None:
                # No format checker: ``format`` is an annotation here (asserted formats are the
                # tracker's own checks, done on every value anyway).
                self._validator = jsonschema.Draft202012Validator(self._root)
            return self._validator
