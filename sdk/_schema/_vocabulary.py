"""Every JSON Schema dialect's vocabulary, written out once: one table per dialect.

Each :class:`Dialect` names its meta-schema, the keyword that gives a resource its URI, every
keyword it defines with that keyword's :data:`role` (what its value is, and so how it is read)
and the formats it defines. Each dialect's keywords are written out in full, not derived from
another dialect's: a reader checks a dialect against its specification line by line.

Everything that needs to know what a dialect holds reads these tables: the translation into the
canonical form (:mod:`sdk._schema._dialects`: which keywords are known, which hold subschemas),
the node compiler (:mod:`sdk._schema._nodes`: the canonical form is Draft 2020-12, so what its
table defines is what may reach a node), the format checks (:mod:`sdk._schema._formats`: which
formats a schema's own draft asserts) and the meta-schema check (:mod:`sdk._schema._validators`:
the meta-schema URI names jsonschema's validator).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "ANNOTATION",
    "ASSERTION",
    "CORE",
    "COUNT",
    "DEPENDENCIES",
    "DIALECTS",
    "ITEMS",
    "LIST",
    "MAP",
    "META_SCHEMAS",
    "REFERENCE",
    "SCHEMA",
    "TYPES",
    "VOCABULARIES",
    "Dialect",
    "dialect_named",
]

# The roles a keyword plays: what its value is.
ASSERTION = "assertion"
"""A value the keyword checks a document against (``type``, ``enum``, ``maximum``, ...)."""
COUNT = "count"
"""A bound that is a non-negative integer (``maxLength``, ``minItems``, ...)."""
SCHEMA = "schema"
"""One subschema (``not``, ``additionalProperties``, ...)."""
MAP = "map"
"""An object of subschemas (``properties``, ``$defs``, ...)."""
LIST = "list"
"""A non-empty array of subschemas (``allOf``, ``prefixItems``, ...)."""
ITEMS = "items"
"""A subschema, or an array of them for the leading items (``items`` before 2020-12)."""
DEPENDENCIES = "dependencies"
"""An object of subschemas or arrays of property names (``dependencies`` before 2019-09)."""
ANNOTATION = "annotation"
"""Says something about the value, checks nothing: kept as written (``title``, ...)."""
CORE = "core"
"""Identifies a resource, an anchor or the dialect (``$id``, ``$anchor``, ``$schema``, ...)."""
REFERENCE = "reference"
"""Names another subschema (``$ref``, ``$dynamicRef``, ``$recursiveRef``)."""

TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
"""The names ``type`` takes, in every dialect."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """One dialect's vocabulary."""

    name: str
    """The dialect's name as ``dialect=`` takes it (``"draft-04"`` ... ``"2020-12"``)."""
    meta_schema: str
    """Its meta-schema's URI (what ``$schema`` says)."""
    aliases: tuple[str, ...]
    """Other names ``dialect=`` accepts for it (lower case)."""
    id_keyword: str
    """The keyword that gives a resource its URI (``id`` in draft-04, ``$id`` since)."""
    keywords: Mapping[str, str]
    """Every keyword the dialect defines, with its role. ``$defs`` and ``definitions`` are in
    every dialect: references point into them whatever the draft."""
    formats: frozenset[str]
    """The formats the dialect defines (any other ``format`` is an annotation even when formats
    are asserted)."""


_DRAFT_04_FORMATS = frozenset({"date-time", "email", "hostname", "ipv4", "ipv6", "uri"})
_DRAFT_06_FORMATS = frozenset(
    {
        "date-time",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "uri-template",
        "json-pointer",
    }
)
_DRAFT_07_FORMATS = frozenset(
    {
        "date-time",
        "date",
        "time",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    }
)
_DRAFT_2019_FORMATS = frozenset(
    {
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    }
)

DRAFT_04 = Dialect(
    name="draft-04",
    meta_schema="http://json-schema.org/draft-04/schema#",
    aliases=("draft4", "draft-4"),
    id_keyword="id",
    keywords={
        "$schema": CORE,
        "id": CORE,
        "$ref": REFERENCE,
        "definitions": MAP,
        "$defs": MAP,
        "type": ASSERTION,
        "enum": ASSERTION,
        "multipleOf": ASSERTION,
        "maximum": ASSERTION,
        "exclusiveMaximum": ASSERTION,  # a boolean: makes maximum exclusive
        "minimum": ASSERTION,
        "exclusiveMinimum": ASSERTION,  # a boolean: makes minimum exclusive
        "maxLength": COUNT,
        "minLength": COUNT,
        "pattern": ASSERTION,
        "format": ASSERTION,
        "items": ITEMS,
        "additionalItems": SCHEMA,
        "maxItems": COUNT,
        "minItems": COUNT,
        "uniqueItems": ASSERTION,
        "maxProperties": COUNT,
        "minProperties": COUNT,
        "required": ASSERTION,
        "properties": MAP,
        "patternProperties": MAP,
        "additionalProperties": SCHEMA,
        "dependencies": DEPENDENCIES,
        "allOf": LIST,
        "anyOf": LIST,
        "oneOf": LIST,
        "not": SCHEMA,
        "title": ANNOTATION,
        "description": ANNOTATION,
        "default": ANNOTATION,
        "$comment": ANNOTATION,  # a comment in every draft in practice; not worth a report
        # OpenAPI's discriminator, which pydantic emits next to oneOf: a hint, not a rule (the
        # tagged branch is the one whose tag ``const`` survives; the others die at the tag).
        "discriminator": ANNOTATION,
    },
    formats=_DRAFT_04_FORMATS,
)

