"""A JSON Schema rewritten to the subset Anthropic's structured outputs apply (sans-I/O).

Anthropic compiles ``output_config.format.schema`` (and a ``strict: true`` tool's
``input_schema``) into a grammar that masks the model's tokens. It takes a subset of JSON
Schema (its "JSON Schema limitations"; the ``anthropic`` SDK's ``transform_schema`` applies
the same list): :func:`anthropic_schema` keeps what that subset has and leaves the rest to
fieldstream, which checks the caller's whole schema on every field as it streams. So the
schema sent may allow more than the caller's (a server-side mask that is looser), never less.

==========================================  =============================================
The caller's schema                         What Anthropic is sent
==========================================  =============================================
``type`` (one, or a list)                   the type; a list as ``anyOf`` of one type each
``properties``, ``required``                as they are
object without ``additionalProperties``     ``additionalProperties: false`` (required by
/ with ``false``                            the API; an open object cannot be sent)
``items``, ``minItems`` 0 or 1              as they are
``prefixItems`` (a tuple)                   ``items``: ``anyOf`` the tuple's schemas and the
                                            tail's (no tail: no ``items``), the tuple said
                                            in the description
``enum`` / ``const`` of scalars             as they are
``anyOf``, ``allOf``; ``oneOf``             as they are; ``oneOf`` as ``anyOf``; an object's
                                            keys gathered where it is closed (below)
``$ref`` into ``$defs`` / ``definitions``   as it is (a recursive one: see below)
``format`` date-time, time, date,           as it is (another format: left to fieldstream)
duration, email, hostname, uri, ipv4,
ipv6, uuid
``pattern``                                 as it is, unless it uses lookaround or
                                            backreferences
``title``, ``description``                  as they are; what was left out is added to the
                                            description, so the model still reads it
anything else (``minimum``, ``maximum``,    left out: fieldstream checks it
``multipleOf``, ``minLength``,
``maxLength``, ``maxItems``, ``minItems``
> 1, ``uniqueItems``, ``not``, ``if``,
``contains``, ...)
==========================================  =============================================

Every object is closed, so an object's keys are gathered where it is closed first
(:func:`sdk._http._subset.gather_objects`): an ``allOf`` member's ``properties`` and
``required`` are the object's (closed on its own, each member would forbid the others' keys and
the schema would accept no object with any property), and the ``properties`` beside an
``anyOf`` / ``oneOf`` go into each member, with the keys the other members list (an open
object's members are given its openness, and so are not sent either). A
``tests/sdk/http/test_provider_schemas.py`` property test holds the promise: every document
the caller's schema accepts (an object without ``additionalProperties`` read as closed to the
properties its schema evaluates) is accepted by the schema sent.

A schema that cannot be said in the subset without forbidding documents it allows (an object
open to other properties: ``additionalProperties`` true or a schema, ``patternProperties``; a
recursive ``$ref``) is not sent as a format at all: :func:`anthropic_schema` returns ``None``
and the request goes without ``output_config`` (a tool without ``strict``); fieldstream alone
checks the output.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

from sdk._http._subset import Resolve, Ungatherable, gather_objects, same

__all__ = ["FORMATS", "anthropic_schema"]

FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
"""The string formats Anthropic's structured outputs apply."""

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_ANNOTATIONS = ("title", "description")
# Lookaround, backreferences (numbered or named) and possessive/atomic forms.
_COMPLEX_PATTERN = re.compile(r"\(\?[=!<>]|\\[1-9]|\\k<|\(\?>")
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


class _Unsayable(Exception):
    """The schema cannot be said in Anthropic's subset without narrowing it."""


