"""The alternatives a value may still satisfy: ``$ref``/``allOf``/``anyOf``/``oneOf`` expanded.

A value valid against a schema satisfies, for at least one *alternative*, every node of that
alternative (a :class:`Conj`): ``allOf`` and ``$ref`` add nodes to every alternative, each
``anyOf``/``oneOf`` branch makes alternatives of its own. The tracker follows all alternatives
of an open value and drops one as soon as a byte proves it can no longer hold; when none is left
the value is invalid. That is exact for ``anyOf``; ``oneOf`` also needs "not two branches",
which only the final value can show, so a :class:`Group` that involves ``oneOf`` is *rechecked*
with jsonschema when its value is final.

A :class:`Conj` gathers its nodes' early checks into O(1) lookups (which kinds may start, which
strings are still possible, how long, how many items) and answers which schemas a member must
follow (:meth:`Conj.key_group`, :meth:`Conj.item_group`), cached.

The caches are filled lazily, as documents reach new keys, and a compiled schema is shared by
every tracker, in any thread: :class:`Dnf` expands under a lock (its cycle detection must not
see another thread's expansion as a cycle); a lookup that races only computes an equal value
twice.
"""

from __future__ import annotations

import threading
from typing import Any

from sdk._errors import SchemaError
from sdk._schema._nodes import KINDS, Node
from sdk._schema._validators import Failure, keyword_of

__all__ = ["MAX_ALTERNATIVES", "Conj", "Dnf", "Forbidden", "Group"]

MAX_ALTERNATIVES = 256
"""Beyond this many alternatives for one value, the tracker keeps only the always-true part of
the schema for early checks, and rechecks the value with jsonschema when it is final (still
exact, just later)."""

_KEY_CACHE_LIMIT = 1024  # keys of a free-form mapping must not grow a cache without bound


def kind_of(value: Any) -> str:
    """The JSON kind of a Python value as ``json.loads`` builds it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def describe_types(types: frozenset[str]) -> str:
    order = ("object", "array", "string", "integer", "number", "boolean", "null")
    return " or ".join(t for t in order if t in types)


class Forbidden:
    """A member that no alternative could accept, whatever its value: why, for the message."""

    __slots__ = ("keyword", "message")

    def __init__(self, keyword: str, message: str) -> None:
        self.keyword = keyword
        self.message = message


class Group:
    """The alternatives for one value: ``conjs`` (empty: no value is valid), the schema nodes
    they came from, and whether the final value must be rechecked against those nodes."""

    __slots__ = ("conjs", "nodes", "recheck")

    def __init__(self, conjs: tuple[Conj, ...], nodes: tuple[Node, ...], recheck: bool) -> None:
        self.conjs = conjs
        self.nodes = nodes
        self.recheck = recheck

    def first_error(self, value: Any) -> Failure | None:
        """jsonschema's first complaint about ``value`` against every node, or ``None``."""
        for node in self.nodes:
            assert node.full is not None
            err = next(node.full.iter_errors(value), None)
            if err is not None:
                return err
        return None


