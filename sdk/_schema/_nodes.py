"""A JSON Schema (Draft 2020-12) compiled into :class:`Node` objects, one per sub-schema.

A node sorts its schema's keywords by *when* they can be checked:

* early ones the tracker checks itself while the value streams — ``type`` (and the kinds that
  ``enum``/``const`` allow) at the first character, ``enum``/``const``/``maxLength`` on a string
  as it grows, ``maxItems`` and ``items: false`` when a further element begins,
  ``additionalProperties: false`` and ``propertyNames`` when a key closes;
* structural ones that only say which schema a *child* must follow (``properties``,
  ``patternProperties``, ``additionalProperties``, ``items``, ``prefixItems``): the child is
  checked in its own right, so its container never re-validates it;
* local ones checked on the final value alone, with jsonschema on a copy of the schema that
  holds nothing else (so a container's check costs its own keys/length, not its subtree);
* whole-value ones (``not``, ``contains``, ``if``/``then``/``else``, ``dependentSchemas``)
  checked by jsonschema on the final value and its subtree;
* applicators (``$ref``, ``allOf``, ``anyOf``, ``oneOf``), which :mod:`sdk._schema._dnf` expands
  into the alternatives a value may still satisfy.

Anything else that is not an annotation raises :class:`~sdk.SchemaError` at compile time, so no
keyword is ever silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from sdk._errors import SchemaError
from sdk._schema._validators import Validator

__all__ = ["KINDS", "Node", "NodeCompiler"]

KINDS = ("object", "array", "string", "number", "boolean", "null")
"""The kinds of JSON value, named as JSON Schema's types (and as ``partial.Kind`` values)."""

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        # OpenAPI's discriminator, which pydantic emits next to oneOf: a hint, not a rule.
        "discriminator",
    }
)
LOCAL = frozenset(
    {
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
    }
)
STRUCTURE = frozenset(
    {
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "items",
        "prefixItems",
    }
)
APPLICATORS = frozenset({"$ref", "allOf", "anyOf", "oneOf"})
WHOLE = frozenset(
    {"not", "contains", "minContains", "maxContains", "if", "then", "else", "dependentSchemas"}
)
DEFS = frozenset({"$defs", "definitions"})
ROOT_ONLY = frozenset({"$schema", "$id"})
KNOWN = ANNOTATIONS | LOCAL | STRUCTURE | APPLICATORS | WHOLE | DEFS | {"type"}

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class Node:
    """One compiled sub-schema. Read-only once compiled; shared by every tracker of the schema."""

    __slots__ = (
        "additional",
        "all_of",
        "any_of",
        "choices",
        "constrains",
        "false",
        "full",
        "items",
        "local",
        "max_items",
        "max_length",
        "one_of",
        "pattern_props",
        "prefix",
        "property_names",
        "props",
        "raw",
        "ref",
        "types",
        "where",
        "whole",
    )

    def __init__(self, where: str, raw: Any) -> None:
        self.where = where
        """JSON Pointer of this sub-schema inside the root schema (``""`` for the root)."""
        self.raw = raw
        """The sub-schema as given (a dict, or ``True``/``False``)."""
        self.false = raw is False
        """The schema ``false``: no value is valid."""
        self.types: frozenset[str] | None = None
        """``type`` as a set of names (``None``: any type)."""
        self.choices: tuple[tuple[str, tuple[Any, ...]], ...] = ()
        """``("enum", members)`` and/or ``("const", (value,))``."""
        self.max_length: int | None = None
        self.max_items: int | None = None
        self.props: dict[str, Node] = {}
        self.pattern_props: tuple[tuple[Callable[[str], Any], Node], ...] = ()
        self.additional: Node | None = None
        """``additionalProperties`` (``None``: any value)."""
        self.property_names: Node | None = None
        self.prefix: tuple[Node, ...] = ()
        self.items: Node | None = None
        """``items``, for the indices after ``prefixItems`` (``None``: any value)."""
        self.ref: Node | None = None
        self.all_of: tuple[Node, ...] = ()
        self.any_of: tuple[Node, ...] = ()
        self.one_of: tuple[Node, ...] = ()
        self.local: Validator | None = None
        """jsonschema on the local keywords alone (``None``: nothing to check there)."""
        self.whole: Validator | None = None
        """jsonschema on the whole-value keywords alone (``None``: there are none)."""
        self.full: Validator | None = None
        """jsonschema on the whole sub-schema (``$ref``s resolve against the root)."""
        self.constrains = False
        """True when the node says anything beyond its applicators."""

    def __repr__(self) -> str:
        return f"Node({self.where or '/'!r})"


