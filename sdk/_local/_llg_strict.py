"""xgrammar's ``strict_mode`` as a JSON Schema rewrite, for llguidance (which has none).

xgrammar compiles every schema strict; so that llguidance's masks take what xgrammar's take,
:func:`strict_schema` rewrites the schema first:

- an object schema with ``properties`` (or ``required``) and nothing said of other properties
  (``additionalProperties``, ``unevaluatedProperties``) takes no other property, and a required
  name its properties do not list is not required (xgrammar writes none);
- an untyped schema with ``properties``/``additionalProperties`` is an object, one with
  ``items``/``prefixItems`` an array (as xgrammar infers them);
- an array with ``prefixItems`` and no ``items`` takes no more items; one with a list of
  ``items`` no ``additionalItems``;
- what applies to the same value as an object schema around it is left open: an ``allOf``
  member, a definition an ``allOf`` refers to, a branch (``anyOf``, ``oneOf``, ``if``...) of a
  schema with properties; closing it would close that value to the other schema's properties.

The input is not changed; constants and enums are not schemas and are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["strict_schema"]

# Keywords whose value is one schema, a list of schemas, or a map of names to schemas.
_ONE = (
    *("additionalProperties", "items", "not", "if", "then", "else", "contains"),
    *("propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties"),
)
_LIST = ("anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Of those, the ones applied to the same value as the schema that holds them.
_IN_PLACE = ("anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")


_COMBINED = ("anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not")


def _typed(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with the type xgrammar infers for an untyped schema: an object where it has
    ``properties`` or ``additionalProperties``, an array where it has ``items`` or
    ``prefixItems`` (other keywords leave any type allowed, as xgrammar does)."""
    if "type" in node or any(k in node for k in _COMBINED):
        return node
    is_object = "properties" in node or "additionalProperties" in node
    is_array = "items" in node or "prefixItems" in node
    if is_object != is_array:
        return {**node, "type": "object" if is_object else "array"}
    return node


def _closed(node: dict[str, Any]) -> dict[str, Any]:
    """xgrammar's strict mode of an object schema: with ``properties`` or ``required`` and no
    word on other properties, no other property may be written, and a required name the
    properties do not list is not required (xgrammar writes none)."""
    kind = node.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    if not is_object or "additionalProperties" in node or "unevaluatedProperties" in node:
        return node
    if not isinstance(node.get("properties"), dict) and "required" not in node:
        return node
    out = {**node, "additionalProperties": False}
    given = node.get("properties")
    properties: dict[str, Any] = given if isinstance(given, dict) else {}
    if isinstance(node.get("required"), list):
        out["required"] = [name for name in node["required"] if name in properties]
    return out


def _children(node: dict[str, Any], in_place: bool) -> Iterator[tuple[str, Any, Any, bool]]:
    """Each subschema of ``node``: (keyword, key or index or None, subschema, in place)."""
    # Branches applied to this same value stay open when this schema speaks of properties.
    branches = in_place or any(
        k in node for k in ("properties", "required", "additionalProperties", "allOf")
    )
    for key in (*_ONE, *_LIST, "allOf", *_MAP):
        value = node.get(key)
        here = True if key == "allOf" else branches if key in _IN_PLACE else False
        if isinstance(value, list) and key != "additionalProperties":
            for i, sub in enumerate(value):
                yield key, i, sub, here
        elif isinstance(value, dict) and key in _MAP:
            for name, sub in value.items():
                yield key, name, sub, here
        elif isinstance(value, dict):
            yield key, None, value, here


def _open_refs(node: Any, in_place: bool, out: set[str]) -> set[str]:
    """The ``$ref`` targets applied in place (an ``allOf`` of references): left open."""
    if isinstance(node, dict):
        if in_place and isinstance(node.get("$ref"), str):
            out.add(node["$ref"])
        for _, _, sub, here in _children(node, in_place):
            _open_refs(sub, here, out)
    return out


def strict_schema(node: Any) -> Any:
    """``node`` (a JSON Schema as parsed JSON) under xgrammar's ``strict_mode`` (see the module
    docstring); the input is not changed. What applies to the same value as an object schema
    around it (an ``allOf`` member, a definition an ``allOf`` refers to, a branch of a schema
    with properties) is left open: closing it would close that value to the other schema's
    properties."""
    return _strict(node, False, frozenset(_open_refs(node, False, set())))


def _strict(node: Any, in_place: bool, open_refs: frozenset[str]) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = dict(node)
    for key, at, sub, here in _children(node, in_place):
        if key in ("$defs", "definitions") and f"#/{key}/{at}" in open_refs:
            here = True
        done = _strict(sub, here, open_refs)
        if at is None:
            out[key] = done
        else:
            if out[key] is node[key]:
                out[key] = list(node[key]) if isinstance(node[key], list) else dict(node[key])
            out[key][at] = done
    if in_place:
        return out
    out = _closed(_typed(out))
    if "prefixItems" in out and "items" not in out and "unevaluatedItems" not in out:
        out["items"] = False
    if isinstance(out.get("items"), list) and "additionalItems" not in out:
        out["additionalItems"] = False
    return out