class Conj:
    """One alternative: the nodes a value must all satisfy, with their early checks merged."""

    __slots__ = (
        "_dnf",
        "_items",
        "_keys",
        "integer",
        "kind_fail",
        "max_items",
        "max_length",
        "nodes",
        "str_keyword",
        "str_members",
        "validators",
        "watch",
    )

    def __init__(self, nodes: tuple[Node, ...], dnf: Dnf) -> None:
        self.nodes = nodes
        self._dnf = dnf
        self._keys: dict[str, Group | Forbidden] = {}
        self._items: dict[int, Group | Forbidden] = {}
        # Kinds that cannot start here, each with the keyword that forbids it and why.
        self.kind_fail: dict[str, tuple[str, str]] = {}
        self.integer = False  # a number must be integral ("integer" without "number")
        self.str_members: tuple[str, ...] | None = None  # strings still possible, if restricted
        self.str_keyword = "enum"
        self.max_length: int | None = None
        self.max_items: int | None = None
        validators = []
        for node in nodes:
            if node.types is not None:
                allowed = {t for t in node.types if t in KINDS}
                if "integer" in node.types:
                    allowed.add("number")
                    self.integer = self.integer or "number" not in node.types
                for kind in KINDS:
                    if kind not in allowed:
                        self.kind_fail.setdefault(
                            kind, ("type", f"expected {describe_types(node.types)}")
                        )
            for keyword, members in node.choices:
                kinds = {kind_of(m) for m in members}
                shown = repr(members[0]) if keyword == "const" else f"one of {list(members)!r}"
                for kind in KINDS:
                    if kind not in kinds:
                        self.kind_fail.setdefault(kind, (keyword, f"expected {shown}"))
                strings = tuple(m for m in members if isinstance(m, str))
                if self.str_members is None:
                    self.str_members = strings
                    self.str_keyword = keyword
                else:
                    self.str_members = tuple(m for m in self.str_members if m in strings)
            if node.max_length is not None:
                self.max_length = _min(self.max_length, node.max_length)
            if node.max_items is not None:
                self.max_items = _min(self.max_items, node.max_items)
            if node.local is not None:
                validators.append(node.local)
            if node.whole is not None:
                validators.append(node.whole)
        self.validators = tuple(validators)
        self.watch = self.str_members is not None or self.max_length is not None
        """A string here needs watching while it streams."""

    def check_final(self, value: Any) -> tuple[str, str, tuple[str | int, ...]] | None:
        """Check what only the final value shows: ``(keyword, message, relative path)`` of the
        first failure, or ``None``. Members were checked in their own right already."""
        if self.integer and type(value) is float and not value.is_integer():
            return ("type", f"{value!r} is not an integer", ())
        for validator in self.validators:
            err = next(validator.iter_errors(value), None)
            if err is not None:
                return (keyword_of(err), err.message, tuple(err.absolute_path))
        return None

    def key_group(self, key: str) -> Group | Forbidden:
        """What the value under ``key`` must satisfy, or why no value may come under it."""
        found = self._keys.get(key)
        if found is None:
            found = self._key_group(key)
            if len(self._keys) < _KEY_CACHE_LIMIT:
                self._keys[key] = found
        return found

    def _key_group(self, key: str) -> Group | Forbidden:
        children: list[Node] = []
        for node in self.nodes:
            names = node.property_names
            if names is not None:
                assert names.full is not None
                err = next(names.full.iter_errors(key), None)
                if err is not None:
                    return Forbidden("propertyNames", f"key {key!r} is not allowed: {err.message}")
            matched = False
            child = node.props.get(key)
            if child is not None:
                children.append(child)
                matched = True
            for search, pattern_node in node.pattern_props:
                if search(key):
                    children.append(pattern_node)
                    matched = True
            if not matched and node.additional is not None:
                if node.additional.false:
                    known = ", ".join(repr(k) for k in node.props) or "none"
                    return Forbidden(
                        "additionalProperties",
                        f"key {key!r} is not allowed here (allowed keys: {known})",
                    )
                children.append(node.additional)
        group = self._dnf.group(tuple(children))
        if not group.conjs:
            return Forbidden("false", f"no value is allowed under key {key!r}")
        return group

    def item_group(self, index: int) -> Group | Forbidden:
        """What the element at ``index`` must satisfy, or why no element may come there."""
        # Past every node's prefixItems all indices are alike: cache under one key.
        longest = max((len(n.prefix) for n in self.nodes), default=0)
        slot = min(index, longest)
        found = self._items.get(slot)
        if found is None:
            found = self._item_group(slot)
            self._items[slot] = found
        return found

    def _item_group(self, index: int) -> Group | Forbidden:
        children: list[Node] = []
        for node in self.nodes:
            if index < len(node.prefix):
                children.append(node.prefix[index])
            elif node.items is not None:
                if node.items.false:
                    return Forbidden(
                        "items", f"expected at most {len(node.prefix)} items (items is false)"
                    )
                children.append(node.items)
        group = self._dnf.group(tuple(children))
        if not group.conjs:
            return Forbidden("false", f"no element is allowed at index {index}")
        return group


