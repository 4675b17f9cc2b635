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
  schema with properties; closing it would close that value to the other schema's properties;
- so is a property's schema when another schema applying to the same object declares that
  property too (``properties.a`` beside ``then.properties.a``): each would close the value of
  ``a`` to its own names.

The input is not changed; constants and enums are not schemas and are left as they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Closure", "closures", "resolve", "strict_schema"]


@dataclass(frozen=True, slots=True)
class Closure:
    """What the strict rule does with the object schema at ``path`` (a JSON pointer):
    ``names``, the only properties it may write (in the grammar's key order), or none when
    it is ``left open`` (``what`` says why)."""

    path: str
    names: tuple[str, ...]
    what: str


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


def resolve(root: Any, ref: str) -> Any:
    """The local definition ``ref`` points to in ``root``, or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


_SAME_VALUE = ("allOf", "anyOf", "oneOf")


def _named(
    node: Any, root: Any, names: dict[str, None], required: set[str], seen: set[int]
) -> None:
    """The property names ``node`` and every subschema applying to the same value (``allOf``,
    ``anyOf``, ``oneOf``, ``$ref``, ``if``/``then``/``else``, ``dependentSchemas``) list, and
    the names they require, added to ``names`` (in order) and ``required``."""
    if not isinstance(node, dict) or id(node) in seen:
        return
    seen.add(id(node))
    properties = node.get("properties")
    if isinstance(properties, dict):
        names.update(dict.fromkeys(properties))
    if isinstance(node.get("required"), list):
        required.update(n for n in node["required"] if isinstance(n, str))
    subs: list[Any] = []
    for key in _SAME_VALUE:
        if isinstance(node.get(key), list):
            subs.extend(node[key])
    subs.extend(node[key] for key in ("if", "then", "else") if isinstance(node.get(key), dict))
    if isinstance(node.get("dependentSchemas"), dict):
        subs.extend(node["dependentSchemas"].values())
    if isinstance(node.get("$ref"), str):
        subs.append(resolve(root, node["$ref"]))
    for sub in subs:
        _named(sub, root, names, required, seen)


def _closed(
    node: dict[str, Any], root: Any, notes: list[Closure] | None, path: str
) -> dict[str, Any]:
    """xgrammar's strict mode of an object schema: with ``properties`` or ``required`` and no
    word on other properties, no property but those it and every subschema applying to the
    same value name may be written (the others added to its ``properties`` as any value); left
    open where closing would contradict the schema (a required name none lists, a
    ``minProperties`` above the names)."""
    kind = node.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    if not is_object or "additionalProperties" in node or "unevaluatedProperties" in node:
        return node
    if not isinstance(node.get("properties"), dict) and "required" not in node:
        return node
    names: dict[str, None] = {}
    required: set[str] = set()
    _named(node, root, names, required, set())
    low = node.get("minProperties", 0)
    missing = sorted(required - set(names))
    if missing or (isinstance(low, int) and low > len(names)):
        if notes is not None:
            why = f"required {missing} listed nowhere" if missing else f"minProperties {low}"
            notes.append(Closure(path, (), f"left open: closing it would contradict ({why})"))
        return node
    given = node.get("properties")
    properties: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    for name in names:
        properties.setdefault(name, {})
    out = {**node, "properties": properties, "additionalProperties": False}
    if notes is not None:
        notes.append(Closure(path, tuple(names), "closed to these names"))
    return out


def _declared(node: Any, root: Any, counts: dict[str, int], seen: set[int]) -> None:
    """How many of ``node`` and the subschemas applying to its value (as :func:`_named` walks
    them) declare each property name, added to ``counts``."""
    if not isinstance(node, dict) or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node.get("properties"), dict):
        for name in node["properties"]:
            counts[name] = counts.get(name, 0) + 1
    subs: list[Any] = []
    for key in _SAME_VALUE:
        if isinstance(node.get(key), list):
            subs.extend(node[key])
    subs.extend(node[key] for key in ("if", "then", "else") if isinstance(node.get(key), dict))
    if isinstance(node.get("dependentSchemas"), dict):
        subs.extend(node["dependentSchemas"].values())
    if isinstance(node.get("$ref"), str):
        subs.append(resolve(root, node["$ref"]))
    for sub in subs:
        _declared(sub, root, counts, seen)


def _shared(node: dict[str, Any], root: Any) -> frozenset[str]:
    """The property names two or more of the schemas applying to ``node``'s value declare."""
    counts: dict[str, int] = {}
    _declared(node, root, counts, set())
    return frozenset(name for name, count in counts.items() if count > 1)


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
    return _strict(node, False, frozenset(_open_refs(node, False, set())), node, None, "")


def closures(node: Any) -> list[Closure]:
    """Each object schema the strict rule closes or leaves open, in schema order."""
    notes: list[Closure] = []
    _strict(node, False, frozenset(_open_refs(node, False, set())), node, notes, "")
    return notes


def _strict(
    node: Any,
    in_place: bool,
    open_refs: frozenset[str],
    root: Any,
    notes: list[Closure] | None,
    path: str,
    shared: frozenset[str] = frozenset(),
) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = dict(node)
    # Names whose schemas another schema of this value declares too: left open (see the
    # module docstring); a schema applied in place shares its holder's.
    shared = (shared if in_place else frozenset()) | _shared(node, root)
    for key, at, sub, here in _children(node, in_place):
        if key in ("$defs", "definitions") and f"#/{key}/{at}" in open_refs:
            here = True
        if key == "properties" and at in shared:
            here = True
            if (
                notes is not None
                and isinstance(sub, dict)
                and ("properties" in sub or "required" in sub)
            ):
                notes.append(
                    Closure(
                        f"{path}/properties/{str(at).replace('~', '~0').replace('/', '~1')}",
                        (),
                        "left open: another schema applying to its object declares it too",
                    )
                )
        step = key if at is None else f"{key}/{str(at).replace('~', '~0').replace('/', '~1')}"
        # Only a schema of this same value (not a property's) shares this one's names.
        same_value = here and (key == "allOf" or key in _IN_PLACE)
        inherited = shared if same_value else frozenset()
        done = _strict(sub, here, open_refs, root, notes, f"{path}/{step}", inherited)
        if at is None:
            out[key] = done
        else:
            if out[key] is node[key]:
                out[key] = list(node[key]) if isinstance(node[key], list) else dict(node[key])
            out[key][at] = done
    if in_place:
        return out
    out = _closed(_typed(out), root, notes, path or "/")
    if "prefixItems" in out and "items" not in out and "unevaluatedItems" not in out:
        low = out.get("minItems", 0)
        if not isinstance(low, int) or low <= len(out["prefixItems"]):
            out["items"] = False  # else closing would contradict minItems: left open
    if isinstance(out.get("items"), list) and "additionalItems" not in out:
        low = out.get("minItems", 0)
        if not isinstance(low, int) or low <= len(out["items"]):
            out["additionalItems"] = False
    return out
