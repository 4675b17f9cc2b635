"""What the providers' schema subsets share: an object's keys gathered where it is closed
(sans-I/O).

Anthropic's subset and OpenAI's strict mode close every object (``additionalProperties:
false``): an object is allowed the properties its schema lists, no others. Closing each node
that lists ``properties`` on its own is wrong where several nodes describe one value: two
``allOf`` members that each list one property, closed, forbid each other's keys (the schema
accepts no object with any property), and so do a node's ``properties`` and the ``anyOf``
members beside it. :func:`gather_objects` rewrites a node so that each value's keys are listed
where that value is closed, and never forbids what the caller's schema allows read that way (an
object closed to the properties its schema evaluates, as ``unevaluatedProperties: false``
reads it):

- an ``allOf`` member's ``properties`` and ``required`` (and a ``$ref`` beside other keywords,
  read as an ``allOf`` member) move into the node: a property listed twice gets both schemas
  (``allOf``); the member's other keywords move too, those the node has already with another
  value stay in the member;
- a node's ``properties`` and ``required`` move into each ``anyOf`` / ``oneOf`` member beside
  them, and each member is given the keys the other members list (with their schemas,
  ``anyOf``): another member that holds may be what allows the key. A member whose ``type``
  cannot be an object where the node says ``object`` is dropped (it never holds). Members of
  a union with no ``properties`` beside it are the value's descriptions, each closed on its
  own (``anyOf`` of two models: either model's keys, not both), as they were;
- an open object's openness (its ``additionalProperties``, true or a schema) goes into each
  ``anyOf`` / ``oneOf`` member that can be an object and has none of its own, whether
  ``properties`` stand beside the union or not: the provider closes an object only where it
  has no ``additionalProperties``, and a member closed would forbid the keys its parent
  allows (the provider, which cannot say an open object, then sends no schema or a looser
  one).

A provider that requires every property it closes an object to (OpenAI's strict mode) asks
for ``every_key_required``: there a member lent another member's keys would require them and
refuse what it alone allows, so a union beside ``properties`` where a member would be lent a
key it does not require already raises :class:`Ungatherable` (the strict form cannot say
"these keys only where that member holds").

What cannot be gathered this way (``anyOf`` and ``oneOf`` both beside object keywords, an
object keyword left in an ``allOf`` member, a reference that cannot be resolved) raises
:class:`Ungatherable`: the provider then sends no schema, or a looser one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ANNOTATIONS", "Ungatherable", "gather_objects", "same"]

ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated"})
"""Keywords that say nothing about which values are valid."""

_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "patternProperties")
_UNIONS = ("anyOf", "oneOf")
_NOT_REFERENCE_SIBLINGS = ANNOTATIONS | {"$ref", "$defs", "definitions", "$schema", "$id"}

Resolve = Callable[[str], "Mapping[str, Any] | None"]


def same(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same one, as JSON Schema compares them: ``true`` is not
    ``1`` (Python's ``==`` says it is), ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class Ungatherable(Exception):
    """The node's object keywords cannot be gathered where its value is closed."""


def gather_objects(
    node: Mapping[str, Any], resolve: Resolve, *, every_key_required: bool = False
) -> dict[str, Any]:
    """``node`` (a new dict; sub-schemas shared with it unless rewritten) with each value's
    object keywords where that value is closed (see the module docstring). ``resolve`` maps a
    ``$ref`` to its target, ``None`` when it has none; a reference that leads back to itself
    is the caller's to refuse first. ``every_key_required``: the caller requires every
    property it closes an object to (OpenAI's strict mode), so a union member cannot be lent
    the keys another member lists (they would become required): such a union raises
    :class:`Ungatherable`."""
    return _gather(node, _Gatherer(resolve, every_key_required), ())


class _Gatherer:
    """What one :func:`gather_objects` call reads with."""

    __slots__ = ("every_key_required", "resolve")

    def __init__(self, resolve: Resolve, every_key_required: bool) -> None:
        self.resolve = resolve
        self.every_key_required = every_key_required


