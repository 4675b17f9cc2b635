"""jsonschema behind a typed face: the one module of the sdk that imports it.

jsonschema ships no type information; this module states the little the schema code uses of
it (:class:`Validator`, :class:`Failure`) so that the rest stays checked by mypy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol, cast

import jsonschema  # type: ignore[import-untyped]
from jsonschema import exceptions as _exceptions

from sdk._errors import SchemaError

__all__ = ["Failure", "Validator", "best_failure", "check_schema", "keyword_of", "root_validator"]


class Failure(Protocol):
    """One complaint of jsonschema (a ``jsonschema.ValidationError``)."""

    @property
    def message(self) -> str: ...
    @property
    def validator(self) -> object: ...  # the keyword (``None`` for the schema ``false``)
    @property
    def instance(self) -> Any: ...
    @property
    def absolute_path(self) -> Iterable[str | int]: ...


class Validator(Protocol):
    """A jsonschema validator bound to one (sub-)schema."""

    def iter_errors(self, instance: Any) -> Iterator[Failure]: ...

    def evolve(self, *, schema: Any) -> Validator: ...


def check_schema(schema: Mapping[str, Any] | bool) -> None:
    """Raise :class:`~sdk.SchemaError` unless ``schema`` is valid Draft 2020-12."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except _exceptions.SchemaError as exc:
        where = "".join(f"/{p}" for p in exc.absolute_path)
        raise SchemaError(
            f"not a valid JSON Schema: {exc.message} (at {where or '/'})",
            keyword=str(exc.validator),
            pointer=where,
        ) from None


def root_validator(schema: Mapping[str, Any] | bool) -> Validator:
    """A Draft 2020-12 validator for the whole schema, checking ``format`` where jsonschema
    can. Its :meth:`~Validator.evolve` gives validators for sub-schemas whose ``$ref``s still
    resolve against this root."""
    cls = jsonschema.Draft202012Validator
    return cast(Validator, cls(schema, format_checker=cls.FORMAT_CHECKER))


def best_failure(failures: list[Failure]) -> Failure:
    """The complaint most worth showing a person (jsonschema's ``best_match``)."""
    return cast(Failure, _exceptions.best_match(failures))


def keyword_of(failure: Failure) -> str:
    """The keyword a complaint is about (``"false"`` for the schema ``false``)."""
    kw = failure.validator
    return "false" if kw is None else str(kw)
