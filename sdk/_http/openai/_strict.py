"""Strict schemas, sans-I/O: the JSON Schema a server demanding ``strict: true`` accepts.

OpenAI's structured outputs (and servers that copy its rules) require, in strict mode: a root
that is an object (not a ``$ref``, not ``anyOf``), ``additionalProperties: false`` on every
object, every property listed in ``required``, and no ``$ref`` with sibling keywords.
:func:`strict_schema` rewrites a schema the way openai-python's ``to_strict_json_schema`` does
(close and fully require every object, inline a ``$ref`` that has siblings, resolve a root
``$ref``, drop ``default: null``, fold a one-element ``allOf``), and one step further: a root
that is not an object is wrapped in a one-property object, ``{"value": <the schema>}``, which
the HTTP backends unwrap on the way back (:mod:`sdk._http._unwrap`), so that the caller never
sees it.

The rewrite never widens: every document the strict schema accepts is accepted by the schema
given (objects are closed only where they had no ``additionalProperties``; optional properties
become required; equivalent forms replace each other). Nor does it refuse more than that: an
object's keys are gathered where it is closed first (:func:`sdk._http._subset.gather_objects`:
``allOf`` members' properties into the object, the properties beside an ``anyOf`` into each
member), so a document that gives every property and no other key passes
(``tests/sdk/http/test_provider_schemas.py``); closed one by one, ``allOf`` members would
forbid each other's keys and no document would pass. A schema that cannot be said strictly
without changing what it means (a free-form object, a map, ``patternProperties``, an open
object's union members, which are given its openness; the properties beside a union whose
members list different keys: each member would be lent the others' keys and, every key
required, refuse the documents it alone allows) is sent as it was, with ``strict: false``.
Keywords a server does not support are kept, never dropped: a server that refuses them says so
in its error, and the client checks them either way. The one exception is a keyword that means
nothing where it stands: ``unevaluatedProperties`` beside ``additionalProperties`` (every
closed object has it) and ``unevaluatedItems`` beside ``items`` (the node itself evaluates
every member) are dropped, which changes no document's verdict; one that still means something
makes the schema not strict (sent as it was; the client checks it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from sdk._http._subset import Ungatherable, gather_objects, same
from sdk._http._unwrap import WRAPPER_KEY

__all__ = ["WRAPPER_KEY", "StrictSchema", "schema_to_send", "strict_schema"]

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated"})
# Keywords whose values are schemas, or maps/lists of schemas: the rewrite walks into these.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "not", "if", "then", "else", "contains", "additionalProperties")


@dataclass(frozen=True, slots=True)
class StrictSchema:
    """What to send: the schema, whether it is strict, whether its root was wrapped."""

    schema: dict[str, Any]
    """The schema to send (a new dict; the input is never modified)."""
    strict: bool
    """Send ``strict: true``: the schema follows the strict rules."""
    wrapped: bool
    """The root was wrapped in ``{"value": ...}``: the output must be unwrapped."""


def schema_to_send(schema: Mapping[str, Any], strict: bool) -> StrictSchema:
    """``schema`` as sent: :func:`strict_schema` when ``strict``, else a copy as it is."""
    if strict:
        return strict_schema(schema)
    return StrictSchema(copy.deepcopy(dict(schema)), strict=False, wrapped=False)


def strict_schema(schema: Mapping[str, Any]) -> StrictSchema:
    """``schema`` rewritten for strict mode (see the module docstring), or as it was with
    ``strict=False`` when it cannot be said strictly without changing its meaning."""
    root = copy.deepcopy(dict(schema))
    rewriter = _Rewriter(root)
    result = rewriter.rewrite(root, ())
    if rewriter.loose:
        return StrictSchema(copy.deepcopy(dict(schema)), strict=False, wrapped=False)
    if _is_plain_object(result):
        return StrictSchema(result, strict=True, wrapped=False)
    defs = {k: result.pop(k) for k in ("$defs", "definitions") if k in result}
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {WRAPPER_KEY: result},
        "required": [WRAPPER_KEY],
        "additionalProperties": False,
        **defs,
    }
    return StrictSchema(wrapper, strict=True, wrapped=True)


def _is_plain_object(node: Mapping[str, Any]) -> bool:
    """An object schema a strict server takes as a root (no union, no reference)."""
    return (
        node.get("type") == "object"
        and not any(k in node for k in ("anyOf", "oneOf", "allOf", "$ref", "enum", "const"))
        and isinstance(node.get("properties", {}), Mapping)
    )


class _Rewriter:
    """Rewrites one schema in place; ``loose`` turns true when some object cannot be closed."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.loose = False
        self._inlining: list[str] = []  # $refs being inlined, to stop at a cycle

    def rewrite(self, node: Any, path: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return node
        if node.get("default", 0) is None:
            del node["default"]  # no meaning in strict mode: the field is nullable anyway
        ref = node.get("$ref")
        if isinstance(ref, str) and (len(node) > 1 or not path):
            return self._inline(node, ref, path)
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            merged = _merge(node, all_of[0], drop="allOf")
            if merged is not None:
                return self.rewrite(merged, path)
        try:
            # Each value's keys where it is closed (allOf members' properties in the node, the
            # node's in each anyOf member): closing each node on its own forbids the others'.
            # An open object's union members are given its openness, so they are not closed
            # either; every key is required here, so no member is lent another's keys.
            node = gather_objects(
                node, lambda ref: _resolve(self.root, ref), every_key_required=True
            )
        except Ungatherable:
            self.loose = True
            return node
        if _is_object(node):
            self._close(node)
        if "unevaluatedProperties" in node or "unevaluatedItems" in node:
            self._unevaluated(node)
        for key in _SCHEMA_MAPS:
            sub = node.get(key)
            if isinstance(sub, dict):
                for name in list(sub):
                    sub[name] = self.rewrite(sub[name], (*path, key, name))
        for key in _SCHEMA_LISTS:
            sub = node.get(key)
            if isinstance(sub, list):
                sub[:] = [self.rewrite(v, (*path, key, str(i))) for i, v in enumerate(sub)]
        for key in _SCHEMA_ONE:
            if key in node:
                node[key] = self.rewrite(node[key], (*path, key))
        return node

    def _close(self, node: dict[str, Any]) -> None:
        extra = node.get("additionalProperties")
        props = node.get("properties")
        if (
            not isinstance(props, dict)
            or node.get("patternProperties")
            or extra
            not in (
                None,
                False,
            )
        ):
            # A free-form object, a map, or patternProperties: closing it would change what
            # the schema means.
            self.loose = True
            return
        node["additionalProperties"] = False
        node["required"] = list(props)

    def _unevaluated(self, node: dict[str, Any]) -> None:
        """Drop ``unevaluated*`` where the node evaluates every member itself (strict servers
        do not take it); anywhere else it cannot be said strictly."""
        if "additionalProperties" in node:
            node.pop("unevaluatedProperties", None)
        if "items" in node:
            node.pop("unevaluatedItems", None)
        if "unevaluatedProperties" in node or "unevaluatedItems" in node:
            self.loose = True

    def _inline(self, node: dict[str, Any], ref: str, path: tuple[str, ...]) -> Any:
        """A ``$ref`` with siblings (or at the root): the referenced schema, merged with the
        siblings. At a cycle (a schema that refers to itself through such refs) the bare
        ``$ref`` stays and the siblings, annotations only, are dropped."""
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        # The definitions stay where the references look for them (the root), whatever the
        # siblings become.
        defs: dict[str, Any] = {
            k: siblings.pop(k) for k in ("$defs", "definitions") if k in siblings
        }
        if ref in self._inlining:
            if all(k in _ANNOTATIONS for k in siblings):
                return {"$ref": ref}
            self.loose = True  # cannot be said without a $ref beside other keywords
            return node
        target = _resolve(self.root, ref)
        if not isinstance(target, dict):
            self.loose = True
            return node
        merged = _merge(siblings, copy.deepcopy(target), drop=None)
        if merged is None:  # the siblings and the target disagree on a keyword: both hold
            merged = {"allOf": [copy.deepcopy(target), siblings]}
        merged.update(defs)
        self._inlining.append(ref)
        try:
            return self.rewrite(merged, path)
        finally:
            self._inlining.pop()


def _merge(
    node: dict[str, Any], other: dict[str, Any], *, drop: str | None
) -> dict[str, Any] | None:
    """``node`` (without ``drop``) and ``other`` as one schema, when that means "both hold":
    no keyword in both with different values, annotations aside (``node``'s win). ``None``
    when they conflict."""
    merged = {k: v for k, v in node.items() if k != drop}
    for key, value in other.items():
        if key in merged and not same(merged[key], value) and key not in _ANNOTATIONS:
            return None
        merged.setdefault(key, value)
    return merged


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind):
        return True
    return kind is None and "properties" in node  # properties without a type describe objects


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    target: Any = root
    for part in unquote(ref[1:]).split("/")[1:]:
        token = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, Mapping) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            return None
    return target