def _is_open(extra: Any) -> bool:
    """Whether ``additionalProperties`` with this value (``None``: absent) leaves the object
    open to keys it does not list."""
    return extra is not None and extra is not False


def _opened(member: Any, extra: Any) -> Any:
    """A union member of an open object, open the same way: a member that has no
    ``additionalProperties`` of its own is given the parent's, so that the provider, which
    closes an object only where it has none, does not close it (closed, it would forbid the
    keys its parent allows; the provider sends no schema, or a looser one, instead). A bare
    ``$ref`` is left as it is (its target is the definition's, closed where it stands), and so
    is a member whose ``type`` is never an object."""
    if not isinstance(member, Mapping) or "additionalProperties" in member:
        return member
    kind = member.get("type")
    if kind is not None and kind != "object" and not (isinstance(kind, list) and "object" in kind):
        return member  # never an object: nothing to keep open
    if isinstance(member.get("$ref"), str) and all(k in ANNOTATIONS or k == "$ref" for k in member):
        return member
    return {**member, "additionalProperties": extra}


def _gather(node: Mapping[str, Any], gatherer: _Gatherer, seen: tuple[str, ...]) -> dict[str, Any]:
    resolve = gatherer.resolve
    out = dict(node)
    ref = out.get("$ref")
    if (
        isinstance(ref, str)
        and any(k not in _NOT_REFERENCE_SIBLINGS for k in out)
        and _objectish({"$ref": ref}, resolve)
    ):
        # $ref beside other keywords: both hold, as an allOf member and the node.
        del out["$ref"]
        out["allOf"] = [{"$ref": ref}, *(out.get("allOf") or [])]
    members = out.get("allOf")
    if isinstance(members, list) and any(_objectish(m, resolve) for m in members):
        out = _merge_all_of(out, members, gatherer, seen)
    unions = [key for key in _UNIONS if isinstance(out.get(key), list)]
    if unions and any(k in out for k in ("properties", "required")):
        if len(unions) > 1:
            raise Ungatherable
        out = _distribute(out, unions[0], gatherer, seen)
    elif _is_open(extra := out.get("additionalProperties")):
        for key in unions:
            out[key] = [_opened(m, extra) for m in out[key]]
    return out


