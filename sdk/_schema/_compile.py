"""The schema compiler: a pydantic model, a type, or a JSON Schema dict, compiled once.

:func:`compile_schema` turns what the caller passed into a :class:`CompiledSchema`: the JSON
Schema to send to the backend, a name for it, the conjunction the tracker checks the root value
against, and the final validation.

A stream compiles its schema once and hands the :class:`CompiledSchema` down to every tracker
(``FieldTracker(compiled)``). :func:`compile_schema` also keeps a small cache, an optimisation
that can never answer with a stale or foreign compilation: a dict schema is looked up by its
exact JSON text (so a dict mutated since is compiled afresh, and two dicts with the same text
share one), a type by the type itself, a ``TypeAdapter`` by identity (it is immutable); the
``formats`` mode is part of every key. Compilations are immutable once built and safe to share
between threads.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any, Literal, NamedTuple

import pydantic

from sdk._constants import DEFAULT_MAX_PATTERN_SIZE
from sdk._errors import SchemaError, SchemaViolation, ValidationFailed
from sdk._regex._ecma import pattern_limit
from sdk._schema._conj import Conj, Conjs
from sdk._schema._dialects import canonical
from sdk._schema._nodes import NodeCompiler
from sdk._schema._pydantic import tracker_schema
from sdk._schema._pydantic_checks import TypeCheck, document_path, pydantic_reason
from sdk._schema._validators import check_schema
from sdk._schema._walk import check_value

__all__ = ["CompiledSchema", "Formats", "Unknown", "compile_schema", "schema_name"]

Formats = Literal["annotate", "assert"]
"""How ``format`` is treated: an annotation (Draft 2020-12's default), or asserted."""

Unknown = Literal["ignore", "refuse"]
"""What a keyword the schema's dialect does not define is: an annotation, ignored (as JSON
Schema says) and reported, or refused (typos caught)."""

_log = logging.getLogger("fieldstream")

_CACHE_SIZE = 256
_cache: OrderedDict[Hashable, tuple[object, CompiledSchema]] = OrderedDict()
_cache_lock = threading.Lock()


class CompiledSchema:
    """Everything the tracker needs about one schema. Immutable once built; shared."""

    __slots__ = (
        "adapter",
        "conjs",
        "dialect",
        "field_checks",
        "formats",
        "ignored",
        "json_schema",
        "models",
        "name",
        "root",
    )

    def __init__(
        self,
        json_schema: Mapping[str, Any] | bool,
        name: str,
        adapter: Any | None,
        *,
        formats: Formats = "annotate",
        dialect: str | None = None,
        registry: Any = None,
        unknown: Unknown = "ignore",
    ) -> None:
        if formats not in ("annotate", "assert"):
            raise ValueError(f"formats must be 'annotate' or 'assert', not {formats!r}")
        if adapter is None:
            read = canonical(json_schema, dialect=dialect, registry=registry, unknown=unknown)
            checked: Any = read.schema
            models: list[Any] = []
            sent: Mapping[str, Any] | bool = read.schema
        else:
            # pydantic writes Draft 2020-12; what it sends is sent as it wrote it.
            raw, models = tracker_schema(adapter)
            # The tracker's copy keeps only patterns ECMA-262 reads as pydantic does (the rest
            # are pydantic's to judge, at the end), so every pattern left is vetted here.
            read = canonical(raw, registry=registry, unknown=unknown)
            checked = read.schema
            sent = json_schema
        if unknown == "refuse":
            check_schema(
                json_schema, read.dialect, ecma_patterns=adapter is None
            )  # every annotation's shape too, on request
        self.json_schema = sent
        """The JSON Schema the output must follow, in Draft 2020-12 whatever the dialect it was
        written in (:mod:`sdk._schema._dialects`): what a backend sends."""
        self.name = name
        """A name for the schema, fit for ``response_format.json_schema.name``."""
        self.adapter: pydantic.TypeAdapter[Any] | None = adapter
        """The pydantic adapter that builds the result (``None`` for a dict schema)."""
        self.formats: Formats = formats
        """``"assert"``: ``format`` is checked (dict schemas; pydantic checks its own types)."""
        self.dialect = read.dialect
        """The dialect the schema was read as (``"draft-04"`` ... ``"2020-12"``)."""
        self.ignored: tuple[tuple[str, str], ...] = read.ignored
        """The keywords ignored as annotations (their dialect does not define them): ``(JSON
        Pointer of the subschema, keyword)`` each, in document order. Also logged once, as a
        warning on the ``fieldstream`` logger, when the schema is compiled."""
        if read.ignored:
            _log.warning(
                "schema %r: %d keyword(s) its dialect (%s) does not define are ignored as "
                "annotations: %s",
                name,
                len(read.ignored),
                read.dialect,
                ", ".join(f"{k} at {w or '/'}" for w, k in read.ignored[:20])
                + (" ..." if len(read.ignored) > 20 else ""),
            )
        self.models = bool(models)
        """Whether nested pydantic models are validated early (see ``_pydantic``)."""
        self.field_checks = any(m.holds or m.fields or type(m) is TypeCheck for m in models)
        """Whether some model has a field validator or a model validator, or pydantic judges
        some spot the JSON Schema cannot (``_pydantic_checks``): only then does the tracker
        check fields one by one, run those checks and hold events (``dispatch="validated"``)."""
        compiler = NodeCompiler(
            checked,
            read.targets,
            assert_formats=formats == "assert" and adapter is None,
            models=models,
            places=read.places,
            read_as=read.read_as,
        )
        self.conjs = Conjs()
        self.root: Conj = self.conjs.of_node(compiler.compile_root())
        """The conjunction the root value is checked against."""

    @property
    def python_type(self) -> Any:
        """The Python type results are (the model, ``list[Item]``...); ``None`` for a dict
        schema."""
        return None if self.adapter is None else getattr(self.adapter, "_type", None)

    def schema_dict(self) -> dict[str, Any]:
        """The JSON Schema as a fresh dict (``true`` is ``{}``, ``false`` is ``{"not": {}}``):
        what a backend sends, safe to modify."""
        raw = self.json_schema
        if raw is True:
            return {}
        if raw is False:
            return {"not": {}}
        return dict(copy.deepcopy(raw))

    def validate(self, value: Any, *, offset: int | None = None, max_depth: int = 512) -> Any:
        """Validate a complete document that did not stream through a tracker: the tracker's
        checks (in one pass, nothing recursive), then pydantic. Returns what
        :meth:`finish` returns; raises :class:`~sdk.ValidationFailed` (``keyword="depth"`` for
        a value nested deeper than ``max_depth`` containers, the tracker's own default)."""
        try:
            check_value(self.root, value, early_models=self.models, max_depth=max_depth)
        except SchemaViolation as exc:
            raise ValidationFailed(
                _summary(1, exc.message),
                path=exc.path,
                keyword=exc.keyword,
                value=exc.value,
                offset=offset,
                errors=[(exc.path, exc.message)],
            ) from exc
        return self.finish(value, offset=offset)

    def finish(self, value: Any, *, offset: int | None = None, start: int | None = None) -> Any:
        """The result of a document the tracker's checks passed: pydantic validates it as a
        whole (field and model validators, cross-field rules) for a type, in JSON mode, as if
        it read the output itself. Returns the model instance, the adapter's value for a type,
        or ``value`` itself for a dict schema; raises :class:`~sdk.ValidationFailed`."""
        if self.adapter is None:
            return value
        try:
            # JSON mode, as if pydantic read the output itself: strict models accept what JSON
            # can spell (a list for a tuple, a string for a datetime), unlike Python mode.
            text = json.dumps(value, ensure_ascii=False)
            return self.adapter.validate_json(text)
        except RecursionError:
            raise ValidationFailed(
                "the output is nested too deeply to validate",
                keyword="depth",
                offset=offset,
                start=start,
            ) from None
        except pydantic.ValidationError as exc:
            details = exc.errors(include_url=False)
            # pydantic's locations hold its union labels: told as places in the document
            loc, keyword, message, bad = pydantic_reason(details, value, ())
            raise ValidationFailed(
                _summary(1, message),  # (the message counts the other errors)
                path=loc,
                keyword=keyword,
                value=bad,
                offset=offset,
                start=start,
                errors=[(document_path(d["loc"], value, d["type"])[0], d["msg"]) for d in details],
            ) from exc


def compile_schema(
    schema: Any,
    *,
    formats: Formats = "annotate",
    dialect: str | None = None,
    registry: Any = None,
    unknown: Unknown = "ignore",
    max_pattern_size: int | None = DEFAULT_MAX_PATTERN_SIZE,
) -> CompiledSchema:
    """Compile ``schema`` — a pydantic ``BaseModel`` subclass, a ``pydantic.TypeAdapter``, any
    type pydantic can adapt (``list[Item]``, a ``TypedDict``, a dataclass...), or a JSON Schema
    (a ``dict``, or ``True``/``False``); a :class:`CompiledSchema` is returned as it is.

    A JSON Schema is read in its dialect: the one its ``$schema`` names (draft-04, -06, -07,
    2019-09 or 2020-12; an embedded resource's own ``$schema`` too), else ``dialect`` (a name
    such as ``"draft-07"`` or a ``$schema`` URI; Draft 2020-12 when ``None``), which also stands
    for a ``$schema`` URI no dialect is known by. ``registry`` resolves references to other
    documents: a ``referencing.Registry`` or a mapping of URI to schema (nothing is fetched over
    the network unless the registry does it). A keyword the dialect does not define is an
    annotation, reported in :attr:`CompiledSchema.ignored` and on the ``fieldstream`` logger;
    ``unknown="refuse"`` raises :class:`~sdk.SchemaError` for it instead, and checks the schema
    against its dialect's meta-schema too.

    ``formats="assert"`` checks ``format`` in a JSON Schema dict (see ``sdk._schema._formats``
    for which formats); the default leaves it an annotation, as Draft 2020-12 does. A pydantic
    type's formats are pydantic's to judge either way.

    ``max_pattern_size`` bounds every ``pattern`` and ``patternProperties`` name: what the
    regex engine writes a pattern out to when it compiles it, which its compile time grows with
    (counted repetitions multiply: ``(a{1000}){1000}`` is a million, and
    ``((a{1000}){1000}){1000}`` would never finish compiling). A larger one is a
    :class:`~sdk.SchemaError` naming it and its place, at once; ``None`` lifts the limit. The
    default, 100,000, compiles in well under a second and is far above any real pattern's size
    (``[a-z]{1,65535}`` is 2).

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
    if formats not in ("annotate", "assert"):
        raise ValueError(f"formats must be 'annotate' or 'assert', not {formats!r}")
    if unknown not in ("ignore", "refuse"):
        raise ValueError(f"unknown must be 'ignore' or 'refuse', not {unknown!r}")
    if max_pattern_size is not None and (
        isinstance(max_pattern_size, bool)
        or not isinstance(max_pattern_size, int)
        or max_pattern_size < 1
    ):
        raise ValueError(f"max_pattern_size must be an int >= 1 or None, not {max_pattern_size!r}")
    options = _Options(formats, dialect, registry, unknown, max_pattern_size)
    key = _cache_key(schema)
    registry_key = _registry_key(registry)
    if key is None or registry_key is None:
        return _compile(schema, options)
    key = (formats, dialect, unknown, max_pattern_size, registry_key, key)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit[1]
    compiled = _compile(schema, options)
    with _cache_lock:
        # The input (and registry) is held beside its compilation, so an id() in a key is
        # never reused.
        _cache[key] = ((schema, registry), compiled)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


class _Options(NamedTuple):
    formats: Formats
    dialect: str | None
    registry: Any
    unknown: Unknown
    max_pattern_size: int | None


def _registry_key(registry: Any) -> Hashable | None:
    """What identifies ``registry`` for the cache (``None``: do not cache)."""
    if registry is None:
        return ("none",)
    if isinstance(registry, Mapping):
        try:
            return ("map", json.dumps(registry, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError):
            return None
    return ("registry", id(registry))  # a referencing.Registry is immutable


def _cache_key(schema: Any) -> Hashable | None:
    """What identifies ``schema``'s compilation exactly, or ``None`` (do not cache)."""
    if isinstance(schema, (Mapping, bool)):
        try:
            # Key order is kept: it is part of the schema sent (the order fields are written).
            return ("json", json.dumps(schema, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            return None  # not JSON: _compile says why
    if isinstance(schema, pydantic.TypeAdapter):
        return ("adapter", id(schema))
    try:
        hash(schema)
    except TypeError:
        return None
    return ("type", schema)


def _compile(schema: Any, options: _Options) -> CompiledSchema:
    token = pattern_limit.set(options.max_pattern_size)
    try:
        return _compile_with(schema, options)
    finally:
        pattern_limit.reset(token)


def _compile_with(schema: Any, options: _Options) -> CompiledSchema:
    formats, dialect, registry, unknown, _ = options
    if isinstance(schema, (Mapping, bool)):
        title = schema.get("title") if isinstance(schema, Mapping) else None
        return CompiledSchema(
            schema,
            schema_name(title),
            None,
            formats=formats,
            dialect=dialect,
            registry=registry,
            unknown=unknown,
        )
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
        return CompiledSchema(
            json_schema, name, adapter, formats=formats, registry=registry, unknown=unknown
        )
    except (pydantic.PydanticInvalidForJsonSchema, pydantic.PydanticUserError) as exc:
        raise SchemaError(f"pydantic cannot describe {schema!r} as JSON Schema: {exc}") from exc


def schema_name(raw: object) -> str:
    """A name OpenAI accepts (``^[a-zA-Z0-9_-]{1,64}$``), ``"response"`` when there is none."""
    if not isinstance(raw, str):
        return "response"
    cleaned = re.sub(r"[^a-zA-Z0-9_-]+", "_", raw).strip("_")[:64]
    return cleaned or "response"


def _summary(count: int, first: str) -> str:
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"the output fails validation: {first}{more}"