class Dnf:
    """Expands nodes into alternatives, memoised; one per compiled schema."""

    def __init__(self) -> None:
        self._expanded: dict[Node, tuple[tuple[tuple[Node, ...], ...], bool]] = {}
        self._conjs: dict[tuple[Node, ...], Conj] = {}
        self._groups: dict[tuple[Node, ...], Group] = {}
        self._visiting: set[Node] = set()
        self._lock = threading.RLock()

    def group(self, nodes: tuple[Node, ...]) -> Group:
        """The alternatives for a value that must satisfy every one of ``nodes``."""
        found = self._groups.get(nodes)
        if found is not None:
            return found
        with self._lock:
            found = self._groups.get(nodes)
            if found is not None:
                return found
            return self._group(nodes)

    def _group(self, nodes: tuple[Node, ...]) -> Group:
        alts: tuple[tuple[Node, ...], ...] = ((),)
        recheck = False
        for node in nodes:
            expanded, node_recheck = self.expand(node)
            recheck = recheck or node_recheck
            alts = _product(alts, expanded)
            if len(alts) > MAX_ALTERNATIVES:
                alts, recheck = _fallback(nodes), True
                break
        group = Group(tuple(self._conj(a) for a in alts), nodes, recheck)
        self._groups[nodes] = group
        return group

    def expand(self, node: Node) -> tuple[tuple[tuple[Node, ...], ...], bool]:
        """A node's alternatives (tuples of nodes whose own keywords must all hold) and whether
        the final value needs a recheck (``oneOf``, or too many alternatives to follow)."""
        found = self._expanded.get(node)
        if found is not None:
            return found
        with self._lock:
            return self._expand(node)

    def _expand(self, node: Node) -> tuple[tuple[tuple[Node, ...], ...], bool]:
        found = self._expanded.get(node)
        if found is not None:
            return found
        if node.false:
            return ((), False)
        if node in self._visiting:
            raise SchemaError(
                f"the schema at {node.where or '/'} refers to itself through $ref/allOf/anyOf/"
                "oneOf without ever descending into a property or item",
                keyword="$ref",
                pointer=node.where,
            )
        self._visiting.add(node)
        try:
            parts: list[tuple[tuple[Node, ...], ...]] = []
            recheck = False
            if node.constrains:
                parts.append(((node,),))
            for sub in (node.ref, *node.all_of):
                if sub is not None:
                    e, r = self.expand(sub)
                    parts.append(e)
                    recheck = recheck or r
            for branches, is_one_of in ((node.any_of, False), (node.one_of, True)):
                if branches:
                    union: list[tuple[Node, ...]] = []
                    for sub in branches:
                        e, r = self.expand(sub)
                        union.extend(a for a in e if a not in union)
                        recheck = recheck or r
                    parts.append(tuple(union))
                    recheck = recheck or is_one_of
            alts: tuple[tuple[Node, ...], ...] = ((),)
            for part in parts:
                alts = _product(alts, part)
                if len(alts) > MAX_ALTERNATIVES:
                    alts, recheck = _fallback((node,)), True
                    break
        finally:
            self._visiting.discard(node)
        result = (alts, recheck)
        self._expanded[node] = result
        return result

    def _conj(self, nodes: tuple[Node, ...]) -> Conj:
        found = self._conjs.get(nodes)
        if found is None:
            found = self._conjs[nodes] = Conj(nodes, self)
        return found


def _product(
    left: tuple[tuple[Node, ...], ...], right: tuple[tuple[Node, ...], ...]
) -> tuple[tuple[Node, ...], ...]:
    out: list[tuple[Node, ...]] = []
    for a in left:
        for b in right:
            merged = a + tuple(n for n in b if n not in a)
            if merged not in out:
                out.append(merged)
    return tuple(out)


def _fallback(nodes: tuple[Node, ...]) -> tuple[tuple[Node, ...], ...]:
    """One alternative holding only what every branch needs: the nodes' own keywords."""
    return (tuple(n for n in nodes if n.constrains),)


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)
