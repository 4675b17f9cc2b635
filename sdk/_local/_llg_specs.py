"""What each :class:`~sdk._local._constrain.GrammarSpec` compiles to in llguidance, and the
llguidance twin of ``_constrain.check``. Needs no tokenizer and no torch.

==================  =====================================================================
spec kind           llguidance grammar
==================  =====================================================================
``json_schema``     ``grammar_from_json_schema(strict(schema), overrides=layout)``
``ebnf``            ``grammar_from_lark(gbnf_to_lark.any_to_lark(text))`` (a Choice too)
``regex``           ``grammar_from_regex(pattern)``
``lark``            ``grammar_from_lark(text)``
``structural_tag``  a Lark grammar built from xgrammar's structural-tag JSON
                    (:func:`sdk._local._llg_tags.structural_tag_lark`)
==================  =====================================================================

*strict* (:func:`strict_schema`) is xgrammar's ``strict_mode``: an object schema that says
nothing of ``additionalProperties`` (nor ``unevaluatedProperties``) gets
``additionalProperties: false``, an array with ``prefixItems`` and no ``items`` gets
``items: false`` (members of an ``allOf`` are left as they are: their intersection would
change). *layout* (:func:`layout_options`) is the backend's ``json_format`` in llguidance's
JSON options (see ``docs/local-engine.md`` for where they differ from xgrammar's).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sdk._backend import GenerationRequest
from sdk._constraints import Grammar, Regex
from sdk._errors import UnsupportedConstraint
from sdk._local._constrain import GrammarSpec, check_options, spec_of
from sdk._local._deps import require
from sdk._local._layout import JsonFormat
from sdk._local._llg_json import bounded_lark
from sdk._local._llg_tags import structural_tag_lark

__all__ = ["BOUNDED_GAP", "check_llg", "layout_options", "llg_grammar", "strict_schema"]

BOUNDED_GAP = "( |\\n\\n?[ \\t]{0,20})"
"""The ``bounded`` layout's gap as a regex (``_layout.BOUNDED_SPACE`` less its empty choice:
llguidance matches the whitespace pattern at most once per gap, or not at all)."""

_LAYOUTS: dict[str, dict[str, Any]] = {
    "bounded": {"whitespace_pattern": BOUNDED_GAP, "item_separator": ",", "key_separator": ":"},
    "spaced": {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "},
    "compact": {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"},
    "indented": {"whitespace_pattern": "\\n *", "item_separator": ",", "key_separator": ": "},
    "any": {"whitespace_pattern": "[ \\n\\r\\t]+", "item_separator": ",", "key_separator": ":"},
}
"""llguidance's JSON options (``x-guidance``) of each layout; separators are regexes."""

# xgrammar ignores the keywords it cannot enforce (uniqueItems, if/then, ...) and reads oneOf as
# anyOf; llguidance refuses both unless lenient. xgrammar takes any \\u escape in a string.
_COMMON = {"lenient": True, "json_allow_general_unicode_escapes": True}