DRAFT_06 = Dialect(
    name="draft-06",
    meta_schema="http://json-schema.org/draft-06/schema#",
    aliases=("draft6", "draft-6"),
    id_keyword="$id",
    keywords={
        "$schema": CORE,
        "$id": CORE,
        "$ref": REFERENCE,
        "definitions": MAP,
        "$defs": MAP,
        "type": ASSERTION,
        "enum": ASSERTION,
        "const": ASSERTION,
        "multipleOf": ASSERTION,
        "maximum": ASSERTION,
        "exclusiveMaximum": ASSERTION,
        "minimum": ASSERTION,
        "exclusiveMinimum": ASSERTION,
        "maxLength": COUNT,
        "minLength": COUNT,
        "pattern": ASSERTION,
        "format": ASSERTION,
        "items": ITEMS,
        "additionalItems": SCHEMA,
        "contains": SCHEMA,
        "maxItems": COUNT,
        "minItems": COUNT,
        "uniqueItems": ASSERTION,
        "maxProperties": COUNT,
        "minProperties": COUNT,
        "required": ASSERTION,
        "properties": MAP,
        "patternProperties": MAP,
        "additionalProperties": SCHEMA,
        "propertyNames": SCHEMA,
        "dependencies": DEPENDENCIES,
        "allOf": LIST,
        "anyOf": LIST,
        "oneOf": LIST,
        "not": SCHEMA,
        "title": ANNOTATION,
        "description": ANNOTATION,
        "default": ANNOTATION,
        "examples": ANNOTATION,
        "$comment": ANNOTATION,
        "discriminator": ANNOTATION,
    },
    formats=_DRAFT_06_FORMATS,
)

DRAFT_07 = Dialect(
    name="draft-07",
    meta_schema="http://json-schema.org/draft-07/schema#",
    aliases=("draft7", "draft-7"),
    id_keyword="$id",
    keywords={
        "$schema": CORE,
        "$id": CORE,
        "$ref": REFERENCE,
        "definitions": MAP,
        "$defs": MAP,
        "type": ASSERTION,
        "enum": ASSERTION,
        "const": ASSERTION,
        "multipleOf": ASSERTION,
        "maximum": ASSERTION,
        "exclusiveMaximum": ASSERTION,
        "minimum": ASSERTION,
        "exclusiveMinimum": ASSERTION,
        "maxLength": COUNT,
        "minLength": COUNT,
        "pattern": ASSERTION,
        "format": ASSERTION,
        "items": ITEMS,
        "additionalItems": SCHEMA,
        "contains": SCHEMA,
        "maxItems": COUNT,
        "minItems": COUNT,
        "uniqueItems": ASSERTION,
        "maxProperties": COUNT,
        "minProperties": COUNT,
        "required": ASSERTION,
        "properties": MAP,
        "patternProperties": MAP,
        "additionalProperties": SCHEMA,
        "propertyNames": SCHEMA,
        "dependencies": DEPENDENCIES,
        "allOf": LIST,
        "anyOf": LIST,
        "oneOf": LIST,
        "not": SCHEMA,
        "if": SCHEMA,
        "then": SCHEMA,
        "else": SCHEMA,
        "title": ANNOTATION,
        "description": ANNOTATION,
        "default": ANNOTATION,
        "examples": ANNOTATION,
        "$comment": ANNOTATION,
        "readOnly": ANNOTATION,
        "writeOnly": ANNOTATION,
        "contentMediaType": ANNOTATION,
        "contentEncoding": ANNOTATION,
        "discriminator": ANNOTATION,
    },
    formats=_DRAFT_07_FORMATS,
)

