"""The schema compiler: a pydantic model, a type, or a JSON Schema dict, compiled once.

:func:`compile_schema` turns what the caller passed into a :class:`CompiledSchema`: the JSON
Schema to send to the backend, a name for it, the alternatives the tracker follows for the root
value, and the final validation (jsonschema on the whole value, then pydantic).

A stream compiles its schema once and hands the :class:`CompiledSchema` down to every tracker
(``FieldTracker(compiled)``). :func:`compile_schema` also keeps a small cache, an optimisation
that can never answer with a stale or foreign compilation: a dict schema is looked up by its
exact JSON text (so a dict mutated since is compiled afresh, and two dicts with the same text
share one), a type by the type itself, a ``TypeAdapter`` by identity (it is immutable).
Compilations are immutable once built and safe to share between threads.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

import pydantic

from sdk._errors import Path, SchemaError, ValidationFailed
from sdk._schema._dnf import Dnf, Group
from sdk._schema._nodes import Node, NodeCompiler
from sdk._schema._validators import (
    Validator,
    best_failure,
    check_schema,
    keyword_of,
    root_validator,
)

__all__ = ["CompiledSchema", "compile_schema", "schema_name"]

_CACHE_SIZE = 256
_cache: OrderedDict[Hashable, tuple[object, CompiledSchema]] = OrderedDict()
_cache_lock = threading.Lock()


class CompiledSchema:
    """Everything the tracker needs about one schema. Immutable once built; shared."""

    __slots__ = ("adapter", "json_schema", "name", "root", "root_node", "validator")

    def __init__(
        self, json_schema: Mapping[str, Any] | bool, name: str, adapter: Any | None
    ) -> None:
        self.json_schema = json_schema
        """The JSON Schema (Draft 2020-12) the output must follow: what a backend sends."""
        self.name = name
        """A name for the schema, fit for ``response_format.json_schema.name``."""
        self.adapter: pydantic.TypeAdapter[Any] | None = adapter
        """The pydantic adapter that builds the result (``None`` for a dict schema)."""
        check_schema(json_schema)
        self.validator: Validator = root_validator(json_schema)
        """jsonschema for the whole document (formats checked where jsonschema can)."""
        self.root_node: Node = NodeCompiler(json_schema, self.validator).compile_root()
        dnf = Dnf()
        self.root: Group = dnf.group((self.root_node,))
        """The alternatives the root value starts with."""

    def schema_dict(self) -> dict[str, Any]:
        """The JSON Schema as a fresh dict (``true`` is ``{}``, ``false`` is ``{"not": {}}``):
        what a backend sends, safe to modify."""
        raw = self.json_schema
        if raw is True:
            return {}
        if raw is False:
            return {"not": {}}
        return dict(copy.deepcopy(raw))

    def validate(self, value: Any, *, offset: int | None = None) -> Any:
        """Validate a final document: jsonschema on the whole, then pydantic (field and model
        validators, cross-field rules). Returns the model instance, the adapter's value for a
        type, or ``value`` itself for a dict schema; raises :class:`~sdk.ValidationFailed`."""
        errors = list(self.validator.iter_errors(value))
        if errors:
            best = best_failure(errors)
            path = tuple(best.absolute_path)
            raise ValidationFailed(
                _summary(len(errors), best.message),
                path=path,
                keyword=keyword_of(best),
                value=best.instance,
                offset=offset,
                errors=[(tuple(e.absolute_path), e.message) for e in errors],
            )
        if self.adapter is None:
            return value
        try:
            # JSON mode, as if pydantic read the output itself: strict models accept what JSON
            # can spell (a list for a tuple, a string for a datetime), unlike Python mode.
            return self.adapter.validate_json(json.dumps(value, ensure_ascii=False))
        except pydantic.ValidationError as exc:
            details = exc.errors(include_url=False)
            first = details[0]
            loc: Path = tuple(first["loc"])
            raise ValidationFailed(
                _summary(len(details), first["msg"]),
                path=loc,
                keyword=first["type"],
                value=first.get("input"),
                offset=offset,
                errors=[(tuple(d["loc"]), d["msg"]) for d in details],
            ) from exc


def compile_schema(schema: Any) -> CompiledSchema:
    """Compile ``schema`` — a pydantic ``BaseModel`` subclass, a ``pydantic.TypeAdapter``, any
    type pydantic can adapt (``list[Item]``, a ``TypedDict``, a dataclass...), or a JSON Schema
    (a ``dict``, or ``True``/``False``); a :class:`CompiledSchema` is returned as it is.

    Equal inputs may share one compilation (see the module docstring); the result is never
    stale. Raises :class:`~sdk.SchemaError` when the schema cannot be used.
    """
    if isinstance(schema, CompiledSchema):
        return schema
    if isinstance(schema, (str, bytes)):
        raise SchemaError(
            "schema must be a pydantic model, a type pydantic can adapt, or a JSON Schema dict, "
            f"not a {type(schema).__name__}: for JSON Schema text, pass json.loads(text)"
        )
    key = _cache_key(schema)
    if key is None:
        return _compile(schema)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit[1]
    compiled = _compile(schema)
    with _cache_lock:
        # The input is held beside its compilation, so an id() in a key is never reused.
        _cache[key] = (schema, compiled)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


def _cache_key(schema: Any) -> Hashable | None:
    """What identifies ``schema``'s compilation exactly, or ``None`` (do not cache)."""
    if isinstance(schema, (Mapping, bool)):
        try:
            # Key order is kept: it is part of the schema sent (the order fields are written).
            return ("json", json.dumps(schema, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError):
            return None  # not JSON: _compile says why
    if isinstance(schema, pydantic.TypeAdapter):
        return ("adapter", id(schema))
    try:
        hash(schema)
    except TypeError:
        return None
    return ("type", schema)


def _compile(schema: Any) -> CompiledSchema:
    if isinstance(schema, (Mapping, bool)):
        title = schema.get("title") if isinstance(schema, Mapping) else None
        return CompiledSchema(copy.deepcopy(schema), schema_name(title), None)
    if isinstance(schema, pydantic.TypeAdapter):
        adapter: pydantic.TypeAdapter[Any] = schema
        name = schema_name(getattr(adapter._type, "__name__", None))
    else:
        try:
            adapter = pydantic.TypeAdapter(schema)
        except (
            pydantic.PydanticSchemaGenerationError,
            pydantic.PydanticUserError,
            TypeError,
        ) as exc:
            raise SchemaError(f"pydantic cannot validate {schema!r}: {exc}") from exc
        name = schema_name(getattr(schema, "__name__", None) if isinstance(schema, type) else None)
    try:
        json_schema = adapter.json_schema()
    except (pydantic.PydanticInvalidForJsonSchema, pydantic.PydanticUserError) as exc:
        raise SchemaError(f"pydantic cannot describe {schema!r} as JSON Schema: {exc}") from exc
    return CompiledSchema(json_schema, name, adapter)


def schema_name(raw: object) -> str:
    """A name OpenAI accepts (``^[a-zA-Z0-9_-]{1,64}$``), ``"response"`` when there is none."""
    if not isinstance(raw, str):
        return "response"
    cleaned = re.sub(r"[^a-zA-Z0-9_-]+", "_", raw).strip("_")[:64]
    return cleaned or "response"


def _summary(count: int, first: str) -> str:
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"the output fails validation: {first}{more}"
