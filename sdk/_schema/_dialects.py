"""Every JSON Schema dialect, translated into one canonical form: Draft 2020-12.

:func:`canonical` reads a schema as its dialect says (the ``$schema`` of the document, or of a
subschema for what it holds; else the caller's default, Draft 2020-12 unless told otherwise;
whether a subschema is a resource is the enclosing dialect's to say) and writes
the same schema in Draft 2020-12, self-contained, which everything after it consumes: the
tracker's compiler (:mod:`sdk._schema._nodes`), the strict rewrite for servers and the local
engine's grammar. What changes per dialect:

=====================  ==========================================================================
draft-04               ``id`` is ``$id``; boolean ``exclusiveMaximum``/``exclusiveMinimum`` turn
                       ``maximum``/``minimum`` exclusive; ``integer`` refuses ``1.0`` (said in
                       :attr:`Canonical.read_as`, as each draft's formats are)
draft-04 to -07        ``$ref`` overrides its siblings (they are dropped; ``definitions`` stays
                       a place that references point into); a plain-name fragment in ``$id``
                       (``"#foo"``) is ``$anchor``; ``dependencies`` is ``dependentRequired``
                       (a list) or ``dependentSchemas`` (a schema)
draft-04 to 2019-09    an array ``items`` is ``prefixItems``, and ``additionalItems`` then
                       ``items``
2019-09                ``$recursiveRef`` is a ``$ref`` to the resource its ``$recursiveAnchor``
                       names, when that is known without running the schema (see below)
2020-12                ``$dynamicRef`` likewise, to its ``$dynamicAnchor``
=====================  ==========================================================================

A keyword the dialect does not define is an annotation, as the specification says: it is
dropped from the canonical form (it cannot change what is valid) and reported in
:attr:`Canonical.ignored`; ``unknown="refuse"`` makes it a :class:`~sdk.SchemaError` instead
(typos caught). ``x-`` keywords are extensions and pass silently. ``definitions`` and ``$defs``
hold schemas in every dialect (references point into them whatever the draft).

References: each is written as a JSON Pointer to where its target sits in the canonical form
(an array ``items`` moved to ``prefixItems``, a plain-name anchor's subschema...), relative
where it can be, by :mod:`sdk._schema._refs` (remote resources from the caller's ``registry``,
dynamic references made static where the target cannot depend on the evaluation path). Which
keywords each dialect defines, and what their values are, is :mod:`sdk._schema._vocabulary`'s
table for that dialect.

Every value of a keyword that is checked is vetted here, cheaply, in one pass (types, signs,
shapes): no meta-schema validation runs on the way (:func:`~sdk._schema._validators.check_schema`
runs only when the caller asks for strictness).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdk._errors import SchemaError
from sdk._schema._nodes import _regex, escape
from sdk._schema._refs import References, RefSite, Resource, join, quote_pointer, split
from sdk._schema._vetting import bad_value, owned, vet_count, vet_json, vet_number, vet_strings
from sdk._schema._vocabulary import (
    ANNOTATION,
    COUNT,
    DEPENDENCIES,
    DIALECTS,
    ITEMS,
    LIST,
    MAP,
    SCHEMA,
    TYPES,
    VOCABULARIES,
    dialect_named,
)

__all__ = ["Canonical", "canonical"]

_DEPTH = 400  # subschemas nested deeper than this are refused (the walk recurses)
_UNEVALUATED = frozenset({"unevaluatedProperties", "unevaluatedItems"})
_DEFINITIONS = frozenset({"$defs", "definitions"})


@dataclass(frozen=True, slots=True)
class Canonical:
    """A schema in the canonical form, and what reading it found."""

    schema: Any
    """The schema in Draft 2020-12 (a new dict, or ``True``/``False``)."""
    dialect: str
    """The root's dialect (one of :data:`DIALECTS`)."""
    ignored: tuple[tuple[str, str], ...]
    """Each keyword ignored as an annotation its dialect does not define: ``(pointer,
    keyword)``, in document order."""
    targets: dict[int, tuple[Any, str]]
    """What each ``$ref`` names: ``id()`` of the canonical subschema that holds it -> the
    canonical subschema it names and where that is in the input (so that the compiler resolves
    nothing again)."""
    places: dict[int, str]
    """Where each subschema with ``unevaluatedProperties``/``unevaluatedItems`` is: ``id()``
    of the canonical subschema -> a reference to it (its resource's URI, ``#``, a JSON
    Pointer) that resolves from the canonical root."""
    read_as: dict[int, str]
    """The dialect each canonical subschema was read in, where that is not Draft 2020-12:
    ``id()`` of the canonical subschema -> the dialect. The canonical form cannot say what
    differs per draft without a keyword of its own: draft-04's ``integer`` (a number written
    with a fraction is not one) and the formats each draft defines, with its rules. The node
    compiler reads this, so the schema sent to servers stays plain Draft 2020-12."""


