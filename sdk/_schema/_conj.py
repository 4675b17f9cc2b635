"""Conjunctions: the nodes one value must all satisfy, with their checks merged.

A value checked against a node must satisfy the node's own keywords and, through ``$ref`` and
``allOf``, those of other nodes on the *same* value: :class:`Conj` flattens them into one tuple
and merges their checks (which kinds may start, which strings are still possible, the tightest
bounds). The other applicators stay structure: each ``anyOf``/``oneOf`` branch, ``not``,
``if``/``then``/``else`` and ``dependentSchemas`` is a conjunction of its own, checked on the
same value side by side (:mod:`sdk._schema._checker` combines their outcomes), and members get
the conjunction of every schema that applies to them (:meth:`Conj.key_child`,
:meth:`Conj.item_child`, cached).

Conjunctions are built lazily, as documents reach new keys, and a compiled schema is shared by
every tracker in any thread: :class:`Conjs` builds under a lock (its cycle detection must not
see another thread's build as a cycle); a lookup that races only computes an equal value twice.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

from sdk._errors import SchemaError
from sdk._schema._formats import FormatCheck
from sdk._schema._nodes import KINDS, Node, Unevaluated
from sdk._schema._values import describe_types, kind_of, scalar_key
from sdk._schema._vocabulary import ANNOTATION, CORE, VOCABULARIES

__all__ = ["Choice", "Conj", "Conjs", "Forbidden"]

_KEY_CACHE_LIMIT = 1024  # keys of a free-form mapping must not grow a cache without bound


class Forbidden:
    """A member that no value could fill: why, for the message."""

    __slots__ = ("keyword", "message")

    def __init__(self, keyword: str, message: str) -> None:
        self.keyword = keyword
        self.message = message


class Choice:
    """``enum`` or ``const``: the members, with keys for an O(1) check of a scalar value."""

    __slots__ = ("containers", "keyword", "members", "scalars", "shown")

    def __init__(self, keyword: str, members: tuple[Any, ...]) -> None:
        self.keyword = keyword
        self.members = members
        self.scalars = frozenset(scalar_key(m) for m in members if not isinstance(m, (list, dict)))
        self.containers = tuple(m for m in members if isinstance(m, (list, dict)))
        self.shown = repr(members[0]) if keyword == "const" else f"one of {list(members)!r}"


class Conj:
    """One conjunction: the nodes a value must all satisfy, checks merged. Immutable once built
    (its member caches only grow); shared by every tracker of the schema."""

    __slots__ = (
        "_conjs",
        "_contains_conjs",
        "_items",
        "_keys",
        "_names",
        "_names_conj",
        "any_of",
        "choices",
        "closed",
        "contains",
        "dep_required",
        "dep_schemas",
        "draft4_integer",
        "formats",
        "ifs",
        "impossible",
        "integer",
        "kind_fail",
        "max_items",
        "max_length",
        "max_props",
        "min_items",
        "min_length",
        "min_props",
        "models",
        "nodes",
        "nots",
        "numbers",
        "one_of",
        "patterns",
        "required",
        "str_keyword",
        "str_members",
        "str_shown",
        "trivial",
        "unevaluated",
        "unique",
        "watch",
    )

    def __init__(self, nodes: tuple[Node, ...], conjs: Conjs) -> None:
        self.nodes = nodes
        self._conjs = conjs
        self._keys: dict[str, Conj | Forbidden | None] = {}
        self._items: dict[int, Conj | Forbidden | None] = {}
        self.impossible = any(n.false for n in nodes)
        # Kinds that cannot start here, each with the keyword that forbids it and why.
        self.kind_fail: dict[str, tuple[str, str]] = {}
        self.integer = False  # a number must be integral ("integer" without "number")
        self.draft4_integer = False  # ... and written without a fraction or exponent (draft-04)
        self.choices: tuple[Choice, ...] = ()
        self.str_members: tuple[str, ...] | None = None  # strings still possible, if restricted
        self.str_keyword = "enum"
        self.str_shown = ""
        self.max_length: int | None = None
        self.min_length: int | None = None
        self.patterns: tuple[tuple[Any, str], ...] = ()
        self.formats: tuple[FormatCheck, ...] = ()
        self.numbers: tuple[tuple[str, int | float], ...] = ()
        self.required: tuple[str, ...] = ()
        self.min_props: int | None = None
        self.max_props: int | None = None
        self.dep_required: tuple[tuple[str, tuple[str, ...]], ...] = ()
        self.closed: tuple[tuple[list[str], tuple[Any, ...]], ...] = ()
        self.max_items: int | None = None
        self.min_items: int | None = None
        self.unique = False
        self.models: tuple[Any, ...] = ()
        self.unevaluated: tuple[Unevaluated, ...] = ()
        """Each node's ``unevaluatedProperties``/``unevaluatedItems``, judged at the close."""
        if self.impossible:
            for kind in KINDS:
                self.kind_fail[kind] = ("false", "no value is allowed here")
        for node in nodes:
            self._merge(node)
        # Same-value sub-checks (built now: a cycle among them is a schema error).
        self.any_of = tuple(tuple(conjs.of_node(b) for b in n.any_of) for n in nodes if n.any_of)
        self.one_of = tuple(tuple(conjs.of_node(b) for b in n.one_of) for n in nodes if n.one_of)
        self.nots = tuple(conjs.of_node(n.not_) for n in nodes if n.not_ is not None)
        self.ifs = tuple(
            (
                conjs.of_node(n.if_),
                None if n.then is None else conjs.of_node(n.then),
                None if n.else_ is None else conjs.of_node(n.else_),
            )
            for n in nodes
            if n.if_ is not None
        )
        self.dep_schemas = tuple(
            (key, conjs.of_node(sub)) for n in nodes for key, sub in n.dep_schemas
        )
        # Schemas for other values (a key, an element): built when first needed, so that a
        # schema may recur through them (``contains: {"$ref": "#"}`` is a tree, not a cycle).
        self._names = tuple(n.property_names for n in nodes if n.property_names is not None)
        self._names_conj: Conj | None = None
        self.contains: tuple[tuple[Node, int, int | None], ...] = tuple(
            (n.contains, n.min_contains, n.max_contains) for n in nodes if n.contains is not None
        )
        """Per ``contains``: the schema, ``minContains`` and ``maxContains``."""
        self._contains_conjs: tuple[Conj, ...] | None = None
        formats: tuple[FormatCheck, ...] = self.formats  # (mypy narrowed the attribute to ())
        streaming = any(f.streams for f in formats)
        self.watch = bool(
            self.str_members is not None
            or self.max_length is not None
            or self.patterns
            or streaming
        )
        """A string here needs work while it streams."""
        self.trivial = not (
            self.impossible
            or self.kind_fail
            or self.integer
            or self.choices
            or self.watch
            or self.min_length is not None
            or self.formats
            or self.numbers
            or self.required
            or self.min_props is not None
            or self.max_props is not None
            or self.dep_required
            or self.closed
            or self.max_items is not None
            or self.min_items is not None
            or self.unique
            or self.models
            or self.unevaluated
            or self.any_of
            or self.one_of
            or self.nots
            or self.ifs
            or self.dep_schemas
            or self._names
            or self.contains
            or any(n.props or n.pattern_props or n.additional or n.prefix or n.items for n in nodes)
        )
        """Nothing to check: a value here needs no state at all."""

    def _merge(self, node: Node) -> None:
        if node.types is not None:
            allowed = {t for t in node.types if t in KINDS}
            if "integer" in node.types:
                allowed.add("number")
                self.integer = self.integer or "number" not in node.types
                self.draft4_integer = self.draft4_integer or node.draft4_integer
            for kind in KINDS:
                if kind not in allowed:
                    self.kind_fail.setdefault(
                        kind, ("type", f"expected {describe_types(node.types)}")
                    )
        if node.enum is not None:
            choice = Choice(*node.enum)
            self.choices += (choice,)
            kinds = {kind_of(m) for m in choice.members}
            for kind in KINDS:
                if kind not in kinds:
                    self.kind_fail.setdefault(kind, (choice.keyword, f"expected {choice.shown}"))
            strings = tuple(m for m in choice.members if isinstance(m, str))
            if self.str_members is None:
                self.str_members = strings
                self.str_keyword = choice.keyword
                self.str_shown = choice.shown
            else:
                self.str_members = tuple(m for m in self.str_members if m in strings)
        self.max_length = _least(self.max_length, node.max_length)
        self.min_length = _most(self.min_length, node.min_length)
        self.patterns += node.patterns
        if node.format is not None:
            self.formats += (node.format,)
        self.numbers += node.numbers
        self.required += tuple(k for k in node.required if k not in self.required)
        self.min_props = _most(self.min_props, node.min_props)
        self.max_props = _least(self.max_props, node.max_props)
        self.dep_required += node.dep_required
        if node.additional is not None and node.additional.false:
            self.closed += ((sorted(node.props), tuple(p for p, _ in node.pattern_props)),)
        self.max_items = _least(self.max_items, node.max_items)
        self.min_items = _most(self.min_items, node.min_items)
        self.unique = self.unique or node.unique
        if node.model is not None:
            self.models += (node.model,)
        if node.unevaluated is not None:
            self.unevaluated += (node.unevaluated,)

    # ------------------------------------------------------------------ members

    @property
    def has_names(self) -> bool:
        """Whether keys here must satisfy ``propertyNames``."""
        return bool(self._names)

    def names(self) -> Conj:
        """What a key must satisfy (``propertyNames``; only when :attr:`has_names`)."""
        found = self._names_conj
        if found is None:
            found = self._names_conj = self._conjs.of_nodes(self._names)
        return found

    def contains_conjs(self) -> tuple[Conj, ...]:
        """The conjunction of each ``contains`` schema, in the order of :attr:`contains`."""
        found = self._contains_conjs
        if found is None:
            found = self._contains_conjs = tuple(
                self._conjs.of_node(n) for n, _, _ in self.contains
            )
        return found

    def key_prefix_ok(self, prefix: str) -> bool:
        """False when no key that starts with ``prefix`` is allowed by an
        ``additionalProperties: false`` here (neither a property nor a pattern could match)."""
        for names, patterns in self.closed:
            i = bisect_left(names, prefix)
            if i < len(names) and names[i].startswith(prefix):
                continue
            if any(p.could_search(prefix) for p in patterns):
                continue
            return False
        return True

    def key_child(self, key: str) -> Conj | Forbidden | None:
        """What the value under ``key`` must satisfy (``None``: anything), or why no value may
        come under it."""
        if key in self._keys:
            return self._keys[key]
        found = self._key_child(key)
        if len(self._keys) < _KEY_CACHE_LIMIT:
            self._keys[key] = found
        return found

    def _key_child(self, key: str) -> Conj | Forbidden | None:
        children: list[Node] = []
        for node in self.nodes:
            matched = False
            child = node.props.get(key)
            if child is not None:
                children.append(child)
                matched = True
            for pattern, pattern_node in node.pattern_props:
                if pattern.search(key):
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
        conj = self._conjs.of_nodes(tuple(children))
        if conj.impossible:
            return Forbidden("false", f"no value is allowed under key {key!r}")
        return None if conj.trivial else conj

    def item_child(self, index: int) -> Conj | Forbidden | None:
        """What the element at ``index`` must satisfy (``None``: anything), or why no element
        may come there."""
        # Past every node's prefixItems all indices are alike: cache under one key.
        longest = max((len(n.prefix) for n in self.nodes), default=0)
        slot = min(index, longest)
        if slot in self._items:
            return self._items[slot]
        found = self._items[slot] = self._item_child(slot)
        return found

    def _item_child(self, index: int) -> Conj | Forbidden | None:
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
        conj = self._conjs.of_nodes(tuple(children))
        if conj.impossible:
            return Forbidden("false", f"no element is allowed at index {index}")
        return None if conj.trivial else conj