def _resolved(member: Any, resolve: Resolve, seen: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """A member, through its reference when it is only one."""
    while isinstance(member, Mapping) and isinstance(ref := member.get("$ref"), str):
        if any(k not in ANNOTATIONS and k != "$ref" for k in member):
            break
        if ref in seen:
            raise Ungatherable  # a reference that leads back to itself
        target = resolve(ref)
        if target is None:
            raise Ungatherable
        member, seen = copy.deepcopy(target), (*seen, ref)
    return member, seen


def _objectish(member: Any, resolve: Resolve, depth: int = 0) -> bool:
    """Whether ``member`` says something about an object's keys."""
    if not isinstance(member, Mapping) or depth > 32:
        return False
    if any(k in member for k in _OBJECT_KEYWORDS):
        return True
    ref = member.get("$ref")
    if isinstance(ref, str):
        target = resolve(ref)
        if target is not None and _objectish(target, resolve, depth + 1):
            return True
    return any(
        _objectish(m, resolve, depth + 1)
        for key in ("allOf", *_UNIONS)
        if isinstance(member.get(key), list)
        for m in member[key]
    )


def _merge_all_of(
    out: dict[str, Any], members: list[Any], gatherer: _Gatherer, seen: tuple[str, ...]
) -> dict[str, Any]:
    resolve = gatherer.resolve
    del out["allOf"]
    left: list[Any] = []
    for raw in members:
        member, path = _resolved(raw, resolve, seen)
        if member is True:
            continue
        if not isinstance(member, Mapping):
            left.append(member)  # false: nothing holds, as before
            continue
        member = _gather(member, gatherer, path)
        rest: dict[str, Any] = {}
        for key, value in member.items():
            if key == "properties" and isinstance(value, Mapping):
                mine = dict(out.get("properties") or {})
                for name, sub in value.items():
                    mine[name] = (
                        sub
                        if name not in mine or same(mine[name], sub)
                        else {"allOf": [mine[name], sub]}
                    )
                out["properties"] = mine
            elif key == "required" and isinstance(value, list):
                out["required"] = list(dict.fromkeys([*(out.get("required") or []), *value]))
            elif key == "additionalProperties" and value is False:
                continue  # the member's own closing: the node closes the gathered keys
            elif key in ANNOTATIONS:
                out.setdefault(key, value)  # the node's own words win; no verdict changes
            elif key in ("$defs", "definitions", "$schema", "$id"):
                continue  # the root's business
            elif key not in out:
                out[key] = value
            elif not same(out[key], value):
                rest[key] = value
        if rest:
            if any(k in rest for k in _OBJECT_KEYWORDS) or any(
                _objectish(m, resolve) for k in ("allOf", *_UNIONS) for m in rest.get(k) or []
            ):
                raise Ungatherable
            left.append(rest)
    if left:
        out["allOf"] = left
    return out


def _distribute(
    out: dict[str, Any], key: str, gatherer: _Gatherer, seen: tuple[str, ...]
) -> dict[str, Any]:
    resolve = gatherer.resolve
    mine: dict[str, Any] = dict(out.pop("properties", None) or {})
    required: list[Any] = list(out.pop("required", None) or [])
    extra = out.get("additionalProperties")
    if extra is False:
        del out["additionalProperties"]  # the node's closing: each member closes the keys
    as_object = out.get("type") == "object"
    if as_object:
        del out["type"]
    members: list[dict[str, Any]] = []
    scalars: list[dict[str, Any]] = []
    for raw in out[key]:
        member, path = _resolved(raw, resolve, seen)
        if member is False:
            continue  # never holds
        if member is True or not isinstance(member, Mapping):
            member = {}
        member = _gather(member, gatherer, path)
        kind = member.get("type")
        if (
            kind is not None
            and kind != "object"
            and not (isinstance(kind, list) and "object" in kind)
        ):
            if not as_object:
                scalars.append(member)  # holds for other values only: no keys to give it
            continue  # where the node says object, it never holds
        if as_object and kind is not None:
            member["type"] = "object"
        if any(_objectish(m, resolve) for k in ("allOf", *_UNIONS) for m in member.get(k) or []):
            raise Ungatherable  # keys described deeper than this rewrite reaches
        members.append(member)
    if not members and not scalars:
        out[key] = [False]  # no member holds
        return out
    theirs = [dict(m.get("properties") or {}) for m in members]
    names = list(dict.fromkeys([*mine, *(n for props in theirs for n in props)]))
    if gatherer.every_key_required and any(
        name not in mine and name not in own and name not in [*required, *(m.get("required") or [])]
        for m, own in zip(members, theirs, strict=True)
        for name in names
    ):
        # A member lent another's key would require it: the documents that member alone
        # allows (without that key) would be refused. A key it requires already is no loss.
        raise Ungatherable
    result: list[Any] = []
    for index, member in enumerate(members):
        own = theirs[index]
        properties: dict[str, Any] = {}
        for name in names:
            if name in mine:
                properties[name] = (
                    {"allOf": [mine[name], own[name]]}
                    if name in own and not same(own[name], mine[name])
                    else mine[name]
                )
            elif name in own:
                properties[name] = own[name]
            else:
                others = [p[name] for i, p in enumerate(theirs) if i != index and name in p]
                properties[name] = others[0] if len(others) == 1 else {"anyOf": others}
        new = dict(member)
        if member.get("additionalProperties") is False:
            del new["additionalProperties"]  # its own closing: the gathered keys close it
        if properties:
            new["properties"] = properties
        together = list(dict.fromkeys([*required, *(member.get("required") or [])]))
        if together:
            new["required"] = together
        if as_object:
            new.setdefault("type", "object")
        if _is_open(extra) and "additionalProperties" not in member:
            new = _opened(new, extra)
        result.append(new)
    out[key] = result + scalars
    return out