def canonical(
    schema: Any,
    *,
    dialect: str | None = None,
    registry: Any = None,
    unknown: str = "ignore",
) -> Canonical:
    """``schema`` in the canonical form (see the module docstring). ``dialect`` is the default
    for a document without ``$schema`` (Draft 2020-12 when ``None``; it also stands for a
    ``$schema`` no dialect is known by); ``registry`` resolves references outside the document;
    ``unknown="refuse"`` refuses keywords the dialect does not define. Raises
    :class:`~sdk.SchemaError` for anything that is not a usable schema."""
    default = "2020-12"
    if dialect is not None:
        named = dialect_named(dialect)
        if named is None:
            raise SchemaError(
                f"unknown dialect {dialect!r}: expected one of {', '.join(DIALECTS)} or a "
                "$schema URI of one",
                keyword="$schema",
            )
        default = named
    if unknown not in ("ignore", "refuse"):
        raise ValueError(f"unknown must be 'ignore' or 'refuse', not {unknown!r}")
    translator = _Translator(default, dialect is not None, registry, unknown == "refuse")
    try:
        return translator.run(schema)
    except RecursionError:
        raise SchemaError("the schema is nested too deeply to compile") from None


class _Translator(References):
    def __init__(self, default: str, forced: bool, registry: Any, refuse: bool) -> None:
        super().__init__(registry)
        self.default = default
        self.forced = forced  # the caller named the dialect: it stands for unknown $schema
        self.refuse = refuse
        self.ignored: list[tuple[str, str]] = []
        self.places: dict[int, str] = {}  # id() of each unevaluated* holder -> a ref to it
        self.read_as: dict[int, str] = {}  # id() of each canonical subschema -> its dialect
        self.items_where: str | None = None  # the first unevaluatedItems met
        self.patterns: list[tuple[str, str]] = []  # (where, pattern) of every regex read
        self.contains_2019: str | None = None  # the first contains read as Draft 2019-09

    # ------------------------------------------------------------------ the walk

    def run(self, schema: Any) -> Canonical:
        dialect = self.default
        if isinstance(schema, Mapping) and "$schema" in schema:
            dialect = self._declared(schema["$schema"], "")
        elif not isinstance(schema, (Mapping, bool)):
            raise SchemaError(
                f"a schema must be an object or a boolean, got {type(schema).__name__}"
            )
        out = self._resource_root(schema, "", dialect, "", ())
        root = self.root
        assert root is not None
        self.resolve_all()
        if self.contains_2019 is not None and self.items_where is not None:
            raise SchemaError(
                f"unevaluatedItems (at {self.items_where or '/'}) in a schema with a Draft "
                f"2019-09 contains (at {self.contains_2019 or '/'}) is not supported: in 2019-09 "
                "contains evaluates no items, in the 2020-12 form the tracker reads it does",
                keyword="unevaluatedItems",
                pointer=self.items_where,
            )
        if self.places:
            self._python_patterns()
        return Canonical(
            out, root.dialect, tuple(self.ignored), self.targets, self.places, self.read_as
        )

    def _python_patterns(self) -> None:
        """unevaluated* is judged by jsonschema, which reads patterns with Python's ``re``: one
        that ``re`` cannot read would fail mid-stream, so it is refused now."""
        for where, pattern in self.patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise SchemaError(
                    f"the pattern {pattern!r} at {where} is valid ECMA-262 but Python's re "
                    f"cannot read it ({exc}), and unevaluatedProperties/unevaluatedItems in "
                    "this schema are judged by jsonschema, which uses re",
                    keyword="pattern",
                    pointer=where,
                ) from None

    def _declared(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise SchemaError(
                f"$schema must be a string, got {type(value).__name__} at {where or '/'}",
                keyword="$schema",
                pointer=where,
            )
        found = dialect_named(value)
        if found is None:
            if self.forced:
                return self.default
            raise SchemaError(
                f"$schema {value!r} (at {where or '/'}) names no dialect fieldstream knows "
                f"(it reads {', '.join(DIALECTS)}): pass dialect= to read it as one of them",
                keyword="$schema",
                pointer=where,
            )
        return found

    def _embedded(
        self, raw: Mapping[str, Any], where: str, dialect: str, base: str, resource: Resource
    ) -> str:
        """The dialect a subschema with ``$schema`` is read in: the one it names, as
        jsonschema reads it (its validator for that draft takes over there), or the enclosing
        ``dialect`` when the name is not a dialect's (jsonschema keeps its validator too).

        Only the enclosing dialect's identifier makes the subschema a resource: a draft-04
        ``{"$schema": ..., "id": "schemata/app"}`` inside a draft-07 or 2020-12 document is not
        one, and its ``#/...`` references still resolve from the document (Heroku's prmd
        hyper-schemas are written so). The specifications allow ``$schema`` only at a
        resource's root (2019-09 on) or the document's (draft-07 and older); elsewhere their
        behaviour is undefined, and this follows jsonschema. The subschema is still known by
        its own identifier's URI, as jsonschema's registry knows it, for references that name
        it absolutely."""
        value = raw["$schema"]
        if not isinstance(value, str):
            raise bad_value("$schema", where, "a string")
        declared = dialect_named(value)
        if declared is None or declared == dialect:
            return dialect
        own = VOCABULARIES[declared].id_keyword
        if own != VOCABULARIES[dialect].id_keyword and isinstance(raw.get(own), str):
            uri = split(join(base, raw[own]))[0]
            if uri and uri not in self.resources:  # its subschemas are placed in resource's
                self.resources[uri] = Resource(uri, raw, declared)
        return declared

    def _resource_root(
        self, raw: Any, base: str, dialect: str, where: str, chain: tuple[Resource, ...]
    ) -> Any:
        """A resource's root: the document, or a remote resource's (embedded elsewhere)."""
        resource = Resource(base, raw, dialect)
        if self.root is None:
            self.root = resource
        self.resources.setdefault(base, resource)
        out = self._schema(raw, where, dialect, base, resource, "", (*chain, resource), 0)
        if isinstance(out, dict):
            resource.out = out
        return out

    def _schema(
        self,
        raw: Any,
        where: str,
        dialect: str,
        base: str,
        resource: Resource,
        at: str,
        chain: tuple[Resource, ...],
        depth: int,
    ) -> Any:
        """Translate the subschema ``raw`` (at ``where`` in the input; at ``at`` in its
        canonical resource)."""
        if raw is True or raw is False:
            return raw
        if not isinstance(raw, Mapping):
            raise SchemaError(
                f"a schema must be an object or a boolean, got {type(raw).__name__} at "
                f"{where or '/'}",
                pointer=where,
            )
        for key in raw:
            if not isinstance(key, str):
                raise SchemaError(
                    f"a schema's keys must be strings, got {key!r} at {where or '/'}",
                    pointer=where,
                )
        if depth > _DEPTH:
            raise SchemaError(
                f"the schema is nested too deeply to compile (at {where or '/'})", pointer=where
            )
        # What makes this subschema a resource (a base URI of its own) is the enclosing
        # dialect's identifier keyword; its own $schema says how its keywords are read.
        id_key = VOCABULARIES[dialect].id_keyword
        if "$schema" in raw and where:
            dialect = self._embedded(raw, where, dialect, base, resource)
        known = VOCABULARIES[dialect].keywords
        old = dialect in ("draft-04", "draft-06", "draft-07")
        out: dict[str, Any] = {}
        ref = raw.get("$ref") if "$ref" in known else None
        overriding = old and ref is not None
        if not overriding and isinstance(raw.get(id_key), str):
            uri, fragment = split(join(base, raw[id_key]))
            if fragment and dialect != "2019-09" and dialect != "2020-12":
                out["$anchor"] = fragment  # draft <= 7: "#foo" in $id is a plain-name anchor
            if uri and uri != base:
                out["$id"] = uri
                base = uri
                if at == "" and resource.raw is raw:  # the resource's own root names it
                    resource.uri = uri
                    resource.dialect = dialect
                else:
                    resource = Resource(uri, raw, dialect)
                    resource.out = out
                    chain = (*chain, resource)
                    at = ""
                self.resources.setdefault(uri, resource)
        elif id_key in raw and not overriding and not isinstance(raw[id_key], str):
            raise bad_value(id_key, where, "a string")
        self.placed.setdefault(id(raw), (resource, at, out, where))
        if dialect != "2020-12":
            self.read_as[id(out)] = dialect

        def sub(value: Any, rel_in: str, rel_out: str) -> Any:
            return self._schema(
                value, where + rel_in, dialect, base, resource, at + rel_out, chain, depth + 1
            )

        for key, value in raw.items():
            if key in ("$schema", "id", "$id"):
                continue
            role = known.get(key)
            if role is None:
                if key.startswith("x-"):
                    out[key] = owned(value)
                    continue
                if self.refuse:
                    raise SchemaError(
                        f"unknown keyword {key!r} at {where or '/'} (the {dialect} dialect does "
                        "not define it; unknown keywords are refused on request)",
                        keyword=key,
                        pointer=where,
                    )
                self.ignored.append((where, key))
                continue
            if overriding and key not in ("$ref", "$defs", "definitions") and role != ANNOTATION:
                continue  # draft <= 7: $ref overrides its siblings
            if key in _UNEVALUATED:
                # Judged on the whole subschema at the value's close: where it is, as a
                # reference jsonschema resolves in the canonical document.
                self.places[id(out)] = f"{resource.uri}#{quote_pointer(at)}"
                if key == "unevaluatedItems" and self.items_where is None:
                    self.items_where = where
            if key == "contains" and dialect == "2019-09" and self.contains_2019 is None:
                self.contains_2019 = where
            if role == ANNOTATION:
                out[key] = owned(value)
                continue
            self._keyword(raw, key, role, value, where, dialect, out, sub)
        if ref is not None:
            if not isinstance(ref, str):
                raise bad_value("$ref", where, "a string")
            self.sites.append(RefSite(out, "$ref", ref, base, chain, where))
        for key in ("$recursiveRef", "$dynamicRef"):
            if key in raw and key in known and not overriding:
                self.sites.append(RefSite(out, key, raw[key], base, chain, where))
        anchor = out.get("$anchor")
        if isinstance(anchor, str):
            self.anchors.setdefault((resource.uri, anchor), (out, where, at))
        if dialect == "2019-09" and raw.get("$recursiveAnchor") is True and at == "":
            resource.recursive = True
        if dialect == "2020-12" and isinstance(raw.get("$dynamicAnchor"), str):
            resource.dynamic.add(raw["$dynamicAnchor"])
        return out

    def _keyword(
        self,
        raw: Mapping[str, Any],
        key: str,
        role: str,
        value: Any,
        where: str,
        dialect: str,
        out: dict[str, Any],
        sub: Any,
    ) -> None:
        """Translate one keyword of ``raw`` (its ``role`` in the dialect's vocabulary) into
        ``out``, vetting its value."""
        here = f"{where}/{escape(key)}"
        if key == "items":
            if isinstance(value, list) and role == ITEMS:
                out["prefixItems"] = [
                    sub(v, f"/items/{i}", f"/prefixItems/{i}") for i, v in enumerate(value)
                ]
                extra = raw.get("additionalItems")
                if extra is not None:
                    out["items"] = sub(extra, "/additionalItems", "/items")
            elif isinstance(value, list):
                raise SchemaError(
                    f"items (at {where or '/'}) is an array, which Draft 2020-12 spells "
                    "prefixItems: for a schema written in an older draft, say so with $schema "
                    "or compile_schema(..., dialect='draft-07')",
                    keyword="items",
                    pointer=f"{where}/items",
                )
            else:
                out["items"] = sub(value, "/items", "/items")
        elif key == "additionalItems":
            if not isinstance(raw.get("items"), list):
                sub(value, "/additionalItems", "/additionalItems")  # vetted, no effect
        elif role == SCHEMA:
            out[key] = sub(value, f"/{key}", f"/{key}")
        elif role == MAP:
            if not isinstance(value, Mapping):
                raise bad_value(key, where, "an object")
            target = out.setdefault(key, {})
            for name, v in value.items():
                if not isinstance(name, str):
                    raise bad_value(key, where, "an object (with string keys)")
                if key == "patternProperties":
                    _regex(name, here)
                    self.patterns.append((here, name))
                elif key in _DEFINITIONS and not isinstance(v, (Mapping, bool)):
                    # Not a schema, so nothing to check; only a reference could use it, and one
                    # that does is refused there. Reported as an ignored annotation.
                    self.ignored.append((here, name))
                    continue
                part = f"/{key}/{escape(name)}"
                target[name] = sub(v, part, part)
        elif role == LIST:
            if not isinstance(value, list) or not value:
                raise bad_value(key, where, "a non-empty array")
            out[key] = [sub(v, f"/{key}/{i}", f"/{key}/{i}") for i, v in enumerate(value)]
        elif role == DEPENDENCIES:
            if not isinstance(value, Mapping):
                raise bad_value(key, where, "an object")
            for name, v in value.items():
                if not isinstance(name, str):
                    raise bad_value(key, where, "an object (with string keys)")
                if isinstance(v, list):
                    out.setdefault("dependentRequired", {})[name] = vet_strings(v, key, here)
                else:
                    part = f"/{escape(name)}"
                    out.setdefault("dependentSchemas", {})[name] = sub(
                        v, f"/dependencies{part}", f"/dependentSchemas{part}"
                    )
        elif key in ("exclusiveMaximum", "exclusiveMinimum") and dialect == "draft-04":
            if not isinstance(value, bool):
                raise bad_value(key, where, "a boolean")
            bound = "maximum" if key == "exclusiveMaximum" else "minimum"
            if value and bound in raw:
                out[key] = vet_number(raw[bound], bound, where)
                out.pop(bound, None)
        elif key in ("maximum", "minimum"):
            exclusive = "exclusiveMaximum" if key == "maximum" else "exclusiveMinimum"
            number = vet_number(value, key, where)
            if not (dialect == "draft-04" and raw.get(exclusive) is True):
                out[key] = number
        elif key in ("exclusiveMaximum", "exclusiveMinimum"):
            out[key] = vet_number(value, key, where)
        elif key == "multipleOf":
            number = vet_number(value, key, where)
            if number <= 0:
                raise bad_value(key, where, "a number greater than 0")
            out[key] = number
        elif role == COUNT:
            out[key] = vet_count(value, key, where)
        elif key == "type":
            names = [value] if isinstance(value, str) else value
            if (
                not isinstance(names, list)
                or not names
                or not all(isinstance(t, str) and t in TYPES for t in names)
                or len(set(names)) != len(names)
            ):
                raise bad_value(key, where, f"one of {sorted(TYPES)} or a list of them")
            out[key] = list(names) if isinstance(value, list) else value
        elif key == "enum":
            if not isinstance(value, list):
                raise bad_value(key, where, "an array")
            out[key] = vet_json(value, key, where)
        elif key == "const":
            out[key] = vet_json(value, key, where)
        elif key in ("pattern", "format", "$anchor"):
            if not isinstance(value, str):
                raise bad_value(key, where, "a string")
            if key == "pattern":
                _regex(value, here)  # refused now, not when a value first meets it
                self.patterns.append((here, value))
            out[key] = value
        elif key == "$dynamicAnchor":
            if not isinstance(value, str):
                raise bad_value(key, where, "a string")
            # Every dynamic reference is made static: the anchor is a plain one now (which
            # ``referencing`` will not resolve against a dynamic scope).
            out.setdefault("$anchor", value)
        elif key == "uniqueItems":
            if not isinstance(value, bool):
                raise bad_value(key, where, "a boolean")
            out[key] = value
        elif key == "required":
            out[key] = vet_strings(value, key, here)
        elif key == "dependentRequired":
            if not isinstance(value, Mapping):
                raise bad_value(key, where, "an object")
            if not all(isinstance(k, str) for k in value):
                raise bad_value(key, where, "an object (with string keys)")
            out[key] = {k: vet_strings(v, key, f"{here}/{escape(k)}") for k, v in value.items()}
        elif key in ("$recursiveRef", "$dynamicRef"):
            if not isinstance(value, str):
                raise bad_value(key, where, "a string")
        elif key == "$recursiveAnchor":
            if not isinstance(value, bool):
                raise bad_value(key, where, "a boolean")
        elif key in ("$ref", "$vocabulary"):
            pass  # $ref: a site, patched once every resource is known; $vocabulary: inert
        else:  # pragma: no cover - every known keyword is handled above
            raise AssertionError(key)
