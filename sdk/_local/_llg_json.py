"""A JSON Schema's structure as llguidance Lark, laid out exactly as the xgrammar path lays it
out, for the layouts llguidance's JSON options cannot say: ``bounded`` (whitespace after ``{``,
``[``, ``,`` and ``:`` and before ``}`` and ``]``, none before ``,`` or ``:``, each gap
``_layout.BOUNDED_SPACE``) and ``indented`` (``json.dumps(indent=2)``: each member or item on a
line of its own, indented by its depth; an empty object or array ``{}``/``[]``).

llguidance's own JSON compiler puts its whitespace pattern between any two JSON tokens, a colon
and a comma included, and knows no depth; so, for the schemas whose structure this module
knows, it writes the objects, arrays, ``anyOf``/``oneOf``, type lists and local ``$ref``s
itself, each gap where xgrammar puts it, and leaves every scalar value (strings with their
patterns, formats and lengths, numbers with their bounds, enums, consts) and every untyped
value to llguidance's compiler as ``%json {...}``: what a value may be is llguidance's, where
whitespace goes is the layout's. A schema it does not know (``allOf``, ``patternProperties``,
``prefixItems``, min/maxProperties, properties beside an additionalProperties schema, a
recursion under ``indented``...) gives None, and the caller compiles the schema natively.

The schema comes in already strict (``_llg_strict.strict_schema``): objects closed, types
inferred.
"""

from __future__ import annotations

import json
from typing import Any

from sdk._grammar_languages import quoted

__all__ = ["GAP_RULE", "BoundedJson", "bounded_lark", "laid_out_lark"]

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


_MAX_MEMBERS = 1000
"""How many object members (all objects together) a translation writes; a schema with more
falls back. Each optional member after the first is one rule in a chain that llguidance's Lark
compiler walks recursively: about 2,600 of them overflowed an 8 MiB thread stack (a segfault in
``validate_grammar``; 1,200 passed under 4 MiB), while its JSON compiler takes 10,000."""

_MAX_DEPTH = 12
"""How deep ``indented`` writes rules (each depth has its own); a recursive schema goes deeper,
and falls back."""


class _Bounded:
    """Where the ``bounded`` layout lets a gap (the same at every depth)."""

    depths = False

    def open(self, depth: int) -> str:
        return "GAP?"

    def close(self, depth: int) -> str:
        return "GAP?"

    def comma(self, depth: int) -> str:
        return '"," GAP?'

    colon = '":" GAP?'
    inside_empty = "GAP?"


class _Indented:
    """``json.dumps(indent=2)``'s whitespace, at each depth."""

    depths = True

    def open(self, depth: int) -> str:
        return quoted("\n" + "  " * (depth + 1))

    def close(self, depth: int) -> str:
        return quoted("\n" + "  " * depth)

    def comma(self, depth: int) -> str:
        return quoted(",\n" + "  " * (depth + 1))

    colon = quoted(": ")
    inside_empty = ""