def anthropic_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``schema`` in Anthropic's subset (a new dict), or ``None`` when it cannot be sent
    without forbidding documents it allows (see the module docstring)."""
    defs = {
        key: value
        for key in ("$defs", "definitions")
        if isinstance(value := schema.get(key), Mapping)
    }
    if _recursive(schema, defs):
        return None

    def resolve(ref: str) -> Mapping[str, Any] | None:
        for key, table in defs.items():
            prefix = f"#/{key}/"
            if ref.startswith(prefix):
                target = table.get(ref[len(prefix) :])
                return target if isinstance(target, Mapping) else None
        return None

    try:
        out = _node(schema, resolve)
        for key, table in defs.items():
            out[key] = {name: _node(sub, resolve) for name, sub in table.items()}
    except (_Unsayable, Ungatherable):
        return None
    return out


def _node(node: Any, resolve: Resolve) -> dict[str, Any]:
    if node is True or node == {}:
        raise _Unsayable  # any value: the subset has no such schema
    if not isinstance(node, Mapping):
        raise _Unsayable
    # Each value's keys where it is closed: allOf members' properties in the node, the node's
    # in each anyOf member (closing each node on its own forbids the others' keys).
    node = gather_objects(node, resolve)
    out: dict[str, Any] = {}
    left: dict[str, Any] = {}
    kinds = node.get("type")
    if isinstance(kinds, list) and len(kinds) > 1:
        rest = {k: v for k, v in node.items() if k not in ("type", *_ANNOTATIONS)}
        out["anyOf"] = [_node({**rest, "type": kind}, resolve) for kind in kinds]
        for key in _ANNOTATIONS:
            if isinstance(node.get(key), str):
                out[key] = node[key]
        return out
    if isinstance(kinds, list):
        kinds = kinds[0] if kinds else None
    for key, value in node.items():
        if key == "type":
            if kinds in _TYPES:
                out["type"] = kinds
            else:
                raise _Unsayable
        elif key in _ANNOTATIONS:
            if isinstance(value, str):
                out[key] = value
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            out["allOf" if key == "allOf" else "anyOf"] = [_node(v, resolve) for v in value]
        elif key == "$ref" and isinstance(value, str):
            if not value.startswith("#/"):
                raise _Unsayable  # an external reference
            out["$ref"] = value
        elif key == "properties" and isinstance(value, Mapping):
            out["properties"] = {name: _node(sub, resolve) for name, sub in value.items()}
        elif key == "required" and isinstance(value, list):
            out["required"] = list(value)
        elif key == "additionalProperties":
            if value is not False:
                raise _Unsayable  # an open object or a map
        elif key == "patternProperties":
            raise _Unsayable
        elif key == "items" and "prefixItems" in node:
            continue  # said with prefixItems, below
        elif key == "prefixItems" and isinstance(value, list):
            # The subset has no tuples: every item may be any of the tuple's schemas or the
            # tail's (sending the tail's alone would force the first items to its type).
            tail = node.get("items", True)
            options = [*value, tail] if tail is not False else list(value)
            with contextlib.suppress(_Unsayable):  # an item the subset cannot say: any item
                sent = [_node(o, resolve) for o in options]
                unique = [o for i, o in enumerate(sent) if not any(same(o, p) for p in sent[:i])]
                if unique:
                    out["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
            left[key] = value
            if "items" in node:
                left["items"] = tail
        elif key == "items" and isinstance(value, Mapping):
            out["items"] = _node(value, resolve)
        elif key == "minItems" and value in (0, 1) and not isinstance(value, bool):
            out["minItems"] = value
        elif key in ("enum", "const"):
            values = value if key == "enum" else [value]
            if isinstance(values, list) and all(_scalar(v) for v in values):
                out[key] = value
            else:
                left[key] = value
        elif key == "format":
            (out if value in FORMATS else left)[key] = value
        elif key == "pattern":
            simple = isinstance(value, str) and not _COMPLEX_PATTERN.search(value)
            (out if simple else left)[key] = value
        elif key in ("$defs", "definitions", "$schema", "$id", "$comment", "default"):
            continue  # definitions are written at the root; the others say nothing to it
        else:
            left[key] = value
    if _object(node, kinds):
        out["additionalProperties"] = False
        if not node.get("properties"):
            raise _Unsayable  # an object with no properties: open to any key
    if "enum" in out and isinstance(kinds, str) and kinds in _JSON_TYPES:
        out["enum"] = [v for v in out["enum"] if _of_type(v, kinds)]
    if left:
        said = ", ".join(f"{k}: {v!r}" for k, v in left.items())
        description = out.get("description")
        out["description"] = (description + "\n\n" if description else "") + "{" + said + "}"
    return out


def _object(node: Mapping[str, Any], kind: Any) -> bool:
    return kind == "object" or (kind is None and "properties" in node)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _of_type(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES[kind])


def _recursive(schema: Mapping[str, Any], defs: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether some ``$ref`` leads, through the definitions, back to itself."""
    edges: dict[str, set[str]] = {}
    for key, table in defs.items():
        for name, sub in table.items():
            edges[f"#/{key}/{name}"] = _refs(sub)
    root = _refs({k: v for k, v in schema.items() if k not in defs})
    if "#" in root:
        return True  # the root refers to itself
    seen: set[str] = set()

    def cycle(ref: str, path: set[str]) -> bool:
        if ref in path:
            return True
        if ref in seen:
            return False
        seen.add(ref)
        return any(cycle(nxt, path | {ref}) for nxt in edges.get(ref, ()))

    return any(cycle(ref, set()) for ref in edges)


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found.add(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