class NodeCompiler:
    """Compiles the sub-schemas of one root schema; each dict is compiled once (cycles through
    ``$ref`` are fine: a node exists before its children are compiled)."""

    def __init__(self, root: Any, validator: Validator) -> None:
        self._root = root
        self._validator = validator
        self._nodes: dict[int, Node] = {}
        self._pending: list[tuple[Node, Mapping[str, Any]]] = []

    def compile_root(self) -> Node:
        """Compile the root and everything reachable from it (``$defs`` included, so an
        unsupported keyword anywhere in the schema is reported now)."""
        root = self._node(self._root, "")
        if isinstance(self._root, Mapping):
            for defs_key in DEFS:
                defs = self._root.get(defs_key)
                if isinstance(defs, Mapping):
                    for name, sub in defs.items():
                        self._node(sub, f"/{defs_key}/{_escape(name)}")
        while self._pending:
            node, raw = self._pending.pop()
            self._fill(node, raw)
        return root

    # ------------------------------------------------------------------ internals

    def _node(self, raw: Any, where: str) -> Node:
        found = self._nodes.get(id(raw))
        if found is not None:
            return found
        if not isinstance(raw, (bool, Mapping)):
            raise SchemaError(
                f"a schema must be an object or a boolean, got {type(raw).__name__} at "
                f"{where or '/'}",
                pointer=where,
            )
        node = Node(where, raw)
        self._nodes[id(raw)] = node
        node.full = self._validator.evolve(schema=raw)
        if isinstance(raw, Mapping):
            self._pending.append((node, raw))
        return node

    def _fill(self, node: Node, raw: Mapping[str, Any]) -> None:
        where = node.where
        for key in raw:
            if key in KNOWN or key.startswith("x-"):
                continue
            if key in ROOT_ONLY and where == "":
                if key == "$schema" and raw[key].rstrip("#") != DRAFT_2020_12:
                    raise SchemaError(
                        f"only JSON Schema Draft 2020-12 is supported, not {raw[key]!r}",
                        keyword=key,
                        pointer=where,
                    )
                continue
            raise SchemaError(
                f"unsupported JSON Schema keyword {key!r} at {where or '/'}: the tracker cannot "
                "check it, and ignoring it could let invalid output through",
                keyword=key,
                pointer=where,
            )
        kw = raw.get
        if "type" in raw:
            t = raw["type"]
            node.types = frozenset([t] if isinstance(t, str) else t)
        if "enum" in raw:
            node.choices += (("enum", tuple(raw["enum"])),)
        if "const" in raw:
            node.choices += (("const", (raw["const"],)),)
        node.max_length = kw("maxLength")
        node.max_items = kw("maxItems")

        props = kw("properties") or {}
        node.props = {
            k: self._node(v, f"{where}/properties/{_escape(k)}") for k, v in props.items()
        }
        node.pattern_props = tuple(
            (re.compile(p).search, self._node(v, f"{where}/patternProperties/{_escape(p)}"))
            for p, v in (kw("patternProperties") or {}).items()
        )
        if "additionalProperties" in raw:
            node.additional = self._child(
                raw["additionalProperties"], f"{where}/additionalProperties"
            )
        if "propertyNames" in raw:
            node.property_names = self._child(raw["propertyNames"], f"{where}/propertyNames")
        node.prefix = tuple(
            self._node(v, f"{where}/prefixItems/{i}") for i, v in enumerate(kw("prefixItems") or ())
        )
        if "items" in raw:
            node.items = self._child(raw["items"], f"{where}/items")

        if "$ref" in raw:
            node.ref = self._resolve(raw["$ref"], where)
        node.all_of = self._list(raw, "allOf", where)
        node.any_of = self._list(raw, "anyOf", where)
        node.one_of = self._list(raw, "oneOf", where)

        local = {k: raw[k] for k in LOCAL if k in raw}
        if local:
            node.local = self._validator.evolve(schema=local)
        whole = {k: raw[k] for k in WHOLE if k in raw}
        if whole:
            # Compile the sub-schemas too, only so that their keywords are vetted.
            for k in ("not", "contains", "if", "then", "else"):
                if k in whole:
                    self._node(whole[k], f"{where}/{k}")
            for k, v in (whole.get("dependentSchemas") or {}).items():
                self._node(v, f"{where}/dependentSchemas/{_escape(k)}")
            node.whole = self._validator.evolve(schema=whole)
        node.constrains = bool(
            node.types is not None
            or node.choices
            or local
            or whole
            or any(k in raw for k in STRUCTURE)
        )

    def _child(self, raw: Any, where: str) -> Node | None:
        """A child schema; ``None`` stands for ``true`` (anything goes), the common case."""
        if raw is True or raw == {}:
            return None
        return self._node(raw, where)

    def _list(self, raw: Mapping[str, Any], key: str, where: str) -> tuple[Node, ...]:
        return tuple(self._node(v, f"{where}/{key}/{i}") for i, v in enumerate(raw.get(key, ())))

    def _resolve(self, ref: str, where: str) -> Node:
        if not ref.startswith("#") or (len(ref) > 1 and not ref.startswith("#/")):
            raise SchemaError(
                f"only local JSON Pointer $refs ('#/$defs/...') are supported, not {ref!r} "
                f"(at {where or '/'})",
                keyword="$ref",
                pointer=where,
            )
        target: Any = self._root
        pointer = unquote(ref[1:])
        for part in pointer.split("/")[1:]:
            token = part.replace("~1", "/").replace("~0", "~")
            try:
                if isinstance(target, Mapping):
                    target = target[token]
                elif isinstance(target, list):
                    target = target[int(token)]
                else:
                    raise KeyError(token)
            except (KeyError, IndexError, ValueError):
                raise SchemaError(
                    f"$ref {ref!r} (at {where or '/'}) points at nothing",
                    keyword="$ref",
                    pointer=where,
                ) from None
        return self._node(target, pointer)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