# Keywords whose value is one schema, a list of schemas, or a map of names to schemas.
_ONE = (
    *("additionalProperties", "items", "not", "if", "then", "else", "contains"),
    *("propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties"),
)
_LIST = ("anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Of those, the ones applied to the same value as the schema that holds them.
_IN_PLACE = ("anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")


def layout_options(json_format: JsonFormat) -> dict[str, Any]:
    """llguidance's JSON compile options (``x-guidance``) of ``json_format``."""
    return {**_LAYOUTS[json_format], **_COMMON}


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


def laid_out_schema(schema: Any, json_format: JsonFormat) -> dict[str, Any]:
    """``schema`` strict, with the layout's options as its ``x-guidance`` (what a ``%json``
    segment of a Lark grammar reads)."""
    out = strict_schema(schema)
    if not isinstance(out, dict):  # true/false schemas
        out = {} if out else {"not": {}}
    return {**out, "x-guidance": layout_options(json_format)}


def _leaf(node: dict[str, Any], scalar: bool) -> dict[str, Any]:
    """A value the bounded layout's structure leaves to llguidance's JSON compiler: a scalar
    (no whitespace in it) or any JSON value (laid out as llguidance lays out ``bounded``)."""
    return {**node, "x-guidance": layout_options("compact" if scalar else "bounded")}


def json_segment(schema: Any, json_format: JsonFormat, prefix: str) -> tuple[str, list[str]]:
    """A JSON Schema value inside a Lark grammar: its expression and the rules it needs. Under
    ``bounded`` the structure is written as the xgrammar path lays it out where
    :mod:`sdk._local._llg_json` knows it; else ``%json`` with the layout's options."""
    if json_format == "bounded":
        written = bounded_lark(strict_schema(schema), _leaf, prefix)
        if written is not None:
            return written
    return "%json " + json.dumps(laid_out_schema(schema, json_format), ensure_ascii=False), []


def llg_grammar(spec: GrammarSpec, json_format: JsonFormat) -> str:
    """The llguidance grammar (what ``LLMatcher`` takes) of ``spec`` under ``json_format``;
    not validated (``LLMatcher.validate_grammar`` says what is wrong with it). Raises
    ValueError for a grammar llguidance's GBNF reader or the structural-tag translation
    refuses."""
    llg = require("llguidance")
    matcher = llg.LLMatcher
    if spec.kind == "json_schema":
        schema = strict_schema(json.loads(spec.text))
        if not isinstance(schema, dict):
            schema = {} if schema else {"not": {}}
        if json_format == "bounded":
            written = bounded_lark(schema, _leaf)
            if written is not None:
                expr, rules = written
                return str(matcher.grammar_from_lark("\n".join([f"start: {expr}", *rules])))
        return str(matcher.grammar_from_json_schema(schema, overrides=layout_options(json_format)))
    if spec.kind == "ebnf":
        from llguidance.gbnf_to_lark import any_to_lark

        try:
            lark = any_to_lark(spec.text)
        except Exception as exc:  # its parser raises its own error and assertion errors
            raise ValueError(f"llguidance cannot read the EBNF grammar: {exc}") from exc
        return str(matcher.grammar_from_lark(lark))
    if spec.kind == "regex":
        return str(matcher.grammar_from_regex(spec.text))
    if spec.kind == "lark":
        return str(matcher.grammar_from_lark(spec.text))
    lark = structural_tag_lark(
        json.loads(spec.text), lambda s, prefix: json_segment(s, json_format, prefix)
    )
    return lark if lark.startswith("{") else str(matcher.grammar_from_lark(lark))


def validation_error(grammar: str, tokenizer: Any = None) -> str:
    """llguidance's reason ``grammar`` cannot be used ("" when it can)."""
    llg = require("llguidance")
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar, tokenizer)
    return str(messages[0]).strip() if is_error and messages else ""


def _what(request: GenerationRequest, spec: GrammarSpec) -> str:
    if request.tools:
        return f"the tools' grammar ({', '.join(t.name for t in request.tools)})"
    if spec.kind == "json_schema":
        return "the JSON Schema"
    constraint = request.constraint
    if isinstance(constraint, Regex):
        return f"Regex({constraint.pattern!r})"
    if isinstance(constraint, Grammar):
        return f"this Grammar ({constraint.syntax})"
    return f"this {type(constraint).__name__}"


def check_llg(request: GenerationRequest, json_format: JsonFormat = "bounded") -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` when the local engine's llguidance masks cannot
    constrain ``request``, with llguidance's reason: the twin of ``_constrain.check`` for the
    llama.cpp runtime. The request's options are checked as ``_constrain.check`` checks them;
    then the request's grammar is built and validated (without a tokenizer: no model is
    loaded), JSON Schemas included (llguidance refuses some that xgrammar takes, and takes some
    it refuses). Without llguidance installed nothing is compiled: the first generation raises
    :class:`~sdk.MissingDependencyError`."""
    check_options(request)
    spec = spec_of(request)
    if spec is None:
        return
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return
    try:
        reason = validation_error(llg_grammar(spec, json_format))
    except ValueError as exc:
        reason = str(exc)
    if reason:
        raise UnsupportedConstraint(
            f"the local engine (llguidance) cannot compile {_what(request, spec)}: {reason}"
        )