DRAFT_2019_09 = Dialect(
    name="2019-09",
    meta_schema="https://json-schema.org/draft/2019-09/schema",
    aliases=("draft2019-09",),
    id_keyword="$id",
    keywords={
        "$schema": CORE,
        "$vocabulary": CORE,
        "$id": CORE,
        "$anchor": CORE,
        "$recursiveAnchor": CORE,
        "$ref": REFERENCE,
        "$recursiveRef": REFERENCE,
        "$defs": MAP,
        "definitions": MAP,
        "type": ASSERTION,
        "enum": ASSERTION,
        "const": ASSERTION,
        "multipleOf": ASSERTION,
        "maximum": ASSERTION,
        "exclusiveMaximum": ASSERTION,
        "minimum": ASSERTION,
        "exclusiveMinimum": ASSERTION,
        "maxLength": COUNT,
        "minLength": COUNT,
        "pattern": ASSERTION,
        "format": ASSERTION,
        "items": ITEMS,
        "additionalItems": SCHEMA,
        "unevaluatedItems": SCHEMA,
        "contains": SCHEMA,
        "maxContains": COUNT,
        "minContains": COUNT,
        "maxItems": COUNT,
        "minItems": COUNT,
        "uniqueItems": ASSERTION,
        "maxProperties": COUNT,
        "minProperties": COUNT,
        "required": ASSERTION,
        "dependentRequired": ASSERTION,
        "properties": MAP,
        "patternProperties": MAP,
        "additionalProperties": SCHEMA,
        "unevaluatedProperties": SCHEMA,
        "propertyNames": SCHEMA,
        "dependentSchemas": MAP,
        "allOf": LIST,
        "anyOf": LIST,
        "oneOf": LIST,
        "not": SCHEMA,
        "if": SCHEMA,
        "then": SCHEMA,
        "else": SCHEMA,
        "title": ANNOTATION,
        "description": ANNOTATION,
        "default": ANNOTATION,
        "examples": ANNOTATION,
        "$comment": ANNOTATION,
        "deprecated": ANNOTATION,
        "readOnly": ANNOTATION,
        "writeOnly": ANNOTATION,
        "contentMediaType": ANNOTATION,
        "contentEncoding": ANNOTATION,
        "contentSchema": ANNOTATION,
        "discriminator": ANNOTATION,
    },
    formats=_DRAFT_2019_FORMATS,
)

DRAFT_2020_12 = Dialect(
    name="2020-12",
    meta_schema="https://json-schema.org/draft/2020-12/schema",
    aliases=("draft2020-12",),
    id_keyword="$id",
    keywords={
        "$schema": CORE,
        "$vocabulary": CORE,
        "$id": CORE,
        "$anchor": CORE,
        "$dynamicAnchor": CORE,
        "$ref": REFERENCE,
        "$dynamicRef": REFERENCE,
        "$defs": MAP,
        "definitions": MAP,
        "type": ASSERTION,
        "enum": ASSERTION,
        "const": ASSERTION,
        "multipleOf": ASSERTION,
        "maximum": ASSERTION,
        "exclusiveMaximum": ASSERTION,
        "minimum": ASSERTION,
        "exclusiveMinimum": ASSERTION,
        "maxLength": COUNT,
        "minLength": COUNT,
        "pattern": ASSERTION,
        "format": ASSERTION,
        "prefixItems": LIST,
        "items": SCHEMA,
        "unevaluatedItems": SCHEMA,
        "contains": SCHEMA,
        "maxContains": COUNT,
        "minContains": COUNT,
        "maxItems": COUNT,
        "minItems": COUNT,
        "uniqueItems": ASSERTION,
        "maxProperties": COUNT,
        "minProperties": COUNT,
        "required": ASSERTION,
        "dependentRequired": ASSERTION,
        "properties": MAP,
        "patternProperties": MAP,
        "additionalProperties": SCHEMA,
        "unevaluatedProperties": SCHEMA,
        "propertyNames": SCHEMA,
        "dependentSchemas": MAP,
        "allOf": LIST,
        "anyOf": LIST,
        "oneOf": LIST,
        "not": SCHEMA,
        "if": SCHEMA,
        "then": SCHEMA,
        "else": SCHEMA,
        "title": ANNOTATION,
        "description": ANNOTATION,
        "default": ANNOTATION,
        "examples": ANNOTATION,
        "$comment": ANNOTATION,
        "deprecated": ANNOTATION,
        "readOnly": ANNOTATION,
        "writeOnly": ANNOTATION,
        "contentMediaType": ANNOTATION,
        "contentEncoding": ANNOTATION,
        "contentSchema": ANNOTATION,
        "discriminator": ANNOTATION,
    },
    formats=_DRAFT_2019_FORMATS,
)

VOCABULARIES: Mapping[str, Dialect] = {
    d.name: d for d in (DRAFT_04, DRAFT_06, DRAFT_07, DRAFT_2019_09, DRAFT_2020_12)
}
"""Each dialect's table, by its name, oldest first."""

DIALECTS = tuple(VOCABULARIES)
"""The dialects read, oldest first, by the names ``dialect=`` takes."""

META_SCHEMAS = {name: d.meta_schema for name, d in VOCABULARIES.items()}
"""Each dialect's meta-schema URI (what ``$schema`` says)."""

_BY_URI = {d.meta_schema.split("://", 1)[-1].rstrip("#"): d.name for d in VOCABULARIES.values()}
_BY_ALIAS = {alias: d.name for d in VOCABULARIES.values() for alias in d.aliases}


def dialect_named(name: str) -> str | None:
    """The dialect a ``$schema`` URI or a ``dialect=`` name stands for (``None``: unknown)."""
    if name in VOCABULARIES:
        return name
    alias = _BY_ALIAS.get(name.lower())
    if alias is not None:
        return alias
    return _BY_URI.get(name.split("://", 1)[-1].rstrip("#"))