class Conjs:
    """Builds and memoises the conjunctions of one compiled schema."""

    def __init__(self) -> None:
        self._flat: dict[Node, tuple[Node, ...]] = {}
        self._conjs: dict[tuple[Node, ...], Conj] = {}
        self._building: set[tuple[Node, ...]] = set()
        self._flattening: list[Node] = []  # the nodes being flattened, outermost first
        self._cut: set[Node] = set()  # nodes being flattened that a cycle came back to
        self._lock = threading.RLock()

    def of_node(self, node: Node) -> Conj:
        """The conjunction a value checked against ``node`` must satisfy."""
        return self.of_nodes((node,))

    def of_nodes(self, nodes: tuple[Node, ...]) -> Conj:
        """The conjunction of ``nodes`` (empty: anything goes)."""
        found = self._conjs.get(nodes)
        if found is not None:
            return found
        with self._lock:
            found = self._conjs.get(nodes)
            if found is not None:
                return found
            flat: list[Node] = []
            for node in nodes:
                for n in self._flatten(node):
                    if n not in flat:
                        flat.append(n)
            key = tuple(flat)
            found = self._conjs.get(key)
            if found is None:
                if key in self._building:
                    where = nodes[0].where if nodes else ""
                    raise SchemaError(
                        f"the schema at {where or '/'} refers to itself through anyOf/oneOf/not/"
                        "if without ever descending into a property or item",
                        keyword="$ref",
                        pointer=where,
                    )
                self._building.add(key)
                try:
                    found = Conj(key, self)
                finally:
                    self._building.discard(key)
                self._conjs[key] = found
            self._conjs[nodes] = found
            return found

    def _flatten(self, node: Node) -> tuple[Node, ...]:
        """``node`` and every node it reaches through ``$ref``/``allOf`` on the same value."""
        found = self._flat.get(node)
        if found is not None:
            return found
        if node in self._flattening:
            cycle = self._flattening[self._flattening.index(node) :]
            if all(_alias(n) for n in cycle):  # $ref to $ref ... back to the first: no schema
                raise SchemaError(
                    f"the schema at {node.where or '/'} refers to itself through $ref without "
                    "ever descending into a property or item",
                    keyword="$ref",
                    pointer=node.where,
                )
            # A cycle through allOf on the same value ({"allOf": [{"$ref": <itself>}, Y]}):
            # the node is already in the conjunction being built, so it adds nothing (the node
            # is its own keywords and Y's). jsonschema would recurse without end there, so no
            # verdict of its can differ; such a schema is read as it plainly means.
            self._cut.add(node)
            return ()
        self._flattening.append(node)
        try:
            node.ready()  # compiled the first time a value meets it
            out: list[Node] = [node]
            for sub in (node.ref, *node.all_of):
                if sub is not None:
                    for n in self._flatten(sub):
                        if n not in out:
                            out.append(n)
        finally:
            self._flattening.pop()
            self._cut.discard(node)
        result = tuple(out)
        if not self._cut:  # not cut short at a node still being flattened: complete
            self._flat[node] = result
        return result


def _alias(node: Node) -> bool:
    """Whether ``node`` is a bare reference: nothing but ``$ref`` and keywords that check
    nothing."""
    raw = node.raw
    return isinstance(raw, Mapping) and all(
        key == "$ref" or _ROLES.get(key) in (ANNOTATION, CORE) for key in raw
    )


_ROLES = VOCABULARIES["2020-12"].keywords


def _least(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _most(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
