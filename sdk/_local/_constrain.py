"""What the local engine constrains a request with, and what it refuses.

Every request the engine constrains becomes one :class:`GrammarSpec`: a kind of xgrammar input
and its text, a function of the request's constraint alone (the compile cache is keyed by it;
``sdk._local._xgr_masks``):

==========================  ==================  ============================================
request                     spec kind           xgrammar
==========================  ==================  ============================================
JSON Schema (``schema``)    ``json_schema``     ``compile_json_schema`` (or the bounded
                                                layout's EBNF through ``compile_grammar``)
:class:`~sdk.Choice`        ``ebnf``            ``compile_grammar(choice_gbnf(c))``
:class:`~sdk.Regex`         ``regex``           ``compile_regex(pattern)``
:class:`~sdk.Grammar`       ``ebnf`` / ``lark`` ``compile_grammar(text)`` /
                                                ``compile_lark(text)``
:class:`~sdk.StructuralTag` ``structural_tag``  ``compile_structural_tag(
                                                xgrammar_structural_tag(t))``
``tools=`` (several)        ``structural_tag``  the tools' format (``_tools``)
``mode="none"``             none                nothing: the model writes freely
==========================  ==================  ============================================

A structural tag's JSON segments are laid out like any JSON the engine writes (the backend's
``json_format``): the compiler replaces each ``json_schema`` content with the EBNF of that
layout (``Grammars.compile_spec``).

:func:`check` is ``LocalBackend.check_request``: it builds the request's xgrammar grammar
(without a tokenizer: no model is loaded) and raises :class:`~sdk.UnsupportedConstraint`, before
any request, for what xgrammar cannot compile (a regex with lookaround, backreferences or
``\\p{..}`` classes; a grammar xgrammar's parser refuses), with xgrammar's reason. A JSON
Schema is never refused: it is masked never narrower than the caller's schema and widened where
xgrammar refuses a part of it (``_mask_schema``, ``_xgr_schema.xgr_plan``), found here. A Lark
grammar written for llama.cpp behind ``%llguidance {}`` is read without that line (it only
says which engine reads it); other llguidance directives are refused by xgrammar.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from sdk._backend import GenerationRequest
from sdk._constants import DEFAULT_MASK_COMPILE_BUDGET
from sdk._constraints import Choice, Grammar, Regex, StructuralTag, callable_tools
from sdk._errors import UnsupportedConstraint
from sdk._grammar_languages import (  # lark_text: a Lark grammar as xgrammar reads it too
    choice_gbnf,
    lark_text,
    xgrammar_structural_tag,
)
from sdk._local._tools import tools_structural_tag
from sdk._regex._ecma import portable

__all__ = [
    "GrammarSpec",
    "SpecKind",
    "check",
    "check_options",
    "describe",
    "lark_text",
    "spec_of",
]

SpecKind = Literal["json_schema", "ebnf", "regex", "lark", "structural_tag"]

# The place xgrammar's C++ errors start with: "[12:00:00] /project/cpp/file.cc:94: ".
_XGRAMMAR_WHERE = re.compile(r"^\[[0-9:]+\] \S+:\d+: ")


@dataclass(frozen=True, slots=True)
class GrammarSpec:
    """One xgrammar input: its ``kind`` and its ``text`` (a JSON Schema or a structural tag as
    JSON text, an EBNF or Lark grammar, a regex). Equal specs compile to the same grammar."""

    kind: SpecKind
    text: str


def _json(value: Any) -> str:
    # Key order is kept: it is the order the grammar writes an object's properties in.
    return json.dumps(value, separators=(",", ":"))


def spec_of(request: GenerationRequest) -> GrammarSpec | None:
    """The grammar ``request`` is decoded under; None for ``mode="none"`` (no grammar)."""
    if request.mode == "none":
        return None
    if request.tools:
        tools = callable_tools(request.tools, request.tool_choice)
        return GrammarSpec("structural_tag", _json(tools_structural_tag(tools)))
    constraint = request.constraint
    if constraint is None:
        return GrammarSpec("json_schema", _json(request.schema))
    if isinstance(constraint, Choice):
        return GrammarSpec("ebnf", choice_gbnf(constraint))
    if isinstance(constraint, Regex):
        return GrammarSpec("regex", portable(constraint.pattern))
    if isinstance(constraint, Grammar):
        if constraint.syntax == "lark":
            return GrammarSpec("lark", lark_text(constraint))
        return GrammarSpec("ebnf", constraint.text)
    if isinstance(constraint, StructuralTag):
        return GrammarSpec("structural_tag", _json(xgrammar_structural_tag(constraint)))
    raise UnsupportedConstraint(
        f"the local engine does not know the constraint {type(constraint).__name__}; it takes "
        "JSON Schema, Choice, Regex, Grammar, StructuralTag and tools"
    )


def describe(request: GenerationRequest) -> str:
    """What ``request`` is constrained by, for an error message ("the JSON Schema", "Regex(..)")."""
    if request.tools:
        return f"the tools' grammar ({', '.join(t.name for t in request.tools)})"
    if request.mode != "none" and request.constraint is None:
        return "the JSON Schema"
    constraint = request.constraint
    if isinstance(constraint, Regex):
        return f"Regex({constraint.pattern!r})"
    if isinstance(constraint, Grammar):
        return f"this Grammar ({constraint.syntax})"
    return f"this {type(constraint).__name__}"


def check_options(request: GenerationRequest) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` for what the local engine refuses whatever its
    grammar engine: tools with a constraint, tools outside ``mode="tool"``, per-request HTTP
    options, ``tool_choice`` "auto" or "none"."""
    if request.tools and request.constraint is not None:
        raise UnsupportedConstraint(
            "a request carries tools or a constraint, not both (each tool has its own schema)"
        )
    if request.tools and request.mode != "tool":
        raise UnsupportedConstraint(
            f"tools are decoded as tool calls: mode must be 'tool', not {request.mode!r}"
        )
    sent = [
        name
        for name, given in (
            ("model", request.model),
            ("timeout", request.timeout),
            ("extra_headers", request.extra_headers),
            ("extra_query", request.extra_query),
        )
        if given
    ]
    if sent:
        raise UnsupportedConstraint(
            f"the local engine runs the model it loaded, in process: {', '.join(sent)} "
            "(per-request HTTP options) would be ignored; give them to a server's client"
        )
    if request.tools and request.tool_choice in ("auto", "none"):
        raise UnsupportedConstraint(
            f"the local engine decodes tools as calls only: tool_choice={request.tool_choice!r} "
            "(a text answer) is not supported; use 'required' or a named tool, or a server"
        )


