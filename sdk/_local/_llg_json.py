"""A JSON Schema's structure as llguidance Lark under the ``bounded`` layout, exactly as the
xgrammar path lays it out: whitespace after ``{``, ``[``, ``,`` and ``:`` and before ``}`` and
``]``, none before ``,`` or ``:``, each gap ``_layout.BOUNDED_SPACE``.

llguidance's own JSON compiler puts its whitespace pattern between any two JSON tokens, a colon
and a comma included; so, for the schemas whose structure this module knows, it writes the
objects, arrays, ``anyOf`` and local ``$ref`` (recursion included) itself, each gap where xgrammar
puts it, and leaves every scalar value (strings with their patterns, formats and lengths,
numbers with their bounds, enums, consts) to llguidance's compiler as ``%json {...}``: what a
value may be is llguidance's, where whitespace goes is the layout's. A schema it does not know
(``allOf``, ``patternProperties``, ``prefixItems``, min/maxProperties, an additionalProperties
schema, an untyped object...) gives None, and the caller compiles the schema natively.

The schema comes in already strict (``_llg_specs.strict_schema``): objects closed, types
inferred.
"""

from __future__ import annotations

import json
from typing import Any

from sdk._grammars import quoted

__all__ = ["GAP_RULE", "BoundedJson"]

GAP_RULE = "GAP: / |\\n\\n?[ \\t]{0,20}/"
"""One whitespace gap of the bounded layout (optional wherever it is used: ``GAP?``)."""

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"}
    | {"writeOnly", "$schema", "$anchor", "format"}
)
# Editors' keywords (VS Code's, SchemaStore's), which assert nothing either.
_EDITOR_ANNOTATIONS = frozenset(
    {"markdownDescription", "fileMatch", "deprecationMessage", "errorMessage"}
    | {"markdownEnumDescriptions", "enumDescriptions", "defaultSnippets", "patternErrorMessage"}
)
_SCALARS = frozenset({"string", "number", "integer", "boolean", "null"})
_LEAF_KEYS = frozenset(
    {"type", "enum", "const", "pattern", "minLength", "maxLength", "format", "minimum"}
    | {"maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties"})
# uniqueItems: llguidance cannot enforce it (nor can xgrammar); fieldstream's tracker checks it.
_ARRAY_KEYS = frozenset({"type", "items", "minItems", "maxItems", "uniqueItems"})
_REF_ROOTS = ("#/$defs/", "#/definitions/")


class Unknown(Exception):
    """The schema has a structure this module does not write (the caller falls back)."""


