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
from collections.abc import Mapping
from typing import Any

from sdk._backend import GenerationRequest
from sdk._constraints import Grammar, Regex
from sdk._errors import UnsupportedConstraint
from sdk._local._constrain import GrammarSpec, check_options, spec_of
from sdk._local._deps import require
from sdk._local._layout import JsonFormat
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

# xgrammar reads oneOf as anyOf; llguidance refuses oneOf unless told to read it so.
_COMMON = {"coerce_one_of": True}

# Keywords whose value is one schema, a list of schemas, or a map of names to schemas.
_ONE = (
    *("additionalProperties", "items", "not", "if", "then", "else", "contains"),
    *("propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties"),
)
_LIST = ("anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def layout_options(json_format: JsonFormat) -> dict[str, Any]:
    """llguidance's JSON compile options (``x-guidance``) of ``json_format``."""
    return {**_LAYOUTS[json_format], **_COMMON}


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return "properties" in node or kind == "object" or (isinstance(kind, list) and "object" in kind)


def strict_schema(node: Any, *, in_all_of: bool = False) -> Any:
    """``node`` (a JSON Schema as parsed JSON) under xgrammar's ``strict_mode`` (see the module
    docstring); the input is not changed."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = dict(node)
    for key in _ONE:
        if key in out and isinstance(out[key], dict | list):
            out[key] = (
                [strict_schema(s) for s in out[key]]
                if isinstance(out[key], list)
                else strict_schema(out[key])
            )
    for key in _LIST:
        if isinstance(out.get(key), list):
            out[key] = [strict_schema(s) for s in out[key]]
    if isinstance(out.get("allOf"), list):
        out["allOf"] = [strict_schema(s, in_all_of=True) for s in out["allOf"]]
    for key in _MAP:
        if isinstance(out.get(key), dict):
            out[key] = {name: strict_schema(s) for name, s in out[key].items()}
    if not in_all_of:
        if (
            _is_object(out)
            and "additionalProperties" not in out
            and "unevaluatedProperties" not in out
        ):
            out["additionalProperties"] = False
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
    lark = structural_tag_lark(json.loads(spec.text), lambda s: laid_out_schema(s, json_format))
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