def check(request: GenerationRequest, budget: float | None = DEFAULT_MASK_COMPILE_BUDGET) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` when the local engine cannot constrain
    ``request`` (see the module docstring). A JSON Schema is widened here where xgrammar
    refuses it, never refused; its plan is waited for at most ``budget`` seconds (None: no
    limit; ``_mask_budget.planned``). Without xgrammar installed
    nothing is checked: the first generation raises :class:`~sdk.MissingDependencyError`."""
    check_options(request)
    spec = spec_of(request)
    if spec is None:
        return
    try:
        import xgrammar as xgr
    except ImportError:
        return
    if spec.kind == "json_schema":
        from sdk._local._mask_budget import build_budget, plan_wait, planned, remember_root
        from sdk._local._xgr_schema import xgr_plan

        # Widened where xgrammar refuses it (_mask_schema): never refused. The plan is waited
        # for at most ``budget``; past it, it goes on for the compile to join.
        text, inner = spec.text, build_budget(budget)
        remember_root(text, request.schema)  # a fallback needs not parse it again
        planned(("xgr", text, inner), lambda: xgr_plan(text, inner), plan_wait(text, budget))
        return
    try:
        if spec.kind == "ebnf":
            xgr.Grammar.from_ebnf(spec.text)
        elif spec.kind == "regex":
            xgr.Grammar.from_regex(spec.text)
        elif spec.kind == "lark":
            xgr.Grammar.from_lark(spec.text)
        else:
            xgr.Grammar.from_structural_tag(spec.text)
    except Exception as exc:  # xgrammar raises RuntimeError, ValueError and its own errors
        reason = _XGRAMMAR_WHERE.sub("", str(exc).strip())
        raise UnsupportedConstraint(
            f"the local engine (xgrammar) cannot compile {describe(request)}: {reason}"
        ) from exc