def _is_scalar_value(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


class BoundedJson:
    """Translate one schema (and what its ``$ref``s reach) into Lark rules named
    ``{prefix}_...``; ``leaf`` maps a scalar schema to what ``%json`` reads (with its
    ``x-guidance`` options)."""

    def __init__(self, root: Any, prefix: str, leaf: Any) -> None:
        self.root = root
        self.prefix = prefix
        self.leaf = leaf
        self.rules: list[str] = []
        self._refs: dict[str, str] = {}
        self._count = 0

    def _fresh(self) -> str:
        self._count += 1
        return f"{self.prefix}_{self._count}"

    def _rule(self, body: str) -> str:
        name = self._fresh()
        self.rules.append(f"{name}: {body}")
        return name

    def translate(self) -> str | None:
        """The Lark expression of the root value (its rules in :attr:`rules`), or None."""
        try:
            return self._value(self.root)
        except Unknown:
            return None

    def _value(self, node: Any) -> str:
        if node is True or node == {}:
            return self._json({}, scalar=False)
        if not isinstance(node, dict):
            raise Unknown("a false schema")
        keys = self._asserting(node) - {"$defs", "definitions"}
        if not keys:
            return self._json(node, scalar=False)  # any JSON value
        if "$ref" in keys:
            if keys != {"$ref"}:
                raise Unknown("$ref beside other keywords")
            return self._ref(node["$ref"])
        for union in ("anyOf", "oneOf"):  # oneOf is read as anyOf, as xgrammar reads it
            if union in keys:
                branches = node[union]
                if keys != {union} or not isinstance(branches, list) or not branches:
                    raise Unknown(f"{union} beside other keywords")
                if all(self._is_leaf(branch) for branch in branches):
                    return self._json({"anyOf": branches}, scalar=True)
                return "(" + " | ".join(self._value(b) for b in branches) + ")"
        if self._is_leaf(node):
            return self._json(node, scalar=True)
        kind = node.get("type")
        if isinstance(kind, list) and len(kind) > 1:
            return self._types(node, kind, keys)
        if kind == "object" and keys <= _OBJECT_KEYS:
            return self._object(node)
        if kind == "array" and keys <= _ARRAY_KEYS:
            return self._array(node)
        raise Unknown(f"a schema with {sorted(keys)}")

    def _asserting(self, node: dict[str, Any]) -> set[str]:
        """The keywords of ``node`` that may assert something (not annotations, not ``x-``
        extensions; ``$id`` at the root only: one deeper would move what ``#/$defs/..``
        refers to)."""
        return {
            k
            for k in node
            if k not in _ANNOTATIONS
            and k not in _EDITOR_ANNOTATIONS
            and not k.startswith("x-")
            and not (k == "$id" and node is self.root)
        }

    def _types(self, node: dict[str, Any], kinds: list[Any], keys: set[str]) -> str:
        """A schema of several types: one branch per container type (with that type's
        keywords), one for the scalar types (with theirs)."""
        if not keys <= _OBJECT_KEYS | _ARRAY_KEYS | _LEAF_KEYS:
            raise Unknown(f"a schema with {sorted(keys)}")
        if not set(kinds) <= _SCALARS | {"object", "array"}:
            raise Unknown(f"the types {kinds}")
        branches = []
        for kind, own in (("object", _OBJECT_KEYS), ("array", _ARRAY_KEYS)):
            if kind in kinds:
                branches.append(self._value({k: node[k] for k in keys & own} | {"type": kind}))
        scalars = [k for k in kinds if k in _SCALARS]
        if scalars:
            leaf = {k: node[k] for k in keys & _LEAF_KEYS} | {"type": scalars}
            branches.append(self._json(leaf, scalar=True))
        return "(" + " | ".join(branches) + ")"

    def _is_leaf(self, node: Any) -> bool:
        """A schema of scalars only, that refers to nothing."""
        if not isinstance(node, dict):
            return False
        keys = self._asserting(node)
        if not keys or not keys <= _LEAF_KEYS:
            return False
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
        if kinds and not set(kinds) <= _SCALARS:
            return False
        values = node.get("enum", []) + ([node["const"]] if "const" in node else [])
        if not all(_is_scalar_value(v) for v in values):
            return False
        return bool(kinds) or "enum" in node or "const" in node

    def _json(self, node: dict[str, Any], *, scalar: bool) -> str:
        """A value llguidance's JSON compiler writes (``scalar``: it holds no whitespace)."""
        return "%json " + json.dumps(self.leaf(node, scalar), ensure_ascii=False)

    def _ref(self, ref: Any) -> str:
        if not isinstance(ref, str):
            raise Unknown("a $ref that is not a string")
        if ref in self._refs:
            return self._refs[ref]
        if ref == "#":
            target = self.root
        else:
            root = next((r for r in _REF_ROOTS if ref.startswith(r)), None)
            name = ref[len(root) :] if root else ""
            table = self.root.get(root[2:-1]) if root and isinstance(self.root, dict) else None
            if not isinstance(table, dict) or "/" in name or "~" in name or name not in table:
                raise Unknown(f"the $ref {ref!r}")
            target = table[name]
        rule = self._fresh()
        self._refs[ref] = rule  # before the body: a recursive reference finds it
        self.rules.append(f"{rule}: {self._value(target)}")
        return rule

    def _object(self, node: dict[str, Any]) -> str:
        properties = node.get("properties", {})
        required = node.get("required", [])
        if not isinstance(properties, dict) or not isinstance(required, list):
            raise Unknown("malformed properties")
        if not set(required) <= set(properties):
            raise Unknown("a required name that is no property")
        extra = node.get("additionalProperties", True)
        if extra is not False:
            if properties:
                raise Unknown("properties and other properties")
            # A map (or any object): any names, each value under the one schema.
            entry = f'%json {{"type": "string"}} ":" GAP? {self._value(extra)}'
            return self._rule(f'"{{" GAP? {entry} ("," GAP? {entry})* GAP? "}}" | "{{" GAP? "}}"')
        members = [
            (
                f'{quoted(json.dumps(name, ensure_ascii=False))} ":" GAP? {self._value(s)}',
                name in required,
            )
            for name, s in properties.items()
        ]
        tails: dict[int, str] = {}

        def tail(i: int) -> str:
            """Members i.. after at least one member (each with its comma), as a rule."""
            if i == len(members):
                return '""'
            if i not in tails:
                member, is_required = members[i]
                step = f'"," GAP? {member}'
                tails[i] = self._rule(f"{step if is_required else f'({step})?'} {tail(i + 1)}")
            return tails[i]

        firsts = []
        for i, (member, is_required) in enumerate(members):
            firsts.append(f"{member} {tail(i + 1)}")
            if is_required:
                break
        empty = all(not r for _, r in members)
        filled = f'"{{" GAP? ({" | ".join(firsts)}) GAP? "}}"' if firsts else ""
        bare = '"{" GAP? "}"'
        if filled and empty:
            return self._rule(f"{filled} | {bare}")
        return self._rule(filled or bare)

    def _array(self, node: dict[str, Any]) -> str:
        items = node.get("items", True)
        low, high = node.get("minItems", 0), node.get("maxItems")
        if not isinstance(low, int) or not (high is None or isinstance(high, int)):
            raise Unknown("item bounds that are not integers")
        bare = '"[" GAP? "]"'
        if items is False or high == 0:
            if low > 0:
                raise Unknown("an array that cannot be")
            return self._rule(bare)
        if high is not None and high < max(low, 1):
            raise Unknown("maxItems below minItems")
        item = self._value(items)
        more = f'("," GAP? {item})'
        low_more = max(low - 1, 0)
        if high is None:
            repeat = f"{more}{{{low_more},}}" if low_more else f"{more}*"
        elif high > 1:
            repeat = f"{more}{{{low_more},{high - 1}}}"
        else:
            repeat = ""
        filled = f'"[" GAP? {item} {repeat} GAP? "]"'
        return self._rule(f"{filled} | {bare}" if low == 0 else filled)


def bounded_lark(schema: Any, leaf: Any, prefix: str = "j") -> tuple[str, list[str]] | None:
    """``schema``'s root value as a Lark expression and the rules it needs, :data:`GAP_RULE`
    included, or None when its structure is not one this module writes. ``leaf(node, scalar)``
    is the schema ``%json`` reads for a value llguidance writes (``scalar``: no container)."""
    translator = BoundedJson(schema, prefix, leaf)
    expr = translator.translate()
    return None if expr is None else (expr, [*translator.rules, GAP_RULE])