class BoundedJson:
    """Translate one schema (and what its ``$ref``s reach) into Lark rules named
    ``{prefix}_...`` under ``layout`` (``"bounded"`` or ``"indented"``); ``leaf(node, scalar)``
    is the schema ``%json`` reads for a value llguidance writes (``scalar``: it holds no
    container)."""

    def __init__(self, root: Any, prefix: str, leaf: Any, layout: str = "bounded") -> None:
        self.root = root
        self.prefix = prefix
        self.leaf = leaf
        self.gaps = _Indented() if layout == "indented" else _Bounded()
        self.rules: list[str] = []
        self._refs: dict[tuple[str, int], str] = {}
        self._count = 0
        self._members = 0

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
            return self._value(self.root, 0)
        except (Unknown, RecursionError):
            # RecursionError: a backstop (no path here should recurse past _MAX_DEPTH); the
            # caller compiles such a schema natively, as any it does not know.
            return None

    def _value(self, node: Any, depth: int) -> str:
        if depth > _MAX_DEPTH:
            raise Unknown("too deep")
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
            return self._ref(node["$ref"], depth)
        for union in ("anyOf", "oneOf"):  # oneOf is read as anyOf, as xgrammar reads it
            if union in keys:
                branches = node[union]
                if keys != {union} or not isinstance(branches, list) or not branches:
                    raise Unknown(f"{union} beside other keywords")
                if all(self._is_leaf(branch) for branch in branches):
                    return self._json({"anyOf": branches}, scalar=True)
                return "(" + " | ".join(self._value(b, depth) for b in branches) + ")"
        if self._is_leaf(node):
            return self._json(node, scalar=True)
        kind = node.get("type")
        if isinstance(kind, list) and len(kind) > 1:
            return self._types(node, kind, keys, depth)
        if kind == "object" and keys <= _OBJECT_KEYS:
            return self._object(node, depth)
        if kind == "array" and keys <= _ARRAY_KEYS:
            return self._array(node, depth)
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

    def _types(self, node: dict[str, Any], kinds: list[Any], keys: set[str], depth: int) -> str:
        """A schema of several types: one branch per container type (with that type's
        keywords), one for the scalar types (with theirs, ``format`` included). An ``enum`` or
        ``const`` constrains every branch: such a node is llguidance's whole."""
        if not keys <= _OBJECT_KEYS | _ARRAY_KEYS | _LEAF_KEYS:
            raise Unknown(f"a schema with {sorted(keys)}")
        if not set(kinds) <= _SCALARS | {"object", "array"}:
            raise Unknown(f"the types {kinds}")
        if "enum" in keys or "const" in keys:
            whole = {k: node[k] for k in keys}
            if '"$ref"' in json.dumps(whole):
                raise Unknown("a $ref under an enum or const")  # %json would not reach $defs
            # Without whitespace: xgrammar writes an enum's object or array compactly too.
            return self._json(whole, scalar=True)
        branches = []
        for kind, own in (("object", _OBJECT_KEYS), ("array", _ARRAY_KEYS)):
            if kind in kinds:
                own_node = {k: node[k] for k in keys & own} | {"type": kind}
                branches.append(self._value(own_node, depth))
        scalars = [k for k in kinds if k in _SCALARS]
        if scalars:
            # From the node's own keys: _asserting() leaves format out (an annotation elsewhere).
            leaf = {k: node[k] for k in node if k in _LEAF_KEYS} | {"type": scalars}
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

    def _ref(self, ref: Any, depth: int) -> str:
        if not isinstance(ref, str):
            raise Unknown("a $ref that is not a string")
        key = (ref, depth if self.gaps.depths else 0)
        if key in self._refs:
            return self._refs[key]
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
        self._refs[key] = rule  # before the body: a recursive reference finds it
        self.rules.append(f"{rule}: {self._value(target, depth)}")
        return rule

    def _container(self, opener: str, closer: str, depth: int, inner: list[str]) -> str:
        """``opener``, one of the ``inner`` sequences (each starting with its first member or
        item, its commas its own), ``closer``; ``""`` in ``inner``: the empty one."""
        gaps = self.gaps
        filled = [i for i in inner if i]
        bare = " ".join(p for p in (quoted(opener), gaps.inside_empty, quoted(closer)) if p)
        options = []
        if filled:
            body = filled[0] if len(filled) == 1 else "(" + " | ".join(filled) + ")"
            options.append(
                f"{quoted(opener)} {gaps.open(depth)} {body} {gaps.close(depth)} {quoted(closer)}"
            )
        if "" in inner:
            options.append(bare)
        return self._rule(" | ".join(options))

    def _object(self, node: dict[str, Any], depth: int) -> str:
        gaps = self.gaps
        properties = node.get("properties", {})
        required = node.get("required", [])
        if not isinstance(properties, dict) or not isinstance(required, list):
            raise Unknown("malformed properties")
        if not set(required) <= set(properties):
            raise Unknown("a required name that is no property")
        self._members += len(properties)
        if self._members > _MAX_MEMBERS:
            raise Unknown(f"more than {_MAX_MEMBERS} object members")
        extra = node.get("additionalProperties", True)
        if extra is not False:
            if properties:
                raise Unknown("properties and other properties")
            if "additionalProperties" not in node and gaps.depths:
                return self._json({"type": "object"}, scalar=False)  # xgrammar: any object
            # A map: any names, each value under the one schema.
            value = self._value(extra, depth + 1)
            entry = f'%json {{"type": "string"}} {gaps.colon} {value}'
            return self._container("{", "}", depth, [f"{entry} ({gaps.comma(depth)} {entry})*", ""])
        members = [
            (
                f"{quoted(json.dumps(name, ensure_ascii=False))} {gaps.colon} "
                f"{self._value(s, depth + 1)}",
                name in required,
            )
            for name, s in properties.items()
        ]
        # tails[i]: members i.. after at least one member (each with its comma), as a rule;
        # built from the last one back, without recursion (an object may have thousands).
        tails = ['""'] * (len(members) + 1)
        for i in range(len(members) - 1, 0, -1):
            member, is_required = members[i]
            step = f"{gaps.comma(depth)} {member}"
            tails[i] = self._rule(f"{step if is_required else f'({step})?'} {tails[i + 1]}")
        firsts = []
        for i, (member, is_required) in enumerate(members):
            firsts.append(f"{member} {tails[i + 1]}")
            if is_required:
                break
        empty = [""] if all(not r for _, r in members) else []
        return self._container("{", "}", depth, [*firsts, *empty])

    def _array(self, node: dict[str, Any], depth: int) -> str:
        items = node.get("items", True)
        low, high = node.get("minItems", 0), node.get("maxItems")
        if not isinstance(low, int) or not (high is None or isinstance(high, int)):
            raise Unknown("item bounds that are not integers")
        if "items" not in node and self.gaps.depths:
            # xgrammar writes an array of anything on one line, as any value.
            return self._json({k: node[k] for k in node if k in _ARRAY_KEYS}, scalar=False)
        if items is False or high == 0:
            if low > 0:
                raise Unknown("an array that cannot be")
            return self._container("[", "]", depth, [""])
        if high is not None and high < max(low, 1):
            raise Unknown("maxItems below minItems")
        item = self._value(items, depth + 1)
        more = f"({self.gaps.comma(depth)} {item})"
        low_more = max(low - 1, 0)
        if high is None:
            repeat = f"{more}{{{low_more},}}" if low_more else f"{more}*"
        elif high > 1:
            repeat = f"{more}{{{low_more},{high - 1}}}"
        else:
            repeat = ""
        return self._container("[", "]", depth, [f"{item} {repeat}".strip(), *([""] * (low == 0))])


def laid_out_lark(
    schema: Any, layout: str, leaf: Any, prefix: str = "j"
) -> tuple[str, list[str]] | None:
    """``schema``'s root value under ``layout`` (``"bounded"`` or ``"indented"``) as a Lark
    expression and the rules it needs (:data:`GAP_RULE` included under ``bounded``), or None
    when its structure is not one this module writes. ``leaf(node, scalar)`` is the schema
    ``%json`` reads for a value llguidance writes (``scalar``: it holds no container)."""
    translator = BoundedJson(schema, prefix, leaf, layout)
    expr = translator.translate()
    if expr is None:
        return None
    return expr, [*translator.rules, *([GAP_RULE] if layout == "bounded" else [])]


def bounded_lark(schema: Any, leaf: Any, prefix: str = "j") -> tuple[str, list[str]] | None:
    """:func:`laid_out_lark` under ``bounded``."""
    return laid_out_lark(schema, "bounded", leaf, prefix)
